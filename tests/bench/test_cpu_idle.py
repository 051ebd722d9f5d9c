"""`bench.timing.cpu_idle`: what the serve suite records about how this machine's idle CPUs wake."""

from __future__ import annotations

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
