"""Adversarial, class 5 (ports are serve's from the start) and class 7 (never ready without a log): a non-early
port cannot be taken by another process during the load, two listeners on one address and port are a config error
before anything opens, a port conflict creates no files; a broker-role serve whose metadata.log.dir is missing does
not create it, is not ready (even with allow.everyone.if.no.acl.found=true), and loads once its controller made it."""

from __future__ import annotations

import errno
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.harness.serve_process import kraft_acl_command
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec.avro import new_uuid
from tests.server.serve_process import BROKER_TOKEN, ServeProcess, base_properties, free_port

READ_T = {
    "principal": "User:alice",
    "client_address": "10.0.0.1",
    "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}],
}


def _run(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*kraft_acl_command(), "serve", "--config", str(config)], capture_output=True, text=True, timeout=60
    )


def _write(props: dict[str, str], path: Path) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def _broker_reads(serve: ServeProcess) -> httpx.Response:
    """The broker asks whether User:alice may read topic t, on the CLIENT listener."""
    return httpx.post(
        serve.url("CLIENT") + "/v1/authorize",
        json=READ_T,
        headers={"Authorization": f"Bearer {BROKER_TOKEN}"},
        timeout=30,
    )


def test_a_non_early_port_is_held_exclusively_during_the_load(large_log: Path, tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    shutil.copytree(large_log, log_dir)
    serve = ServeProcess(tmp_path, base_properties(tmp_path, log_dir, process_roles="broker"))
    with serve.start(wait_ready=False):
        port = int(serve.url("CLIENT").rsplit(":", 1)[1])
        thief = socket.socket()
        thief.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # what most servers set
        with pytest.raises(OSError) as taken:
            thief.bind(("127.0.0.1", port))
        thief.close()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        still_loading = httpx.get(serve.url("CONTROLLER") + "/v1/status", timeout=30).json()["ready"] is False
        assert still_loading, "the load finished before the checks; the log is too small for this machine"
        assert taken.value.errno == errno.EADDRINUSE
        serve.wait_for("ready:", timeout=120)
        assert _broker_reads(serve).status_code == 200


@pytest.mark.parametrize(
    "listeners",
    [
        "A://127.0.0.1:{p},B://127.0.0.1:{p}",
        "A://0.0.0.0:{p},B://127.0.0.1:{p}",
        "A://[::]:{p},B://127.0.0.1:{p}",
        "A://:{p},B://127.0.0.1:{p}",
        "A://localhost:{p},B://127.0.0.1:{p}",
        "A://[::ffff:127.0.0.1]:{p},B://127.0.0.1:{p}",
    ],
)
def test_two_listeners_on_one_address_are_a_config_error_before_anything_opens(tmp_path: Path, listeners: str) -> None:
    props = base_properties(tmp_path, tmp_path / "never-created")
    props["listeners"] = listeners.format(p=free_port())
    props["early.start.listeners"] = "A"
    config = _write(props, tmp_path / "server.properties")
    proc = _run(config)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "listeners A and B both bind" in lines[0], proc.stderr
    assert not (tmp_path / "never-created").exists()


def test_a_port_conflict_creates_no_files(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        props = base_properties(tmp_path, tmp_path / "log", decision_log_file=str(tmp_path / "decisions" / "d.log"))
        props["listeners"] = f"CONTROLLER://127.0.0.1:{free_port()},CLIENT://127.0.0.1:{port}"
        proc = _run(_write(props, tmp_path / "server.properties"))
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith(f"listener CLIENT: cannot bind 127.0.0.1:{port}: Address already in use")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["server.properties", "tokens"]


def test_a_broker_role_serve_without_its_log_directory_is_never_ready(tmp_path: Path) -> None:
    log_dir = tmp_path / "controller-makes-this"
    props = base_properties(tmp_path, log_dir, process_roles="broker", allow_everyone_if_no_acl_found="true")
    props["metadata.log.poll.interval.ms"] = "50"
    with ServeProcess(tmp_path, props).start(wait_ready=False) as serve:
        serve.wait_for("waiting for the metadata log: metadata.log.dir")
        early = serve.url("CONTROLLER")
        status = httpx.get(early + "/v1/status", timeout=10)
        denied = httpx.post(early + "/v1/authorize", json=READ_T, headers={"Authorization": f"Bearer {BROKER_TOKEN}"})
        assert status.status_code == 503 and status.json()["ready"] is False
        assert "does not exist" in status.json()["last_error"]
        assert denied.status_code == 503 and denied.json()["error"]["code"] == "AUTHORIZER_NOT_READY"
        time.sleep(1.0)
        assert not log_dir.exists(), "a broker-role serve created its log directory"
        deny = StandardAcl(
            ResourceType.TOPIC, "t", PatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermissionType.DENY
        )
        with FileLog(log_dir) as log:  # the controller creates the log
            log.append([record_from_acl(new_uuid(), deny)])
        serve.wait_for("kraft-acl serve: ready:", timeout=60)
        answer = _broker_reads(serve)
    assert answer.json()["results"] == ["DENIED"] and answer.json()["offset"] == 0
