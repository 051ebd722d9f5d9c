"""serve as a process: KIP-801 start-up on a large log, signals, the writer lock, bad configs, the broker role."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from kraftacl.harness.serve_process import kraft_acl_command
from kraftacl.metadata_log.backends.file.log import FileLog
from tests.server.serve_process import ADMIN_TOKEN, BROKER_TOKEN, ServeProcess, base_properties, free_port


def _refused(url: str) -> bool:
    host, port = url.split("://")[1].split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return False
    except ConnectionRefusedError:
        return True


def _ask(url: str, principal: str) -> httpx.Response:
    body = {
        "principal": principal,
        "client_address": "10.0.0.1",
        "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "orders"}],
    }
    return httpx.post(url + "/v1/authorize", json=body, headers={"Authorization": f"Bearer {BROKER_TOKEN}"}, timeout=30)


def test_early_start_listener_serves_super_users_while_a_large_log_loads(large_log: Path, tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    shutil.copytree(large_log, log_dir)
    serve = ServeProcess(tmp_path, base_properties(tmp_path, log_dir, process_roles="broker"))
    with serve.start(wait_ready=False):
        early, client = serve.url("CONTROLLER"), serve.url("CLIENT")
        status = httpx.get(early + "/v1/status", timeout=30)
        admin = _ask(early, "User:admin")
        alice = _ask(early, "User:alice")
        client_refused = _refused(client)
        still_loading = httpx.get(early + "/v1/status", timeout=30).json()["ready"] is False
        # every observation above happened before the load completed (checked last, so none is vacuous)
        assert still_loading, "the load finished before the checks; the log is too small for this machine"
        assert status.status_code == 503 and status.json()["ready"] is False
        assert admin.status_code == 200 and admin.json()["results"] == ["ALLOWED"]
        assert alice.status_code == 503 and alice.json()["error"]["code"] == "AUTHORIZER_NOT_READY"
        assert client_refused, "the CLIENT listener accepted a connection before the initial load"
        ready = serve.wait_for("ready:", timeout=120)
        assert "ACLs" in ready
        assert _ask(client, "User:alice").status_code == 200
        assert _ask(early, "User:alice").status_code == 200
        assert httpx.get(client + "/v1/status").json()["last_applied_offset"] == 999_999


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly_and_releases_the_writer_lock(tmp_path: Path, sig: int) -> None:
    serve = ServeProcess(tmp_path, base_properties(tmp_path)).start()
    started = time.monotonic()
    assert serve.stop(sig) == 0, serve.output()
    assert time.monotonic() - started < 5
    assert "kraft-acl serve: stopped" in serve.stdout
    FileLog(tmp_path / "log").close()  # the lock is free: a writer opens the directory


def test_second_controller_on_one_directory_gets_one_clear_error(tmp_path: Path) -> None:
    with ServeProcess(tmp_path / "a", base_properties(tmp_path / "a", tmp_path / "log")).start():
        second = ServeProcess(tmp_path / "b", base_properties(tmp_path / "b", tmp_path / "log"))
        proc = subprocess.run(
            [*kraft_acl_command(), "serve", "--config", str(second.config)], capture_output=True, text=True, timeout=60
        )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kraft-acl: error: cannot open the metadata log:"), proc.stderr
    assert "lock" in lines[0]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"listeners": "CLIENT:9000"}, "listeners='CLIENT:9000': expected NAME://host:port"),
        ({"early.start.listeners": "NOPE"}, "early.start.listeners='NOPE': not a listener"),
        ({"process.roles": "broker,judge"}, "judge is not one of broker, controller"),
        ({"node.id": "one"}, "node.id='one': not an integer"),
        ({"super.users": "admin"}, "super.users='admin': expected a string in format principalType:principalName"),
        ({"auth.token.file": "/no/such/file"}, "auth.token.file='/no/such/file': no such file"),
        ({"allow.everyone.if.no.acl.found": "yes"}, "allow.everyone.if.no.acl.found='yes': must be true or false"),
        ({"listener.security.protocol.map": "CLIENT:SSL"}, "SSL listeners need ssl.certfile and ssl.keyfile"),
        ({"request.max.bytes": "10"}, "request.max.bytes='10': must be between 1024"),
        ({"bulk.threads.nice": "20"}, "bulk.threads.nice='20': must be between 0 and 19"),
    ],
)
def test_bad_config_exits_2_with_one_line_before_opening_anything(
    tmp_path: Path, change: dict[str, str], words: str
) -> None:
    props = base_properties(tmp_path, tmp_path / "never-created")
    props.update(change)
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    proc = subprocess.run(
        [*kraft_acl_command(), "serve", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kraft-acl: error: {config}: "), proc.stderr
    assert words in lines[0]
    assert not (tmp_path / "never-created").exists()


def _thread_nice(pid: int) -> list[int]:
    """The nice value of each thread of a process (Linux /proc: field 19 of each task's stat)."""
    values = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            values.append(int((task / "stat").read_text().rpartition(")")[2].split()[16]))
    return values


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="per-thread nice values are read from Linux /proc")
def test_bulk_threads_run_below_the_threads_answering_decisions(tmp_path: Path) -> None:
    props = base_properties(tmp_path)
    props["bulk.threads.nice"] = "7"
    with ServeProcess(tmp_path, props).start() as serve:
        assert serve.pid is not None
        assert httpx.get(serve.url("CLIENT") + "/v1/status", timeout=30).status_code == 200
        nice = _thread_nice(serve.pid)
    assert 7 in nice  # the tailer, at least: it runs from the start
    assert nice.count(0) >= 1 and set(nice) <= {0, 7}  # the event loop's (the main) thread and the others at 0


