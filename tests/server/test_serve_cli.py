"""`kraft-acl serve` as an operator and a script drive it: `--check-config` for CI pipelines (exit 2 on any unknown
or invalid key, a "did you mean" for a misspelling), `-o json` status lines, a closed stdout (`serve | head -1`)
that never stops serve, and the on-demand snapshot of a running serve (`POST /v1/snapshots`, `kraft-acl snapshot
create --server`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import httpx

from kraftacl.api.endpoints import CREATE_SNAPSHOT
from kraftacl.harness.serve_process import kraft_acl_command
from tests.server.serve_process import ADMIN_TOKEN, ALICE_TOKEN, ServeProcess, base_properties

MISSPELT = "allow.everyone.if.no.acl.foud"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*kraft_acl_command(), *args], capture_output=True, text=True, timeout=120)


def _config(tmp_path: Path, **extra: str) -> Path:
    props = base_properties(tmp_path, tmp_path / "never-created")
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()) + "".join(f"{k}={v}\n" for k, v in extra.items()))
    return config


def test_check_config_exits_2_on_unknown_or_invalid_keys_and_opens_nothing(tmp_path: Path) -> None:
    config = _config(tmp_path, **{MISSPELT: "true", "colour": "blue"})
    checked = _cli("serve", "--config", str(config), "--check-config")
    assert checked.returncode == 2 and checked.stdout == ""
    assert checked.stderr.splitlines() == [
        f"kraft-acl: error: {config}: unknown key {MISSPELT} (did you mean allow.everyone.if.no.acl.found?)",
        f"kraft-acl: error: {config}: unknown key colour",
    ]
    as_json = json.loads(_cli("serve", "--config", str(config), "--check-config", "-o", "json").stdout)
    assert as_json["valid"] is False and len(as_json["errors"]) == 2
    invalid = _config(tmp_path, **{"request.max.bytes": "10"})
    refused = _cli("serve", "--config", str(invalid), "--check-config")
    assert refused.returncode == 2 and "request.max.bytes='10': must be between 1024" in refused.stderr
    valid = _cli("serve", "--config", str(_config(tmp_path)), "--check-config", "-o", "json")
    report = json.loads(valid.stdout)
    assert valid.returncode == 0 and report["valid"] and report["errors"] == []
    assert [(x["name"], x["early_start"]) for x in report["listeners"]] == [("CONTROLLER", True), ("CLIENT", False)]
    assert not (tmp_path / "never-created").exists()


def test_a_misspelt_key_at_start_is_a_warning_with_the_key_meant(tmp_path: Path) -> None:
    props = base_properties(tmp_path)
    props[MISSPELT] = "true"
    with ServeProcess(tmp_path, props).start() as serve:
        pass
    warned = [line for line in serve.stderr if "unknown key" in line]
    assert (
        len(warned) == 1
        and f"unknown key {MISSPELT} (ignored; did you mean allow.everyone.if.no.acl.found?)" in (warned[0])
    )


def test_status_lines_as_json(tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path, base_properties(tmp_path))
    serve.proc = subprocess.Popen(
        [*kraft_acl_command(), "serve", "--config", str(serve.config), "-o", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, which ServeProcess.stop signals
    )
    assert serve.proc.stdout is not None
    events = [json.loads(serve.proc.stdout.readline()) for _ in range(4)]
    assert [e["event"] for e in events] == ["listening", "waiting", "listening", "ready"]
    assert events[0]["listener"] == "CONTROLLER" and events[0]["early_start"] is True
    assert events[0]["url"] == serve.url("CONTROLLER") and events[3]["acls"] == 0
    assert serve.stop() == 0
    assert json.loads(serve.proc.stdout.readline()) == {"event": "stopped", "loaded": True, "message": "stopped"}


def test_a_closed_stdout_never_stops_serve(tmp_path: Path) -> None:
    """`kraft-acl serve ... | head -1`: the reader takes the first line and closes the pipe; serve goes on answering,
    says once on stderr that its status lines now go to the log, and stops cleanly (exit 0) on SIGTERM."""
    serve = ServeProcess(tmp_path, base_properties(tmp_path))
    proc = subprocess.Popen(
        [*kraft_acl_command(), "serve", "--config", str(serve.config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("kraft-acl serve: listening on CONTROLLER")
    proc.stdout.close()  # what `head -1` does after its line
    deadline = time.monotonic() + 60
    while True:  # serve is still there: it answers, and becomes ready
        try:
            if httpx.get(serve.url("CLIENT") + "/v1/status", timeout=5).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "serve did not become ready after its stdout reader went away"
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)  # its "stopped" line now meets the closed pipe, if no earlier one did
    err = proc.stderr.read()
    assert proc.wait(60) == 0, err
    assert "stdout was closed by its reader; serve goes on" in err and "kraft_acl.serve: stopped" in err, err
    assert "Traceback" not in err and "kraft-acl: error" not in err


def test_snapshot_of_a_running_serve_on_demand(tmp_path: Path) -> None:
    """A snapshot of the log serve holds the writer lock of, through serve: as `snapshot create` writes one; ALTER
    on the cluster; a broker-role serve on that log refuses (421)."""
    props = base_properties(tmp_path / "controller", tmp_path / "log")
    with ServeProcess(tmp_path / "controller", props).start() as serve:
        url = serve.url("CLIENT")
        add = ["--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "orders"]
        assert _cli("acls", "--server", url, "--token", ADMIN_TOKEN, *add).returncode == 0
        made = _cli("snapshot", "create", "--server", url, "--token", ADMIN_TOKEN, "-o", "json")
        assert made.returncode == 0, made.stderr
        report = json.loads(made.stdout)
        path = Path(report["path"])
        assert path.parent == tmp_path / "log" and report["end_offset"] == 1 and report["acls"] == 1
        verified = _cli("snapshot", "verify", str(path), "--log-dir", str(tmp_path / "log"))
        assert verified.returncode == 0 and verified.stdout.startswith("OK: 1 records (end offset 1"), verified.stdout
        text = _cli("snapshot", "create", "--server", url.removeprefix("http://"), "--token", ADMIN_TOKEN)
        assert text.returncode == 0 and text.stdout.strip() == str(path)  # nothing new: the same snapshot again
        refused = _cli("snapshot", "create", "--server", url, "--token", ALICE_TOKEN)
        assert refused.returncode == 1 and refused.stderr.splitlines() == [
            f"kraft-acl: error: {url}/v1/snapshots: HTTP 403 CLUSTER_AUTHORIZATION_FAILED: User:alice from 127.0.0.1 "
            "is not allowed ALTER on the cluster"
        ]
        locked = _cli("snapshot", "create", "--log-dir", str(tmp_path / "log"), "--lock-timeout", "0.2")
        assert locked.returncode == 1 and "locked" in locked.stderr  # why the operator needs the way through serve
        broker_props = base_properties(tmp_path / "broker", tmp_path / "log", process_roles="broker", node_id="2")
        with ServeProcess(tmp_path / "broker", broker_props).start() as broker:
            status, body = broker.call(CREATE_SNAPSHOT, ADMIN_TOKEN, listener="CLIENT")
            assert status == 421 and body["error"]["code"] == "NOT_CONTROLLER", body
    assert serve.stop(signal.SIGTERM) == 0
