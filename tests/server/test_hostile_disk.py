"""Adversarial, class 6 (honest write path), on a real full disk: a 4 MiB tmpfs mounted for the test (root only;
with CI=true the test runs, it never skips there). After ENOSPC `/v1/status` and the metrics say the writer is
broken (`writable: false`, the error, since when), writes answer 503 and change nothing, decisions go on; once
space is back the controller recovers by itself (reopens the log, checks its durable end) without a restart; a
restart on a still-full disk is one clear line."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftacl.harness.serve_process import kraft_acl_command
from tests.server.serve_process import ADMIN_TOKEN, BROKER_TOKEN, ServeProcess, base_properties


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted after the test."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount a tmpfs (root is needed): {mounted.stderr.decode().strip()}")
        pytest.skip("cannot mount a tmpfs here (root is needed); CI runs this test")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _acl(n: int) -> dict[str, str]:
    return {
        "resource_type": "TOPIC",
        "resource_name": f"t{n}-" + "x" * 20_000,  # big records fill the disk quickly
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }


def _fill(disk: Path, leave: int) -> Path:
    """A file that leaves about `leave` bytes free."""
    filler = disk / "filler"
    stats = os.statvfs(disk)
    free = stats.f_bavail * stats.f_frsize
    with open(filler, "wb") as fh:
        fh.write(b"\0" * max(free - leave, 0))
    return filler


def test_enospc_is_reported_and_the_controller_recovers_by_itself(small_disk: Path, tmp_path: Path) -> None:
    props = base_properties(tmp_path / "serve", small_disk / "log", metadata_log_snapshot_max_records="1000000")
    with ServeProcess(tmp_path / "serve", props).start() as serve, serve.client(token=ADMIN_TOKEN) as admin:
        filler = _fill(small_disk, 150_000)
        written, refused = [], None
        for n in range(100):
            answer = admin.post("/v1/acls/create", json={"acls": [_acl(n)]})
            if answer.status_code != 200:
                refused = (n, answer)
                break
            written.append(n)
        assert refused is not None and refused[1].status_code == 503, "the disk never filled"
        assert refused[1].json()["error"]["code"] == "LOG_UNAVAILABLE"
        status = admin.get("/v1/status").json()
        assert status["writable"] is False and "No space left on device" in status["write_error"]
        assert status["write_failing_since"] > 0
        metrics = admin.get("/metrics").text
        assert "kraft_acl_log_writable 0.0" in metrics
        again = admin.post("/v1/acls/create", json={"acls": [_acl(999)]})
        assert again.status_code == 503 and "since" in again.json()["error"]["message"]
        with serve.client(token=BROKER_TOKEN) as broker:  # decisions go on from the last state
            decision = broker.post(
                "/v1/authorize",
                json={
                    "principal": "User:alice",
                    "client_address": "10.0.0.1",
                    "actions": [
                        {"operation": "READ", "resource_type": "TOPIC", "resource_name": _acl(0)["resource_name"]}
                    ],
                },
            )
            assert decision.status_code == 200 and decision.json()["results"] == ["ALLOWED"]
        filler.unlink()  # the operator frees space: no restart
        deadline = time.monotonic() + 30
        while admin.get("/v1/status").json()["writable"] is not True:
            assert time.monotonic() < deadline, admin.get("/v1/status").text
            time.sleep(0.2)
        assert admin.post("/v1/acls/create", json={"acls": [_acl(500)]}).status_code == 200
        count = admin.get("/v1/acls/count").json()["count"]
        assert count == len(written) + 1  # the refused writes changed nothing
        assert "kraft_acl_log_writable 1.0" in admin.get("/metrics").text
    with (
        ServeProcess(tmp_path / "again", {**props}).start() as again_serve,
        again_serve.client(token=ADMIN_TOKEN) as admin,
    ):
        assert admin.get("/v1/acls/count").json()["count"] == count  # the log reopens whole


def test_a_restart_on_a_still_full_disk_is_one_clear_line(small_disk: Path, tmp_path: Path) -> None:
    props = base_properties(tmp_path / "serve", small_disk / "log")
    with ServeProcess(tmp_path / "serve", props).start() as serve, serve.client(token=ADMIN_TOKEN) as admin:
        assert admin.post("/v1/acls/create", json={"acls": [_acl(1)]}).status_code == 200
    _fill(small_disk, 0)
    config = tmp_path / "serve" / "server.properties"
    proc = subprocess.run(
        [*kraft_acl_command(), "serve", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    lines = [line for line in proc.stderr.strip().splitlines() if "WARNING" not in line]
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("kraft-acl: error: "), proc.stderr
    assert "No space left on device" in lines[0] and "Traceback" not in proc.stderr
