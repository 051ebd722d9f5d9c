"""Read-your-writes: a decision or describe that names `min_offset` (the offset an ACL write answered) is answered
from a state holding that offset, waiting (bounded by min.offset.wait.max.ms) while this serve catches up, else
503 OFFSET_NOT_REACHED naming how far it got.

A serve applies the log some milliseconds after the controller acknowledged a write (docs/deployment.md has the
measured propagation); a client that must see its own write on any serve passes the offset instead of sleeping.

Thread safety: `AppliedOffsets.on_change` is a loader change listener and runs on the loader's thread; it only
schedules a wake-up on the event loop. Waiters are registered and woken on the event loop thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from kraftacl.authorizer.decision.standard import StandardAuthorizer
from kraftacl.authorizer.state.image import AclsImage
from kraftacl.server.errors import ApiFailure
from kraftacl.server.http import Response


class OffsetNotReached(ApiFailure):
    """503: this serve had not applied `min_offset` within min.offset.wait.max.ms."""

    status = 503
    code = "OFFSET_NOT_REACHED"


class AppliedOffsets:
    """Futures on the event loop, each resolved once the authorizer's applied offset reaches its own."""

    def __init__(self, authorizer: StandardAuthorizer) -> None:
        self.authorizer = authorizer
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    def on_change(self, before: AclsImage, after: AclsImage, removed: object, added: object) -> None:
        """Loader change listener (any thread): wake the waiters on the loop."""
        loop = self._loop
        if loop is not None and self._waiters:
            loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        applied = self.authorizer.state()[1]
        keep = []
        for offset, future in self._waiters:
            if offset <= applied:
                if not future.done():
                    future.set_result(None)
            elif not future.done():
                keep.append((offset, future))
        self._waiters = keep

    async def wait(self, offset: int, timeout_s: float) -> bool:
        """True once the applied offset is at least `offset`, False after `timeout_s` (event loop thread only)."""
        if self.authorizer.state()[1] >= offset:
            return True
        self._loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append((offset, future))
        self._wake()  # a publish between the check above and the registration
        try:
            await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            return self.authorizer.state()[1] >= offset
        finally:
            if not future.done():
                future.cancel()
            self._waiters = [w for w in self._waiters if w[1] is not future]
        return True


def after_offset(
    waiters: AppliedOffsets, min_offset: int | None, wait_s: float, answer: Callable[[], Response]
) -> Response | Awaitable[Response]:
    """`answer()` now when no `min_offset` is asked or it is applied; else once it is (503 after `wait_s`)."""
    if min_offset is None or waiters.authorizer.state()[1] >= min_offset:
        return answer()
    return _later(waiters, min_offset, wait_s, answer)


async def _later(waiters: AppliedOffsets, min_offset: int, wait_s: float, answer: Callable[[], Response]) -> Response:
    started = time.monotonic()
    if not await waiters.wait(min_offset, wait_s):
        applied = waiters.authorizer.state()[1]
        raise OffsetNotReached(
            f"this serve has applied the metadata log up to offset {applied}, not yet min_offset {min_offset} "
            f"(waited {time.monotonic() - started:.1f} s, min.offset.wait.max.ms); ask again, or another serve",
            "$.min_offset",
        )
    return answer()
