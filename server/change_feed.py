"""What serve's change feed reports: this process's identity, the offset (and time) of the newest published state that
changed ACLs, and the long polls of `GET /v1/changes` waiting for a newer one (`kraftacl.server.changes` answers them).

`ChangeFeed.on_change` (a loader publisher through `OnPublish`) runs on the loader's thread (tailer, writer or
initial load) and hands each publish to the event loop with `call_soon_threadsafe`; everything else runs on the
event loop, so the fields have one writer and no lock.

    publishes:   offset 4 (ACLs)   offset 5 (no ACL change)   offset 9 (ACLs)
    acl_offset:  4                 4                          9
    a poll with after=4 waits; the publish of 9 answers it at once with acl_offset 9. A poll with after=12
    or instance=<another serve's> is answered at once: the caller knows a state this serve does not have.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from kraftacl.authorizer.state.loader import Update


class ChangeFeed:
    """This process's identity, the newest ACL-changing state's offset and time, and the polls waiting for a newer
    one."""

    def __init__(self) -> None:
        self.instance = uuid.uuid4().hex  # a new one per process: a restarted serve is another instance
        self.acl_offset = -1
        self.acl_applied_us = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: set[asyncio.Future[None]] = set()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand publishes to this loop from now on (before it, they are applied directly: nothing waits yet)."""
        self._loop = loop

    def on_change(self, update: Update) -> None:
        """The loader's publisher: a publish with net ACL changes (or a whole new state) moves the feed."""
        if update.removed is not None and update.added is not None and not update.removed and not update.added:
            return
        offset, now_us = update.image.provenance.last_offset, time.time_ns() // 1000
        loop = self._loop
        if loop is None:
            self._publish(offset, now_us)
        else:
            loop.call_soon_threadsafe(self._publish, offset, now_us)

    def _publish(self, offset: int, applied_us: int) -> None:
        if offset <= self.acl_offset:
            return
        self.acl_offset, self.acl_applied_us = offset, applied_us
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def wait(self, after: int, wait_s: float, instance: str = "") -> None:
        """Return once the ACL offset is not `after`, or after `wait_s` seconds, or at shutdown; at once when the
        caller knows another `instance` (its URL now reaches this serve) or an offset this serve never published
        (another serve's, or one past this one's: it must not wait a heartbeat to learn that it moved elsewhere)."""
        if self.acl_offset != after or wait_s <= 0 or (instance and instance != self.instance):
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await asyncio.wait_for(waiter, wait_s)
        except TimeoutError:
            pass
        finally:
            self._waiters.discard(waiter)

    def close(self) -> None:
        """Shutdown: answer every waiting poll now (each gets a heartbeat)."""
        self._wake()
