"""Keeps a node caught up with its log after start-up, and keeps it serving when the log is unreachable.

A `Tailer` owns one background thread that calls `MetadataLoader.catch_up` every `interval_s`.
Readers of the authorizer are never blocked: a failed catch-up leaves the last published state in
place (KIP-801: always some batch boundary of the log), records the error and the lag, and retries.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from authorizer.loader import MetadataLoader
from metadata_log.errors import LogError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TailStatus:
    """What the tailer last saw: applied offset, the log's high-water mark, and the last error if any."""

    next_offset: int
    high_watermark: int | None
    last_error: str | None
    last_success_monotonic: float

    @property
    def lag(self) -> int | None:
        """Records the node is behind the log (None while the log is unreachable)."""
        return None if self.high_watermark is None else max(0, self.high_watermark - self.next_offset)


class Tailer:
    """Background catch-up loop; `status()` reports lag and errors, `stop()` ends it."""

    def __init__(self, loader: MetadataLoader, interval_s: float = 0.2) -> None:
        self.loader = loader
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._status = TailStatus(loader.next_offset, None, None, time.monotonic())

    def start(self) -> Tailer:
        """Start the loop thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kraft-acl-tailer", daemon=True)
            self._thread.start()
        return self

    def poll_once(self) -> TailStatus:
        """One catch-up attempt; errors are recorded, never raised (the node keeps serving)."""
        try:
            self.loader.catch_up()
            hwm = self.loader.backend.high_watermark()
            self._status = TailStatus(self.loader.next_offset, hwm, None, time.monotonic())
        except LogError as exc:
            if self._status.last_error is None:
                log.warning(
                    "metadata log unreachable, serving the state at offset %d: %s", self.loader.next_offset, exc
                )
            self._status = TailStatus(self.loader.next_offset, None, str(exc), self._status.last_success_monotonic)
        return self._status

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll_once()
            self._stop.wait(self.interval_s)

    def status(self) -> TailStatus:
        """The latest status (lag, error, last success)."""
        return self._status

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and wait for the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
