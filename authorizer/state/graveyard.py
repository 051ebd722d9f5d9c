"""Big object graphs that are about to be dropped (a replaced index, an import's records) are let go a small step at a
time on a background thread, so that no thread holds the GIL for the tens of milliseconds that freeing one takes.

CPython frees an object graph in one go when its last reference goes: the old index of 300k ACLs takes 28-31 ms,
an import's 200k records 26 ms, 200k (id, ACL) pairs 13 ms, and no other thread runs meanwhile (a serving node's
event loop, which answers brokers' decisions, waits for all of it). `bury(obj)` hands the graveyard one more
reference instead. Once every other holder has let go (the graveyard's is the only reference left), its thread takes
the graph apart depth first: an object nobody else references has its referents moved onto the graveyard's own stack
before it is freed, so each free releases that object alone, and big lists and dicts are emptied a slice at a time.
Objects still referenced elsewhere (shared ACLs, interned names) are only let go of, never entered.

Only for graphs of plain containers, msgspec Structs and immutable values, which is what images, indexes, records and
decoded request bodies are (a Struct's fields are read by name: a gc=False Struct hides them from the collector): a
graph whose objects have finalizers would run them on the graveyard's thread. An object still referenced elsewhere
after `PATIENCE_S` is simply let go (its last holder then frees it the usual way). Thread-safe.
"""

from __future__ import annotations

import gc
import logging
import queue
import sys
import threading
import time

from kraftacl.metadata_log.pace import breathe, pace_thread

log = logging.getLogger(__name__)

STEP = 512  # objects let go of per step (a few hundred microseconds at most)
SLICE = 2048  # items moved out of a big list, dict or set per step
PATIENCE_S = 60.0  # how long a buried object may still be referenced elsewhere
POLL_S = 0.02  # how often buried objects still referenced elsewhere are looked at again
_LEAVES = frozenset({str, bytes, int, float, bool, type(None)})
_OWNED = 2  # sys.getrefcount of an object held by one reference only (the call's argument is the other)


class Graveyard:
    """A background thread that frees buried object graphs in small steps."""

    def __init__(self, name: str = "kraft-acl-graveyard") -> None:
        self._name = name
        self._queue: queue.SimpleQueue[tuple[list[object], float]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.freed = 0  # objects taken apart so far (for tests and metrics)
        self.let_go = 0  # buried objects still referenced elsewhere after PATIENCE_S

    def bury(self, *graphs: object) -> None:
        """Take one more reference to each graph: it is freed here, in steps, once nobody else holds it."""
        for graph in graphs:
            if graph is not None and type(graph) not in _LEAVES:
                self._queue.put(([graph], time.monotonic() + PATIENCE_S))
        self._ensure_thread()

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def _run(self) -> None:
        pace_thread()  # it rests as a writer does: the event loop keeps the GIL often enough
        waiting: list[tuple[list[object], float]] = []
        while True:
            try:
                waiting.append(self._queue.get(timeout=POLL_S if waiting else None))
                while True:  # everything buried meanwhile, without waiting
                    waiting.append(self._queue.get_nowait())
            except queue.Empty:
                pass
            waiting = self._visit(waiting)

    def _visit(self, waiting: list[tuple[list[object], float]]) -> list[tuple[list[object], float]]:
        """Take apart what nobody else holds now, let go of what was held too long; what still waits (a method of
        its own: no loop variable of this thread keeps a graph it let go of)."""
        still: list[tuple[list[object], float]] = []
        for box, deadline in waiting:
            if sys.getrefcount(box[0]) == _OWNED:  # the box's reference and the call's: nobody else's
                try:
                    self.freed += self._take_apart(box)
                except Exception:  # never expected; what is left is freed the usual way
                    log.exception("taking a buried object graph apart failed")
                    box.clear()
            elif time.monotonic() > deadline:
                self.let_go += 1  # the last holder frees it
            else:
                still.append((box, deadline))
        return still

    def _take_apart(self, stack: list[object]) -> int:
        """Free every object of `stack` that nobody else holds, referents first onto the stack; how many."""
        refs, count, referents = sys.getrefcount, 0, gc.get_referents
        while stack:
            for _ in range(STEP):
                if not stack:
                    break
                obj = stack.pop()
                count += 1
                if type(obj) in _LEAVES or refs(obj) > _OWNED:  # a leaf, or shared: only let go of
                    continue
                if type(obj) is list and len(obj) > SLICE:
                    stack.append(obj)
                    stack.extend(obj[-SLICE:])
                    del obj[-SLICE:]
                elif type(obj) is dict and len(obj) > SLICE:
                    stack.append(obj)
                    pop = obj.popitem
                    for _ in range(SLICE):
                        stack.extend(pop())
                elif type(obj) is set and len(obj) > SLICE:
                    stack.append(obj)
                    stack.extend(obj.pop() for _ in range(SLICE))
                else:
                    fields = getattr(type(obj), "__struct_fields__", None)
                    if fields is None:
                        stack.extend(referents(obj))
                    else:  # a msgspec Struct (request bodies are gc=False: the collector does not see their fields)
                        stack.extend([getattr(obj, name) for name in fields])
            obj = None  # the last one goes here, not with the next step's first
            breathe()
        return count


GRAVEYARD = Graveyard()


def bury(*graphs: object) -> None:
    """Hand big object graphs that are about to be dropped to the process's graveyard (see the module's docstring)."""
    GRAVEYARD.bury(*graphs)
