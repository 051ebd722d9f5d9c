"""`kraft-acl bench --quick`: the log and authorizer figures come out as one JSON object, from real runs.

No figure is checked against a time (performance is measured, never asserted); what is checked is
that every case ran on the data it claims: the replay reached the state the generated log implies,
the cold start loaded every ACL of its snapshot, each repeated case ran the stated number of
fresh processes, and, in CI, replay and the index build used the compiled loops.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kraftacl.bench.timing import compiled_loops, in_child
from kraftacl.cli.app import app
from kraftacl.harness.acl_data import record_batches
from kraftacl.harness.serve_process import kraft_acl_command


def decoy_checkout(directory: Path) -> Path:
    """A source tree whose packages fail on import, as a checkout at another commit (or uncompiled) would."""
    for package in ("shell", "authorizer", "metadata_log", "snapshots"):
        (directory / package).mkdir(parents=True)
        (directory / package / "__init__.py").write_text("raise ImportError('the decoy checkout was imported')\n")
    return directory


def quick_bench(suite: str, cwd: Path) -> dict[str, Any]:
    """The installed `kraft-acl bench --suite <suite> --quick` started inside `cwd`: its JSON output (stdout
    holds nothing else), after checking its progress lines on stderr."""
    out = subprocess.run(
        [*kraft_acl_command(), "bench", "--suite", suite, "--quick"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=decoy_checkout(cwd),
    )
    assert out.returncode == 0, out.stderr
    progress = out.stderr.splitlines()
    assert len(progress) >= 3 and all(re.match(r"kraft-acl bench: +\d+\.\ds ", line) for line in progress), out.stderr
    assert progress[-1].endswith(" done") and any("(new process)" in line for line in progress)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_log_suite_quick_reports_every_case(tmp_path: Path) -> None:
    result = quick_bench("log", tmp_path)
    assert result["suite"] == "log" and result["records"] == 100_000
    assert result["machine"]["cpus"] >= 1 and result["cpu_probe_us"] > 0
    if os.environ.get("CI") == "true":
        assert result["decoder"] == "native"
    live: set[str] = set()
    for batch in record_batches(100_000, removes=0.2):  # the suite's own generator and seed: the expected state
        for record in batch:
            if hasattr(record, "resource_type"):
                live.add(record.id)
            else:
                live.remove(record.id)
    replay = result["file"]["replay_1m"]
    assert replay["records"] == 100_000 and replay["acls"] == len(live)
    assert len(replay["runs_seconds"]) == 3 and replay["runs_seconds"] == sorted(replay["runs_seconds"])
    assert replay["seconds"] == replay["runs_seconds"][1] > 0
    # each run is also scaled by the probe read just before it (24 µs: the targets' reference machine);
    # recomputed here from the rounded figures, hence the tolerance
    scaled = replay["records"] * replay["probe_us"] / (replay["seconds"] * 24)
    assert replay["probe_us"] > 0 and abs(replay["records_per_s_at_reference"] - scaled) <= 0.05 * scaled
    assert replay["median_records_per_s_at_reference"] > 0
    cold = result["file"]["cold_start_snapshot_1m"]
    assert cold["acls"] == 100_000 and cold["snapshot"].endswith("00000000000000100000-0000000001.checkpoint")
    assert len(cold["runs_seconds_to_ready"]) == 3 and cold["seconds_to_ready"] == cold["runs_seconds_to_ready"][1]
    assert cold["peak_rss_mb"] >= cold["steady_rss_mb"] > 0
    rounding = 0.01 + 0.006 * 24 / cold["probe_us"]
    assert abs(cold["seconds_at_reference"] - cold["seconds_to_ready"] * 24 / cold["probe_us"]) <= rounding
    assert cold["median_seconds_at_reference"] > 0
    assert result["file"]["append_fsync"]["appends"] == 300


def test_authorizer_suite_quick_reports_every_case(tmp_path: Path) -> None:
    result = quick_bench("authorizer", tmp_path)
    assert result["suite"] == "authorizer" and result["cpu_probe_us"] > 0
    if os.environ.get("CI") == "true":
        assert result["bulk_rows"] == "native"
    latency = result["authorize_100k"]
    assert latency["acls"] == latency["samples"] == 10_000
    assert 0 < latency["p50_us"] <= latency["p99_us"] <= latency["p999_us"]
    assert result["jmh_test_authorizer_us"]["1000_acls"] > 1000 and result["jmh_test_authorizer_us"]["5000"] > 0
    # the index build ran in its own process on the stated number of ACLs, and its memory grew
    assert result["acls"] == 100_000 and result["index_build_1m_s"] > 0 and result["bytes_per_acl_1m"] > 0


def test_a_child_imports_what_its_parent_imported_wherever_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(decoy_checkout(tmp_path))  # `python -c` would put this directory first on sys.path
    assert in_child("authorizer_suite", "_index_build_child(10)")["acls"] == 10


def test_a_child_on_other_loops_than_its_parent_is_refused() -> None:
    assert in_child("authorizer_suite", "_index_build_child(10)")["acls"] == 10
    stale = {**compiled_loops(), "bulk_rows": "stale"}  # as if a compiled source had changed since the parent started
    with pytest.raises(RuntimeError, match=r"_index_build_child\(10\) failed .*used .*, not .*'stale'"):
        in_child("authorizer_suite", "_index_build_child(10)", loops=stale)


def test_a_failed_child_is_one_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(quick: bool = False) -> dict[str, Any]:
        return in_child("authorizer_suite", "_no_such_case()")

    monkeypatch.setattr("kraftacl.bench.authorizer_suite.run", failing)
    result = CliRunner().invoke(app, ["bench", "--suite", "authorizer"])
    assert result.exit_code == 1 and result.stdout == ""
    [error] = [line for line in result.stderr.splitlines() if not line.startswith("kraft-acl bench:")]
    assert error.startswith("kraft-acl: error: bench child authorizer_suite._no_such_case() failed (exit 1): ")
    assert "AttributeError" in error
