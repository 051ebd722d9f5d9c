"""`bench.timing.cpu_idle` and `cpu_steal_ms`: what the serve suite records about how this machine's CPUs wake and
how much CPU time the host took from it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraftacl.bench import timing


def test_reads_the_driver_and_the_halt_poll_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cpuidle").mkdir()
    (tmp_path / "cpuidle" / "current_driver").write_text("haltpoll\n")
    (tmp_path / "guest_halt_poll_ns").write_text("200000\n")
    monkeypatch.setattr(timing, "_CPUIDLE", str(tmp_path / "cpuidle"))
    monkeypatch.setattr(timing, "_HALTPOLL", str(tmp_path / "guest_halt_poll_ns"))
    assert timing.cpu_idle() == {"driver": "haltpoll", "guest_halt_poll_ns": 200000}


def test_absent_files_are_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "_CPUIDLE", str(tmp_path / "missing"))
    monkeypatch.setattr(timing, "_HALTPOLL", str(tmp_path / "missing" / "guest_halt_poll_ns"))
    assert timing.cpu_idle() == {"driver": None, "guest_halt_poll_ns": None}


def test_steal_is_the_cpu_lines_eighth_value_in_milliseconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  602466 0 140366 1356327 3420 0 16635 345 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    monkeypatch.setattr(timing, "_PROC_STAT", str(stat))
    assert timing.cpu_steal_ms() == 345 * 1000 // os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("text", ["", "cpu  1 2 3 4 5 6 7\n", "intr 1 2 3 4 5 6 7 8 9\n", "cpu  1 2 3 4 5 6 7 x 9\n"])
def test_steal_unreported_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    stat = tmp_path / "stat"
    stat.write_text(text)
    monkeypatch.setattr(timing, "_PROC_STAT", str(stat))
    assert timing.cpu_steal_ms() is None
    monkeypatch.setattr(timing, "_PROC_STAT", str(tmp_path / "missing"))
    assert timing.cpu_steal_ms() is None
