"""A paced thread rests after every `work_s` of work at its `breathe()` calls; an unpaced thread never rests."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from kraftacl.metadata_log import pace


def test_an_unpaced_thread_never_rests(monkeypatch: pytest.MonkeyPatch) -> None:
    rests: list[float] = []
    monkeypatch.setattr(time, "sleep", rests.append)
    result: list[int] = []

    def work() -> None:
        for _ in range(1000):
            pace.breathe()
        result.append(1)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert result == [1] and rests == []


def test_a_paced_thread_rests_once_it_has_worked_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    rests: list[float] = []
    monkeypatch.setattr(pace, "_clock", lambda: now[0])
    monkeypatch.setattr(time, "sleep", rests.append)
    seen: list[list[float]] = []

    def work() -> None:
        pace.pace_thread(work_s=0.002, rest_s=0.001)
        now[0] += 0.001
        pace.breathe()  # 1 ms of work: no rest yet
        seen.append(list(rests))
        now[0] += 0.0015
        pace.breathe()  # 2.5 ms: rests
        seen.append(list(rests))
        pace.breathe()  # just rested: no rest
        seen.append(list(rests))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == [[], [0.001], [0.001]]


def test_pacing_is_per_thread() -> None:
    flags: list[bool] = []

    def paced() -> None:
        pace.pace_thread(work_s=0.0, rest_s=0.0)  # this thread is paced ...
        other = threading.Thread(target=lambda: flags.append(getattr(pace._local, "pace", None) is None))
        other.start()
        other.join()
        pace.breathe()  # rests rest_s (0) and returns
        flags.append(pace._local.since > 0)

    thread = threading.Thread(target=paced)
    thread.start()
    thread.join()
    assert flags == [True, True]  # ... another is not


@pytest.mark.skipif(sys.platform != "linux", reason="a thread has its own nice value on Linux only")
def test_a_paced_thread_yields_the_cpu_to_the_others_of_its_process() -> None:
    process = os.getpriority(os.PRIO_PROCESS, os.getpid())
    seen: dict[str, int] = {}

    def paced() -> None:
        me = threading.get_native_id()
        pace.pace_thread()
        seen["paced"] = os.getpriority(os.PRIO_PROCESS, me)
        pace.pace_thread(work_s=0.01)  # marked again: not lowered twice
        seen["again"] = os.getpriority(os.PRIO_PROCESS, me)

    def unpaced() -> None:
        seen["unpaced"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    for target in (paced, unpaced):
        thread = threading.Thread(target=target)
        thread.start()
        thread.join()
    expected = min(process + pace.NICE, 19)
    assert seen == {"paced": expected, "again": expected, "unpaced": process}
    assert os.getpriority(os.PRIO_PROCESS, os.getpid()) == process  # the process (its main thread) is untouched


@pytest.mark.skipif(sys.platform != "linux", reason="a thread has its own nice value on Linux only")
def test_paced_threads_are_lowered_by_the_steps_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    process = os.getpriority(os.PRIO_PROCESS, os.getpid())
    seen: list[int] = []

    def paced() -> None:
        pace.pace_thread()
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    for steps in (0, 2):
        monkeypatch.setattr(pace, "_nice", pace.NICE)
        pace.lower_paced_threads_by(steps)
        thread = threading.Thread(target=paced)
        thread.start()
        thread.join()
    assert seen == [process, min(process + 2, 19)]
