"""No decision from a state the process slept through: after serve was frozen (SIGSTOP, a paused VM, a swap storm),
it decides again only once its tailer has polled the log since it woke.

A frozen serve's state is as old as the freeze, and the requests queued meanwhile are read the moment it wakes,
possibly before the tailer thread (woken too) has caught up: a grant revoked during the freeze would still be
answered ALLOWED. A tick on the event loop every 100 ms notices the freeze (a gap of a second or more, which a
loop that keeps deciding never shows); decisions are then answered 503 STALE_STATE (the broker plugin asks its
next serve) until a tailer poll that began after the wake-up has ended. A poll that fails (the log unreachable)
also ends the wait: serve then serves its last state, as it does through any log outage.

Runs on the event loop only (the tailer's status is an immutable value read from any thread).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from kraftacl.authorizer.state.tailer import TailStatus
from kraftacl.server.errors import ApiFailure

TICK_S = 0.1
FROZEN_AFTER_S = 1.0


class PolledStatus(Protocol):
    """What the guard reads of a tailer (`authorizer.state.tailer.Tailer`): its latest status."""

    def status(self) -> TailStatus: ...


class StaleState(ApiFailure):
    """503: this process was frozen and has not read its log since it woke."""

    status = 503
    code = "STALE_STATE"


class FreezeGuard:
    """Notices that the process was frozen and holds decisions until the tailer has polled since."""

    def __init__(self, tick_s: float = TICK_S, frozen_after_s: float = FROZEN_AFTER_S) -> None:
        self.tick_s = tick_s
        self.frozen_after_s = frozen_after_s
        self._last_tick = time.monotonic()
        self._woke: float | None = None  # when the last freeze was noticed (None: never)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Tick on `loop` from now on."""
        self._last_tick = time.monotonic()
        loop.call_later(self.tick_s, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self._notice(time.monotonic())
        loop.call_later(self.tick_s, self._tick, loop)

    def _notice(self, now: float) -> None:
        if now - self._last_tick >= self.frozen_after_s:
            self._woke = now
        self._last_tick = now

    def check(self, tailer: PolledStatus | None) -> None:
        """StaleState while a freeze was noticed and the tailer has not finished a poll since."""
        # `_notice` inline (every decision): a request read before the first tick after the wake-up
        now = time.monotonic()
        if now - self._last_tick >= self.frozen_after_s:
            self._woke = now
        self._last_tick = now
        woke = self._woke
        if woke is None or tailer is None:
            return
        if tailer.status().started_monotonic > woke:
            self._woke = None
            return
        raise StaleState(
            "this serve was frozen and has not read its metadata log since it woke; ask another serve, or again "
            "in a moment"
        )
