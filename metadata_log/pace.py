"""Bulk work on a background thread paced so that the event loop answering brokers' decisions keeps the GIL often
enough: a thread marked with `pace_thread` rests `REST_S` after every `WORK_S` of work (its CPU time), at the
`breathe()` calls that bulk loops make between two steps.

Why: cutting bulk work into short C calls (`authorizer.index.steps`) bounds how long the loop waits for the GIL
once, but not how often. While a writer imports 200k ACLs, every request the loop answers waits for the GIL
several times (reading, deciding, writing), each up to the step in progress; at a broker's pace of one request a
millisecond the loop falls behind and requests queue for tens of milliseconds. Resting hands the GIL to the loop
for whole milliseconds, in which it catches up; the import takes longer in wall time, by design.

A paced thread also runs `NICE` (5) steps below its process's priority (Linux, where a thread has its own nice
value), so that a thread answering decisions (serve's event loop, a broker's request thread on the same host)
waking on the CPU the bulk work occupies gets it at once instead of queueing behind it. On the 2-vCPU machine of
BENCHMARKS.md this brought a follower's broker p99 during a 200k-ACL import to 5 ms or less in 19 of 30 runs,
against 7 of 21 at 0. Not lower than 5: on a host saturated by other processes, a bulk thread preempted while
holding the GIL makes the event loop wait for it, and at nice 10 decisions waited about twice as long there as
at 0 (serve's `bulk.threads.nice` sets it: `lower_paced_threads_by`).

Generic: imports nothing of the project. A thread not marked never rests (`breathe` is then one attribute lookup).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

WORK_S = 0.002  # work between two rests
REST_S = 0.001  # each rest: the GIL is free for the event loop
NICE = 5  # the default steps of a paced thread's nice value above its process's (Linux)
_nice = NICE
_local = threading.local()
# CPU time of the calling thread: a thread that waited (idle, or for the GIL) has not worked, so the first step of a
# write after an idle hour does not rest at once.
_clock = time.thread_time


def pace_thread(work_s: float = WORK_S, rest_s: float = REST_S) -> None:
    """Mark the calling thread: from now on its `breathe()` calls rest `rest_s` after every `work_s` of work."""
    if getattr(_local, "pace", None) is None:
        _lower_priority()
    _local.pace = (work_s, rest_s)
    _local.since = _clock()


def lower_paced_threads_by(steps: int) -> None:
    """From now on a thread marked by `pace_thread` runs `steps` nice steps below its process (0: not lowered). Set
    once at start, before the paced threads start (a thread is lowered when it is first marked)."""
    global _nice
    _nice = steps


def _lower_priority() -> None:
    """The calling thread's nice value `_nice` above its process's (Linux only: elsewhere the value is per process)."""
    if sys.platform != "linux" or not _nice:
        return
    thread = threading.get_native_id()
    with contextlib.suppress(OSError):  # a sandbox that refuses it: the thread keeps its priority
        os.setpriority(os.PRIO_PROCESS, thread, min(os.getpriority(os.PRIO_PROCESS, os.getpid()) + _nice, 19))


def breathe() -> None:
    """Between two steps of bulk work: rest if this thread is paced and has worked its share since its last rest."""
    pace = getattr(_local, "pace", None)
    if pace is not None and _clock() - _local.since >= pace[0]:
        time.sleep(pace[1])
        _local.since = _clock()
