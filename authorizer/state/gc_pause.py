"""`paused_gc()`: the cyclic garbage collector off while a bulk step (an import's read, records, index, a describe's
lists of every match) creates or holds millions of references, since each collection meanwhile would walk every
one of them (a young list of 300k ACLs costs a generation-0 pass 18 ms; a full pass over a fresh 200k-ACL import
100 ms), holding the GIL the event loop needs.

Process-wide (the collector is) and thread-safe: blocks on several threads (or several tasks of the event loop)
keep it off until the last one ends, and only then is it enabled again, if it was enabled when the first began.
A cycle made meanwhile is collected after, by the next collection, unless a block ends with `freeze=True` (bulk
data meant to stay, which no later collection should walk again: everything tracked so far is moved to the
permanent generation, and a cycle made before is then never collected).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0  # blocks running now
_was_enabled = False  # the collector's state when the first of them began


@contextmanager
def paused_gc(freeze: bool = False) -> Iterator[None]:
    """Disable the collector for the block (see the module docstring); with `freeze`, what was made and kept is
    frozen as the block ends without an exception, so the collection that follows does not walk it."""
    _begin()
    try:
        yield
    except BaseException:
        _end()  # nothing made in a failed block is meant to stay: nothing is frozen
        raise
    if freeze:
        gc.freeze()
    _end()


class GcPause:
    """A pause that outlives the block that began it (a describe hands it to its streamed answer, which ends it
    when the last piece is written or the client leaves); `end` is idempotent. Whoever begins one also arranges
    that it ends by a deadline whatever happens, so a slow reader cannot keep the collector off."""

    def __init__(self) -> None:
        _begin()
        self.held = True

    def end(self) -> None:
        """Let the collector run again (once the last pause ends)."""
        if self.held:
            self.held = False
            _end()


def _begin() -> None:
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1


def _end() -> None:
    global _holders
    with _lock:
        _holders -= 1
        if _holders == 0 and _was_enabled:
            gc.enable()
