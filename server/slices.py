"""Heavy work on the event loop without making decisions wait: the work runs in slices of at most
`SLICE_S` of the loop's time, one heavy call's slice at a time (the `Lane`), and between two slices every
decision that arrived is answered.

Why slices on the loop rather than a worker thread: a thread holding the GIL in one long C call (msgspec
encoding 300k ACLs, a sort) makes the loop wait for the whole call, and even between calls it gets the GIL back
only after the switch interval (5 ms). A slice gives the loop back at a point the work chooses, so a broker's
decision waits at most one slice (BENCHMARKS.md, serve "noisy_neighbour").

Used only on the event loop thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from types import TracebackType
from typing import TypeVar

T = TypeVar("T")
SLICE_S = 0.0005  # one slice of heavy work; a decision arriving meanwhile waits at most this long for it


class Lane:
    """At most one heavy call's slice runs at a time; the others wait their turn (first come, first served)."""

    def __init__(self, slice_s: float = SLICE_S) -> None:
        self.slice_s = slice_s
        self._lock: asyncio.Lock | None = None

    @property
    def lock(self) -> asyncio.Lock:
        """The lock, made on first use (it belongs to the running loop)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def slicer(self) -> Slicer:
        """A context for one heavy call: `async with lane.slicer() as s: ... await s.pause() ...`."""
        return Slicer(self)


class Slicer:
    """Holds the lane while its work runs; `pause` gives the loop back once the slice is used up."""

    def __init__(self, lane: Lane) -> None:
        self.lane = lane
        self.started = 0.0
        self.slices = 0

    async def __aenter__(self) -> Slicer:
        await asyncio.sleep(0)  # a slice starts on a loop turn of its own (an uncontended lock does not yield)
        await self.lane.lock.acquire()
        self.started = time.perf_counter()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.lane.lock.release()

    def due(self) -> bool:
        """True when this slice is used up."""
        return time.perf_counter() - self.started >= self.lane.slice_s

    async def pause(self) -> None:
        """Give the loop back if the slice is used up (the lane too, so other heavy calls get their slices)."""
        if time.perf_counter() - self.started >= self.lane.slice_s:
            await self.yield_now()

    async def yield_now(self) -> None:
        """Give the loop and the lane back now, then take the lane again."""
        self.lane.lock.release()
        try:
            await asyncio.sleep(0)
        finally:
            await self.lane.lock.acquire()
        self.started = time.perf_counter()
        self.slices += 1

    async def each(self, items: Iterable[T], every: int = 64) -> AsyncIterator[T]:
        """`items`, pausing every `every` items when the slice is used up."""
        count = 0
        for item in items:
            yield item
            count += 1
            if count >= every:
                count = 0
                await self.pause()

    async def chunks(self, items: Iterable[T], size: int) -> AsyncIterator[list[T]]:
        """`items` in lists of `size`, with a pause before each list."""
        it = iter(items)
        while True:
            chunk = _take(it, size)
            if not chunk:
                return
            yield chunk
            await self.pause()


def _take(it: Iterator[T], size: int) -> list[T]:
    out: list[T] = []
    for item in it:
        out.append(item)
        if len(out) >= size:
            break
    return out
