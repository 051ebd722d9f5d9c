"""The change feed's state: which publishes move it (net ACL changes, whole new states), that a waiting poll is
woken by one from the loader's thread, and that shutdown answers every waiting poll."""

from __future__ import annotations

import asyncio
import threading

from kraftacl.authorizer.index.acl_index import AclIndex
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.image import AclsImage, Provenance
from kraftacl.authorizer.state.loader import Update
from kraftacl.server.change_feed import ChangeFeed


def image(offset: int) -> AclsImage:
    empty = AclsImage.empty()
    return AclsImage(empty.acls, Provenance(offset, 1, 0))


def update(before: int, after: int, removed: list[str] | None, added: list[tuple[str, StandardAcl]] | None) -> Update:
    """The loader's publish from offset `before` to `after` with these net changes (None: a whole new state)."""
    return Update(image(after), AclIndex.build([]), image(before), removed, added)


def test_only_publishes_that_change_acls_move_the_feed() -> None:
    feed = ChangeFeed()
    feed.on_change(update(-1, 3, [], []))  # a batch without ACL records
    assert feed.acl_offset == -1
    feed.on_change(update(3, 4, ["id-1"], []))
    assert feed.acl_offset == 4 and feed.acl_applied_us > 0
    feed.on_change(update(4, 9, None, None))  # a snapshot load, or a bulk rebuild
    assert feed.acl_offset == 9
    feed.on_change(update(9, 7, None, None))  # never backwards
    assert feed.acl_offset == 9


def test_a_waiting_poll_is_woken_from_the_loaders_thread_and_at_shutdown() -> None:
    async def scenario() -> tuple[int, bool]:
        feed = ChangeFeed()
        feed.bind(asyncio.get_running_loop())
        waiting = asyncio.ensure_future(feed.wait(-1, 60))
        await asyncio.sleep(0)
        loader = threading.Thread(target=feed.on_change, args=(update(-1, 5, ["x"], []),))
        loader.start()
        await asyncio.wait_for(waiting, 30)
        loader.join()
        woken = feed.acl_offset
        at_shutdown = asyncio.ensure_future(feed.wait(woken, 60))
        await asyncio.sleep(0)
        feed.close()
        await asyncio.wait_for(at_shutdown, 30)
        return woken, at_shutdown.done()

    assert asyncio.run(scenario()) == (5, True)


def test_a_poll_behind_the_feed_returns_at_once() -> None:
    async def scenario() -> None:
        feed = ChangeFeed()
        feed.on_change(update(-1, 2, ["x"], []))
        await asyncio.wait_for(feed.wait(1, 60), 5)
        await asyncio.wait_for(feed.wait(2, 0), 5)

    asyncio.run(scenario())
