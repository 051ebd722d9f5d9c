"""`paused_gc()`: the cyclic garbage collector off while a bulk step (an import's read, records, index)
creates millions of objects, since each full collection meanwhile would walk every one of them.

Process-wide (the collector is); nesting keeps it off until the outermost block ends. A cycle made
inside the block is collected after it, by the next collection.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the collector for the block, re-enabling it after only if it was enabled before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
