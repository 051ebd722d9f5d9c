"""serve's Prometheus figures count exactly what was answered, and its connection deadlines hold (a request
that does not arrive in time gets 408, an idle keep-alive connection is closed), on a real process."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server.raw_http import read_all
from tests.server.serve_process import ADMIN_TOKEN, BROKER_TOKEN, ServeProcess, base_properties


@pytest.fixture(scope="module")
def quick_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A serve whose idle and request deadlines are 400 ms."""
    work: Path = tmp_path_factory.mktemp("serve-deadlines")
    props = base_properties(work, connections_max_idle_ms="400", request_timeout_ms="400")
    process = ServeProcess(work, props).start()
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output()


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _samples(serve: ServeProcess) -> Samples:
    text = httpx.get(serve.url("CLIENT") + "/metrics").text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _delta(after: Samples, before: Samples, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_metrics_count_every_decision_and_answer(quick_serve: ServeProcess) -> None:
    acl = {
        "resource_type": "TOPIC",
        "resource_name": "metered",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    with quick_serve.client(token=ADMIN_TOKEN) as admin:
        assert admin.post("/v1/acls/create", json={"acls": [acl]}).status_code == 200
    before = _samples(quick_serve)
    actions = [
        {"operation": "READ", "resource_type": "TOPIC", "resource_name": "metered"},
        {"operation": "WRITE", "resource_type": "TOPIC", "resource_name": "metered"},
        {"operation": "DESCRIBE", "resource_type": "TOPIC", "resource_name": "metered"},
    ]
    with quick_serve.client(token=BROKER_TOKEN) as broker:
        for _ in range(7):
            got = broker.post(
                "/v1/authorize", json={"principal": "User:alice", "client_address": "10.0.0.1", "actions": actions}
            ).json()
            assert got["results"] == ["ALLOWED", "DENIED", "ALLOWED"]
        admin_call = {"principal": "User:admin", "client_address": "10.0.0.1", "actions": actions[:1]}
        assert broker.post("/v1/authorize", json=admin_call).json()["results"] == ["ALLOWED"]
        assert broker.post("/v1/authorize", json={"principal": 3}).status_code == 400
    after = _samples(quick_serve)
    decisions = "kraft_acl_decisions_total"
    assert _delta(after, before, decisions, result="ALLOWED", rule="MatchingAcl") == 14
    assert _delta(after, before, decisions, result="DENIED", rule="DefaultDeny") == 7
    assert _delta(after, before, decisions, result="ALLOWED", rule="SuperUser") == 1
    assert _delta(after, before, "kraft_acl_authorize_seconds_count") == 8
    assert _delta(after, before, "kraft_acl_authorize_seconds_bucket", le="+Inf") == 8
    assert _delta(after, before, "kraft_acl_authorize_seconds_sum") > 0
    requests = "kraft_acl_http_requests_total"
    assert _delta(after, before, requests, endpoint="authorize", status="200") == 8
    assert _delta(after, before, requests, endpoint="authorize", status="400") == 1


def _connect(serve: ServeProcess) -> socket.socket:
    host, port = serve.url("CLIENT").removeprefix("http://").split(":")
    conn = socket.create_connection((host, int(port)))
    conn.settimeout(10)
    return conn


def test_a_request_that_does_not_arrive_in_time_gets_408(quick_serve: ServeProcess) -> None:
    with _connect(quick_serve) as conn:
        head = f"POST /v1/authorize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {BROKER_TOKEN}\r\nContent-Length: 50"
        conn.sendall(head.encode() + b"\r\n\r\n{")  # admitted at the head; the body never comes whole
        started = time.monotonic()
        answer = read_all(conn)  # serve answers and closes
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"REQUEST_TIMED_OUT" in answer
    assert time.monotonic() - started < 5


def test_an_idle_keep_alive_connection_is_closed(quick_serve: ServeProcess) -> None:
    with _connect(quick_serve) as conn:
        conn.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
        first = conn.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 OK"), first
        started = time.monotonic()
        assert read_all(conn) == b""  # closed by serve, nothing more sent
    assert 0.3 < time.monotonic() - started < 5


def test_a_busy_connection_is_kept_while_it_keeps_asking(quick_serve: ServeProcess) -> None:
    with _connect(quick_serve) as conn:
        for _ in range(6):  # 6 x 150 ms spans more than the 400 ms deadline
            conn.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
            assert conn.recv(65536).startswith(b"HTTP/1.1 200 OK")
            time.sleep(0.15)
