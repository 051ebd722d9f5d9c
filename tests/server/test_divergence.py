"""A served embedded log that diverges under a running `kraft-acl serve`: an old backup restored over the log
directory. serve stops following, says so (status, metrics, one log line) and keeps deciding with the last
state it applied; nothing written to the restored log afterwards is applied."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from kraftacl.harness.serve_process import kraft_acl_command
from tests.server.serve_process import ServeProcess, alice_reads, base_properties


def _add(log_dir: Path, topic: str) -> None:
    """One batch through the real CLI (the log's only writer): ALLOW User:alice READ on `topic`."""
    args = ["acls", "--log-dir", str(log_dir), "--add", "--allow-principal", "User:alice"]
    done = subprocess.run(
        [*kraft_acl_command(), *args, "--operation", "Read", "--topic", topic],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _wait(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _restore(backup: Path, log_dir: Path) -> None:
    """Put the backup's files back, each with an atomic rename; the durable end first (readers look there)."""
    names = sorted(p.name for p in backup.iterdir() if p.name != ".lock")
    for name in sorted(names, key=lambda n: n != "durable-end"):
        shutil.copy2(backup / name, log_dir / f"{name}.restore")
        os.replace(log_dir / f"{name}.restore", log_dir / name)


def test_a_diverged_log_stops_serve_following_and_is_reported(tmp_path: Path) -> None:
    log_dir, backup = tmp_path / "log", tmp_path / "backup"
    _add(log_dir, "kept")  # offset 0
    shutil.copytree(log_dir, backup)  # the backup an operator will restore: the log up to offset 1
    _add(log_dir, "orders")  # offset 1, applied by serve, then lost by the restore
    serve = ServeProcess(tmp_path / "serve", base_properties(tmp_path / "serve", log_dir, process_roles="broker"))
    with serve.start():
        status_url = serve.url("CLIENT") + "/v1/status"
        status = httpx.get(status_url).json()
        assert status["ready"] and status["following"] and status["diverged"] is None, status
        assert status["last_applied_offset"] == 1 and alice_reads(serve, "orders") == "ALLOWED"
        _restore(backup, log_dir)
        _wait(lambda: httpx.get(status_url).json()["diverged"] is not None, f"no divergence:\n{serve.output()}")
        _add(log_dir, "payments")  # a writer on the restored log: another batch at offset 1
        time.sleep(1.0)  # ten polls of the tailer (metadata.log.poll.interval.ms is 100)
        response = httpx.get(status_url)
        status = response.json()
        assert response.status_code == 503 and not status["ready"] and not status["following"], status
        assert "moved back to 1, below offset 2" in status["diverged"], status
        assert status["last_applied_offset"] == 1 and status["failures"] >= 1
        metrics = httpx.get(serve.url("CLIENT") + "/metrics").text
        assert "kraft_acl_log_diverged 1.0" in metrics and "kraft_acl_ready 0.0" in metrics
        assert "kraft_acl_log_unreachable 0.0" in metrics
        # the last consistent state keeps deciding; nothing of the restored log's new history is applied
        assert [alice_reads(serve, t) for t in ("kept", "orders", "payments")] == ["ALLOWED", "ALLOWED", "DENIED"]
        said = [line for line in serve.stdout + serve.stderr if "metadata log diverged" in line]
        assert len(said) == 1 and "stops following it at offset 2" in said[0], serve.output()
