"""`kraft-acl audit` as a user runs it: the real command, its driver process, local mode, its files and errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.pipeline.logs import random_log

pytestmark = pytest.mark.spark


def audit(kraft_acl: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*kraft_acl, "audit", *args], capture_output=True, text=True, timeout=600, check=False)


def test_fold_writes_a_snapshot_that_verifies_and_refuses_an_offset_inside_a_batch(
    kraft_acl: list[str], spark: object, tmp_path: Path
) -> None:
    generated = random_log(tmp_path / "meta", seed=61, batches=20)
    offset = generated.boundaries()[10]
    out = tmp_path / "state.checkpoint"
    done = audit(
        kraft_acl,
        "fold",
        "--log-dir",
        str(generated.directory),
        "--to-offset",
        str(offset),
        "--out",
        str(out),
        "-o",
        "json",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["end_offset"] == offset and result["snapshot"] == str(out)
    verified = subprocess.run([*kraft_acl, "snapshot", "verify", str(out)], capture_output=True, text=True, check=False)
    assert verified.stdout.strip() == f"OK: {result['acls']} records (end offset {offset}, epoch {result['epoch']})"
    log_dir = str(generated.directory)  # the log takes it: its identity, a batch boundary, that batch's epoch
    verified = subprocess.run(
        [*kraft_acl, "snapshot", "verify", str(out), "--log-dir", log_dir], capture_output=True, text=True, check=False
    )
    assert verified.returncode == 0 and verified.stdout.strip().endswith(f"usable on the log in {log_dir}"), verified

    base, _, _, records = next(b for b in generated.batches if len(b[3]) > 1)
    inside = tmp_path / "inside.checkpoint"
    refused = audit(
        kraft_acl, "fold", "--log-dir", str(generated.directory), "--to-offset", str(base + 1), "--out", str(inside)
    )
    assert refused.returncode == 2
    errors = [line for line in refused.stderr.splitlines() if line.startswith("kraft-acl:")]
    assert errors == [
        f"kraft-acl: error: --to-offset {base + 1} is inside the batch at offsets {base}..{base + len(records) - 1}: "
        f"its records apply together, so no state exists between them; use {base} or {base + len(records)}"
    ]
    assert "Traceback" not in refused.stderr and not inside.exists()


def test_bad_options_fail_in_one_line_before_spark_starts(kraft_acl: list[str], tmp_path: Path) -> None:
    both = audit(kraft_acl, "fold", "--log-dir", str(tmp_path), "--bootstrap-server", "127.0.0.1:1", "--out", "x")
    assert (both.returncode, both.stderr.strip()) == (
        2,
        "kraft-acl: error: give exactly one of --log-dir DIR (embedded log) and --bootstrap-server HOST:PORT (Kafka)",
    )
    missing = audit(kraft_acl, "permissions", "--log-dir", str(tmp_path))
    assert missing.returncode == 2
    assert (
        missing.stderr.strip()
        == "kraft-acl: error: kraft-acl audit permissions: the following arguments are required: --out"
    )
    bad_time = audit(kraft_acl, "changes", "--log-dir", str(tmp_path), "--from-time", "yesterday")
    assert (
        bad_time.stderr.strip()
        == "kraft-acl: error: --from-time 'yesterday' is not an ISO-8601 time or epoch milliseconds"
    )
    helped = audit(kraft_acl, "fold", "--help")
    assert helped.returncode == 0 and "--to-offset N" in helped.stdout


def test_spark_stays_quiet_and_the_jobs_progress_stays(kraft_acl: list[str], spark: object, tmp_path: Path) -> None:
    """A small job prints its result on stdout and, on stderr, nothing without --progress; with it, only its own
    progress lines and Spark's progress bar: no JVM warning, no Spark log line, no "Setting default log level"."""
    generated = random_log(tmp_path / "meta", seed=7, batches=8)
    meta = str(generated.directory)
    quiet = audit(kraft_acl, "changes", "--log-dir", meta, "--from-offset", "0", "--no-progress")
    assert quiet.returncode == 0 and quiet.stdout.startswith("Offsets 0 -> "), quiet.stderr
    assert quiet.stderr == ""
    shown = audit(kraft_acl, "changes", "--log-dir", meta, "--from-offset", "0", "--progress")
    assert shown.returncode == 0, shown.stderr
    lines = [line.strip() for line in shown.stderr.replace("\r", "\n").splitlines() if line.strip()]
    own = [line for line in lines if line.startswith("kraft-acl audit changes: ")]
    assert own[0].startswith("kraft-acl audit changes: starting Spark") and "reading the log" in " ".join(own)
    assert own[-1] == "kraft-acl audit changes: Spark stopped"
    others = [line for line in lines if line not in own and not line.startswith("[Stage ")]
    assert others == [], others
