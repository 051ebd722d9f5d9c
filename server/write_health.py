"""Whether this serve's controller can write its metadata log, honestly reported, and its recovery without a
restart: after a failed append (ENOSPC, EIO) `/v1/status` and the metrics say `writable: false` with the error
and since when; the embedded log is reopened (read again up to its durable end, the failed append's leftovers cut)
with a doubling delay up to 5 s, and writes resume once that succeeds.

`WriteHealth` is read and written on the event loop thread (a scrape on another thread reads plain values);
the reopen itself runs on the writer thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

log = logging.getLogger("kraft_acl.serve")
FIRST_RETRY_S = 0.5
MAX_RETRY_S = 5.0


@dataclass
class WriteHealth:
    """The writer's state: writable, the last error, since when (epoch seconds) and failed attempts since."""

    writable: bool = True
    error: str | None = None
    since: float | None = None
    failures: int = 0

    def failed(self, error: str) -> None:
        """A write (or a reopen) failed."""
        if self.writable:
            self.since = time.time()
            log.error("the metadata log cannot be written: %s; writes answer 503 until it recovers", error)
        self.writable, self.error = False, error
        self.failures += 1

    def recovered(self) -> None:
        """The log takes writes again."""
        if not self.writable:
            log.warning("the metadata log takes writes again (it failed since %s)", time.ctime(self.since or 0))
        self.writable, self.error, self.since, self.failures = True, None, None, 0


class WriteRecovery:
    """Retries `attempt` (reopen the log, then catch up) on the writer thread until it succeeds."""

    def __init__(self, health: WriteHealth, attempt: Callable[[], None], writer: Executor) -> None:
        self.health = health
        self.attempt = attempt
        self.writer = writer
        self.delay = FIRST_RETRY_S
        self._scheduled: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """A write just failed: schedule an attempt unless one is due."""
        if self._scheduled is None:
            loop = asyncio.get_running_loop()
            self._scheduled = loop.call_later(self.delay, lambda: asyncio.ensure_future(self._try()))

    async def _try(self) -> None:
        self._scheduled = None
        try:
            await asyncio.get_running_loop().run_in_executor(self.writer, self.attempt)
        except Exception as exc:  # the cause is still there: report it and try again later
            self.health.failed(str(exc))
            self.delay = min(self.delay * 2, MAX_RETRY_S)
            self.start()
            return
        self.delay = FIRST_RETRY_S
        self.health.recovered()

    def stop(self) -> None:
        """Shutdown: no more attempts."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
