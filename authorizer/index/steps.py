"""Passes over bulk data (hundreds of thousands of ACLs, ids, rows) a step of C work at a time.

One C call over a whole image (`list(...)`, `dict(...)`, `list(zip(...))`) holds the GIL from start to end: a serving
node's event loop, which answers brokers' decisions, then waits for all of it (tens of milliseconds at 500k items).
Cut into steps of STEP items, the thread doing it returns to the interpreter between two steps, where the loop takes
the GIL back within the switch interval, and a paced thread rests now and then (`metadata_log.pace`). Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

from kraftacl.metadata_log.pace import breathe

T = TypeVar("T")
STEP = 8192  # items per C call (about a millisecond on the machine of BENCHMARKS.md)


def chunks(items: Iterable[T], step: int = STEP) -> Iterator[list[T]]:
    """`items` in lists of `step` (the last one shorter), each made by one C call."""
    it = iter(items)
    while chunk := list(islice(it, step)):
        yield chunk
        breathe()  # a paced thread rests here (`metadata_log.pace`)


def listed(items: Iterable[T], step: int = STEP) -> list[T]:
    """`list(items)`, `step` items per C call."""
    out: list[T] = []
    for chunk in chunks(items, step):
        out += chunk
    return out
