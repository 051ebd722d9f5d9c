"""Read-your-writes on one machine: a broker-role serve that follows the controller's log slowly answers a decision
with `min_offset` from a state holding that write (it waits), refuses an offset beyond the log's end with a 400
naming the field, and answers 503 OFFSET_NOT_REACHED when it cannot get there within min.offset.wait.max.ms; the
CLI passes `--min-offset` and tries each `--server` URL in turn."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kraftacl.harness.serve_process import kraft_acl_command
from tests.server.serve_process import (
    ADMIN_TOKEN,
    ALICE_READ_ORDERS,
    ALICE_TOKEN,
    BROKER_TOKEN,
    ServeProcess,
    base_properties,
)

ACL = ALICE_READ_ORDERS


def _body(min_offset: int | None) -> dict[str, object]:
    body: dict[str, object] = {
        "principal": "User:alice",
        "client_address": "10.0.0.1",
        "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "orders"}],
    }
    if min_offset is not None:
        body["min_offset"] = min_offset
    return body


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    """A controller, and a broker-role reader of its log that polls only every 3 s (a lagging serve)."""
    log_dir = tmp_path / "log"
    controller = ServeProcess(tmp_path / "controller", base_properties(tmp_path / "controller", log_dir)).start()
    props = base_properties(tmp_path / "reader", log_dir, process_roles="broker")
    props["metadata.log.poll.interval.ms"] = "3000"
    props["min.offset.wait.max.ms"] = "8000"
    reader = ServeProcess(tmp_path / "reader", props).start()
    yield controller, reader
    reader.stop()
    controller.stop()


def test_a_decision_with_min_offset_waits_for_the_write(pair: tuple[ServeProcess, ServeProcess]) -> None:
    controller, reader = pair
    with controller.client(token=ADMIN_TOKEN) as admin:
        created = admin.post("/v1/acls/create", json={"acls": [ACL]}).json()
    with reader.client(token=BROKER_TOKEN) as client:
        stale = client.post("/v1/authorize", json=_body(None)).json()
        fresh = client.post("/v1/authorize", json=_body(created["offset"])).json()
    assert stale["results"] == ["DENIED"] and stale["offset"] < created["offset"]  # the reader lags: 3 s polls
    assert fresh["results"] == ["ALLOWED"] and fresh["offset"] >= created["offset"]


def test_min_offset_on_the_heavier_paths_waits_too(pair: tuple[ServeProcess, ServeProcess]) -> None:
    """A large body (decoded in slices), explain (rules on the rules thread) and describe (streamed) wait for the
    write as the hot path does."""
    controller, reader = pair

    def write(name: str) -> int:
        with controller.client(token=ADMIN_TOKEN) as admin:
            return int(admin.post("/v1/acls/create", json={"acls": [dict(ACL, resource_name=name)]}).json()["offset"])

    action = {"operation": "READ", "resource_type": "TOPIC", "resource_name": "large"}
    with reader.client(token=BROKER_TOKEN, timeout=30) as client:
        large = {**_body(write("large")), "actions": [action] * 1500}  # about 100 KB
        answer = client.post("/v1/authorize", json=large).json()
        assert answer["results"] == ["ALLOWED"] * 1500, answer
        explained = {**_body(write("explained")), "explain": True}
        explained["actions"] = [dict(action, resource_name="explained")]
        answer = client.post("/v1/authorize", json=explained).json()
        assert answer["results"] == ["ALLOWED"] and answer["rules"][0]["kind"] == "MatchingAcl", answer
    offset = write("described")
    with reader.client(token=ADMIN_TOKEN, timeout=30) as admin:
        described = admin.post("/v1/acls/describe", json={"min_offset": offset}).json()
    assert "described" in [a["resource_name"] for a in described["acls"]] and described["offset"] >= offset


def test_a_consistent_describe_sees_every_write_acknowledged_before_it(pair: tuple[ServeProcess, ServeProcess]) -> None:
    """`consistent` needs no offset (the asker may not be the writer: a broker's plugin describes what a KRaft
    controller's plugin wrote): the lagging serve reads its log's end, applies up to it, then answers."""
    controller, reader = pair
    names = []
    for n in range(3):
        names.append(f"consistent-{n}")
        with controller.client(token=ADMIN_TOKEN) as admin:
            created = admin.post("/v1/acls/create", json={"acls": [dict(ACL, resource_name=names[-1])]}).json()
        with reader.client(token=ADMIN_TOKEN, timeout=30) as admin:
            stale = admin.post("/v1/acls/describe", json={}).json()
            fresh = admin.post("/v1/acls/describe", json={"consistent": True}).json()
        assert names[-1] not in [a["resource_name"] for a in stale["acls"]], "the reader did not lag (3 s polls)"
        assert set(names) <= {a["resource_name"] for a in fresh["acls"]}, fresh
        assert fresh["offset"] >= created["offset"]


def test_a_consistent_describe_on_a_serve_that_cannot_read_its_log_is_a_503_at_once(tmp_path: Path) -> None:
    """The poll begun after the call failed: 503 OFFSET_NOT_REACHED naming `$.consistent` at once (the broker plugin
    then takes the state applied), not after min.offset.wait.max.ms; a plain describe answers the state applied."""
    log_dir = tmp_path / "log"
    with ServeProcess(tmp_path / "controller", base_properties(tmp_path / "controller", log_dir)).start():
        props = base_properties(tmp_path / "reader", log_dir, process_roles="broker")
        props["metadata.log.poll.interval.ms"] = "200"
        props["min.offset.wait.max.ms"] = "30000"
        with ServeProcess(tmp_path / "reader", props).start() as reader:
            log_dir.rename(tmp_path / "moved")
            try:
                with reader.client(token=ADMIN_TOKEN, timeout=60) as admin:
                    assert admin.post("/v1/acls/describe", json={}).status_code == 200
                    started = time.monotonic()
                    answer = admin.post("/v1/acls/describe", json={"consistent": True})
                    took = time.monotonic() - started
            finally:
                (tmp_path / "moved").rename(log_dir)
    assert answer.status_code == 503 and answer.json()["error"]["field"] == "$.consistent", answer.text
    assert "cannot read its metadata log" in answer.json()["error"]["message"]
    assert took < 20, f"answered after {took:.1f} s: min.offset.wait.max.ms (30 s) was waited"


def test_min_offset_on_a_serve_that_cannot_read_its_log_is_a_503_at_once(tmp_path: Path) -> None:
    """A serve that cannot read its log (a poll begun after the call failed, or it diverged) cannot reach the offset
    by waiting: 503 OFFSET_NOT_REACHED naming `$.min_offset` at once (the caller asks another serve), not after
    min.offset.wait.max.ms, during which any caller asking about itself could hold 16 such waits per connection."""
    log_dir = tmp_path / "log"
    with ServeProcess(tmp_path / "controller", base_properties(tmp_path / "controller", log_dir)).start():
        props = base_properties(tmp_path / "reader", log_dir, process_roles="broker")
        props["metadata.log.poll.interval.ms"] = "200"
        props["min.offset.wait.max.ms"] = "30000"
        with ServeProcess(tmp_path / "reader", props).start() as reader:
            with reader.client(token=BROKER_TOKEN) as client:
                applied = client.post("/v1/authorize", json=_body(None)).json()["offset"]
            log_dir.rename(tmp_path / "moved")
            try:
                with reader.client(token=ALICE_TOKEN, timeout=60) as alice:
                    started = time.monotonic()
                    answer = alice.post("/v1/authorize", json=_body(applied + 1))
                    took = time.monotonic() - started
            finally:
                (tmp_path / "moved").rename(log_dir)
    assert answer.status_code == 503 and answer.json()["error"]["field"] == "$.min_offset", answer.text
    assert "cannot read its metadata log" in answer.json()["error"]["message"]
    assert str(tmp_path) not in answer.text  # the log's error names its files: for the operator, not any caller
    assert took < 20, f"answered after {took:.1f} s: min.offset.wait.max.ms (30 s) was waited"


def test_min_offset_beyond_the_log_is_a_400_and_a_slow_serve_a_503(pair: tuple[ServeProcess, ServeProcess]) -> None:
    controller, reader = pair
    with reader.client(token=BROKER_TOKEN, timeout=30) as client:
        beyond = client.post("/v1/authorize", json=_body(1000))
        assert beyond.status_code == 400, beyond.text
        assert beyond.json()["error"]["field"] == "$.min_offset" and "beyond the end" in beyond.text
        bad = client.post("/v1/authorize", json={**_body(None), "min_offset": -1})
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "$.min_offset"
    with controller.client(token=ADMIN_TOKEN) as admin:
        created = admin.post("/v1/acls/create", json={"acls": [ACL]}).json()
    props = dict(reader.properties, **{"min.offset.wait.max.ms": "0"})  # answers before the poll it asks for
    reader.stop()
    slow = ServeProcess(reader.directory, {**props, "metadata.log.poll.interval.ms": "60000"})
    with slow.start(), slow.client(token=BROKER_TOKEN) as client:
        with controller.client(token=ADMIN_TOKEN) as admin:
            later = admin.post("/v1/acls/create", json={"acls": [dict(ACL, resource_name="later")]}).json()
        assert later["offset"] > created["offset"]
        answer = client.post("/v1/authorize", json=_body(later["offset"]))
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "OFFSET_NOT_REACHED", answer.text


def test_a_serve_that_must_wait_polls_at_once_not_after_its_interval(
    pair: tuple[ServeProcess, ServeProcess],
) -> None:
    """A reader polling once a minute answers a write it has not read yet within min.offset.wait.max.ms (20 s): the
    request makes it poll now, for each of several writes in a row."""
    controller, reader = pair
    props = {**reader.properties, "metadata.log.poll.interval.ms": "60000", "min.offset.wait.max.ms": "20000"}
    reader.stop()
    slow = ServeProcess(reader.directory, props)
    with slow.start(), slow.client(token=BROKER_TOKEN, timeout=30) as client:
        for name in ("orders", "payments", "refunds"):
            with controller.client(token=ADMIN_TOKEN) as admin:
                acl = dict(ACL, resource_name=name)
                offset = admin.post("/v1/acls/create", json={"acls": [acl]}).json()["offset"]
            action = {"operation": "READ", "resource_type": "TOPIC", "resource_name": name}
            answer = client.post("/v1/authorize", json={**_body(offset), "actions": [action]})
            assert answer.status_code == 200 and answer.json()["results"] == ["ALLOWED"], (name, answer.text)
            assert answer.json()["offset"] >= offset


def test_the_cli_tries_each_server_and_passes_min_offset(pair: tuple[ServeProcess, ServeProcess]) -> None:
    controller, reader = pair
    env = {**os.environ, "KRAFT_ACL_TOKEN": ADMIN_TOKEN}
    servers = f"http://127.0.0.1:9,{reader.url('CLIENT')},{controller.url('CLIENT')}"
    add = ["acls", "--server", servers, "--add", "--allow-principal", "User:alice", "--operation", "Read"]
    added = subprocess.run([*kraft_acl_command(), *add, "--topic", "orders"], capture_output=True, text=True, env=env)
    assert added.returncode == 0, added.stderr  # the first refuses connections, the reader answers 421
    offset = added.stderr.split("written at log offset ")[1].split(";")[0]
    listed = subprocess.run(  # on the lagging reader at once: --list asks `consistent`
        [*kraft_acl_command(), "acls", "--server", reader.url("CLIENT"), "--list", "--topic", "orders"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert listed.returncode == 0 and "User:alice" in listed.stdout, listed.stdout + listed.stderr
    ask = ["authorize", "--server", reader.url("CLIENT"), "--min-offset", offset, "--principal", "User:alice"]
    env["KRAFT_ACL_TOKEN"] = BROKER_TOKEN
    answered = subprocess.run(
        [*kraft_acl_command(), *ask, "--host", "10.0.0.1", "--operation", "Read", "--topic", "orders"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert answered.returncode == 0 and '"ALLOWED"' in answered.stdout, answered.stdout + answered.stderr
    ask[ask.index("--min-offset") + 1] = "100000"  # beyond the log's end: the whole run fails once, not each line
    beyond = subprocess.run(
        [*kraft_acl_command(), *ask, "--host", "10.0.0.1", "--operation", "Read", "--topic", "orders"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert beyond.returncode == 2 and beyond.stdout == "", beyond.stdout + beyond.stderr
    assert "field $.min_offset" in beyond.stderr and len(beyond.stderr.strip().splitlines()) == 1, beyond.stderr
    refused = subprocess.run(
        [*kraft_acl_command(), "authorize", "--acls", "x.json", "--min-offset", "3", "--requests", "-"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and "--min-offset needs --server" in refused.stderr


def test_status_says_which_controller_writes(pair: tuple[ServeProcess, ServeProcess]) -> None:
    controller, reader = pair
    on_controller = httpx.get(controller.url("CLIENT") + "/v1/status").json()["controller"]
    assert on_controller["active"] is True and on_controller["election_group"] is None  # the embedded log's lock
    assert httpx.get(reader.url("CLIENT") + "/v1/status").json()["controller"] is None
