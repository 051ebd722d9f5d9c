"""Bulk work on a background thread paced so that the event loop answering brokers' decisions keeps the GIL often
enough: a thread marked with `pace_thread` rests `REST_S` after every `WORK_S` of work (its CPU time), at the
`breathe()` calls that bulk loops make between two steps.

Why: cutting bulk work into short C calls (`authorizer.index.steps`) bounds how long the loop waits for the GIL
once, but not how often. While a writer imports 200k ACLs, every request the loop answers waits for the GIL
several times (reading, deciding, writing), each up to the step in progress; at a broker's pace of one request a
millisecond the loop falls behind and requests queue for tens of milliseconds. Resting hands the GIL to the loop
for whole milliseconds, in which it catches up; the import takes longer in wall time, by design.

Generic: imports nothing of the project. A thread not marked never rests (`breathe` is then one attribute lookup).
"""

from __future__ import annotations

import threading
import time

WORK_S = 0.002  # work between two rests
REST_S = 0.001  # each rest: the GIL is free for the event loop
_local = threading.local()
# CPU time of the calling thread: a thread that waited (idle, or for the GIL) has not worked, so the first step of a
# write after an idle hour does not rest at once.
_clock = time.thread_time


def pace_thread(work_s: float = WORK_S, rest_s: float = REST_S) -> None:
    """Mark the calling thread: from now on its `breathe()` calls rest `rest_s` after every `work_s` of work."""
    _local.pace = (work_s, rest_s)
    _local.since = _clock()


def breathe() -> None:
    """Between two steps of bulk work: rest if this thread is paced and has worked its share since its last rest."""
    pace = getattr(_local, "pace", None)
    if pace is not None and _clock() - _local.since >= pace[0]:
        time.sleep(pace[1])
        _local.since = _clock()