def test_unknown_keys_are_warned_about(tmp_path: Path) -> None:
    props = base_properties(tmp_path, colour="blue")
    props["sasl.enabled.mechanisms"] = "PLAIN"
    with ServeProcess(tmp_path, props).start() as serve:
        pass
    warnings = [line for line in serve.stderr if "unknown key" in line]
    assert len(warnings) == 2 and "colour" in warnings[0] and "sasl.enabled.mechanisms" in warnings[1]


def test_port_in_use_is_one_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        props = base_properties(tmp_path)
        props["listeners"] = f"CONTROLLER://127.0.0.1:{free_port()},CLIENT://127.0.0.1:{port}"
        config = tmp_path / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        proc = subprocess.run(
            [*kraft_acl_command(), "serve", "--config", str(config)], capture_output=True, text=True, timeout=60
        )
    assert proc.returncode == 1
    assert (
        proc.stderr.strip()
        == f"kraft-acl: error: listener CLIENT: cannot bind 127.0.0.1:{port}: {os.strerror(errno.EADDRINUSE)}"
    )


def test_broker_role_tails_what_a_writer_appends_and_refuses_writes(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    FileLog(log_dir).close()
    with ServeProcess(tmp_path, base_properties(tmp_path, log_dir, process_roles="broker")).start() as serve:
        add = subprocess.run(
            [
                *kraft_acl_command(),
                "acls",
                "--log-dir",
                str(log_dir),
                "--add",
                "--allow-principal",
                "User:alice",
                "--operation",
                "Read",
                "--topic",
                "orders",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert add.returncode == 0, add.stderr
        deadline = time.monotonic() + 10
        while _ask(serve.url("CLIENT"), "User:alice").json()["results"] != ["ALLOWED"]:
            assert time.monotonic() < deadline, "the broker-role serve did not pick up the new ACL"
            time.sleep(0.05)
        with serve.client(token=ADMIN_TOKEN) as admin:
            refused = admin.post("/v1/acls/create", json={"acls": []})
        assert refused.status_code == 421 and refused.json()["error"]["code"] == "NOT_CONTROLLER"
