"""Give the heap memory a bulk load freed back to the operating system (glibc's `malloc_trim`).

Process-wide and thread-safe (glibc locks its arenas); a no-op where the C library has no
`malloc_trim` (musl, macOS).

A bulk load frees a lot of C-heap memory: the old tables of every big dict that grew, the decoded
snapshot columns, the index a full rebuild replaced. glibc keeps most of it mapped for reuse, so
without a trim a node cold-started from a 1M-ACL snapshot holds about 70 MB it no longer uses.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from functools import lru_cache


@lru_cache(maxsize=1)
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (AttributeError, OSError):
        return None
    return trim


def release_free_memory() -> bool:
    """Return the C heap's free pages to the OS; True if anything was released (a few ms at 1M ACLs)."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False
