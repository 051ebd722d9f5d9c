"""A paced thread rests after every `work_s` of work at its `breathe()` calls; an unpaced thread never rests."""

from __future__ import annotations

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
    pace.pace_thread(work_s=0.0, rest_s=0.0)  # this thread (a test's) is paced ...
    try:
        flags: list[bool] = []
        thread = threading.Thread(target=lambda: flags.append(getattr(pace._local, "pace", None) is None))
        thread.start()
        thread.join()
        assert flags == [True]  # ... another is not
        pace.breathe()  # rests rest_s (0) and returns
        assert pace._local.since > 0
    finally:
        del pace._local.pace
