"""The HTTP API of a real serve process: every endpoint's answers, and each kind of bad request."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from tests.server.serve_process import ADMIN_TOKEN, ALICE_READ_ORDERS, ALICE_TOKEN, BROKER_TOKEN, ServeProcess

ACL = ALICE_READ_ORDERS


def _authorize(
    client: httpx.Client, principal: str, *actions: tuple[str, str, str], explain: bool = False
) -> httpx.Response:
    body = {
        "principal": principal,
        "client_address": "10.0.0.1",
        "actions": [{"operation": o, "resource_type": t, "resource_name": n} for o, t, n in actions],
        "explain": explain,
    }
    return client.post("/v1/authorize", json=body)


def test_create_authorize_describe_delete_round_trip(serve: ServeProcess) -> None:
    with serve.client(token=ADMIN_TOKEN) as admin, serve.client(token=BROKER_TOKEN) as broker:
        created = admin.post("/v1/acls/create", json={"acls": [ACL, ACL]}).json()
        assert [r["error_code"] for r in created["results"]] == [0, 0]
        acl_id = created["results"][0]["id"]
        assert created["results"][1].get("id") is None  # the duplicate succeeds without a record
        got = _authorize(
            broker,
            "User:alice",
            ("READ", "TOPIC", "orders"),
            ("DESCRIBE", "TOPIC", "orders"),
            ("WRITE", "TOPIC", "orders"),
            explain=True,
        ).json()
        assert got["results"] == ["ALLOWED", "ALLOWED", "DENIED"]
        assert got["offset"] == created["offset"]
        assert [r["kind"] for r in got["rules"]] == ["MatchingAcl", "MatchingAcl", "DefaultDeny"]
        assert got["rules"][0]["acl_id"] == acl_id
        listed = admin.post("/v1/acls/describe", json={"filter": {"principal": "User:alice"}}).json()
        assert [a["id"] for a in listed["acls"]] == [acl_id]
        assert admin.get("/v1/acls/count").json()["count"] >= 1
        deleted = admin.post(
            "/v1/acls/delete", json={"filters": [{"resource_name": "orders", "principal": "User:alice"}]}
        ).json()
        assert [a["id"] for a in deleted["results"][0]["acls"]] == [acl_id]
        assert _authorize(broker, "User:alice", ("READ", "TOPIC", "orders")).json()["results"] == ["DENIED"]


def test_kip140_per_entry_errors(serve: ServeProcess) -> None:
    bad = dict(ACL, resource_type="CLUSTER", resource_name="not-the-cluster")
    unknown = dict(ACL, operation="NOT_AN_OPERATION")
    with serve.client(token=ADMIN_TOKEN) as admin:
        results = admin.post("/v1/acls/create", json={"acls": [bad, unknown]}).json()["results"]
    assert [(r["error_code"], r["error"]) for r in results] == [(42, "INVALID_REQUEST"), (42, "INVALID_REQUEST")]
    assert results[0]["message"] == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert results[1]["message"] == "Invalid operation UNKNOWN"


def test_authorized_operations_and_by_resource_type(serve: ServeProcess) -> None:
    prefixed = dict(ACL, resource_name="pay-", pattern_type="PREFIXED", operation="WRITE")
    with serve.client(token=ADMIN_TOKEN) as admin, serve.client(token=BROKER_TOKEN) as broker:
        admin.post("/v1/acls/create", json={"acls": [prefixed]})
        ops = broker.post(
            "/v1/authorized-operations",
            json={
                "principal": "User:alice",
                "client_address": "10.0.0.1",
                "resource_type": "TOPIC",
                "resource_name": "pay-1",
            },
        ).json()
        assert ops["operations"] == ["DESCRIBE", "WRITE"]
        assert ops["authorized_operations"] == (1 << 4) | (1 << 8)
        by_type = broker.post(
            "/v1/authorize-by-resource-type",
            json={
                "principal": "User:alice",
                "client_address": "10.0.0.1",
                "operation": "WRITE",
                "resource_type": "TOPIC",
            },
        ).json()
        assert by_type["result"] == "ALLOWED"
        bad = broker.post(
            "/v1/authorize-by-resource-type",
            json={
                "principal": "User:alice",
                "client_address": "10.0.0.1",
                "operation": "ANY",
                "resource_type": "TOPIC",
            },
        )
        assert bad.status_code == 400 and "non-filter operation" in bad.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"client_address": "1.2.3.4", "actions": []}, "$", "missing required field `principal`"),
        (
            {
                "principal": "User:a",
                "client_address": "1.2.3.4",
                "actions": [{"operation": "REED", "resource_type": "TOPIC", "resource_name": "t"}],
            },
            "$.actions[0].operation",
            "'REED' is not one of",
        ),
        (
            {
                "principal": "User:a",
                "client_address": "1.2.3.4",
                "actions": [{"operation": 3, "resource_type": "TOPIC", "resource_name": "t"}],
            },
            "$.actions[0].operation",
            "Expected `str`, got `int`",
        ),
        (
            {"principal": "User:a", "client_address": "1.2.3.4", "actions": [], "colour": "red"},
            "$",
            "unknown field `colour`",
        ),
        (
            {
                "principal": "User:a",
                "client_address": "1.2.3.4",
                "actions": [
                    {"operation": "READ", "resource_type": "TOPIC", "resource_name": "t", "pattern_type": "PREFIXED"}
                ],
            },
            "$.actions",
            "Only literal resources are supported",
        ),
        (
            {
                "principal": "User:a",
                "client_address": "1.2.3.4",
                "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "é" * 20000}],
            },
            "$.actions[0].resource_name",
            "32767 UTF-8 bytes",
        ),
        (
            {
                "principal": "User:a",
                "client_address": "1.2.3.4",
                "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "t", "ref_count": 2**40}],
            },
            "$.actions[0].ref_count",
            "Expected `int` <= 2147483647",
        ),
    ],
)
def test_bad_requests_name_the_field(serve: ServeProcess, body: dict[str, object], field: str, words: str) -> None:
    with serve.client(token=BROKER_TOKEN) as broker:
        response = broker.post("/v1/authorize", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "INVALID_REQUEST"
    assert error.get("field") == field
    assert words in error["message"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/authorize", {"actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}]}, None),
        ("/v1/authorize-by-resource-type", {"operation": "READ", "resource_type": "TOPIC"}, None),
        ("/v1/authorized-operations", {"resource_type": "TOPIC", "resource_name": "t"}, None),
        (
            "/v1/authorize",
            {"actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}], "explain": True},
            None,
        ),
        (
            "/v1/data/kafka/authz/allow",
            {
                "input": {
                    "requestContext": {"principal": {"principalType": "User", "name": "a"}, "clientAddress": "/x"},
                    "action": {"operation": "READ", "resourcePattern": {"resourceType": "TOPIC", "name": "t"}},
                }
            },
            "$.input.requestContext.clientAddress",
        ),
    ],
)
@pytest.mark.parametrize("address", ["notanip", "", "10.0.0.256", "host.example:9092"])
def test_a_client_address_that_is_not_an_ip_address_is_a_400_naming_it(
    serve: ServeProcess, path: str, body: dict[str, object], field: str | None, address: str
) -> None:
    """A client's address is always an IP address (Kafka's InetAddress): text that is not one is refused, on
    every decision endpoint, rather than decided as a host no ACL names."""
    if field is None:
        body = {"principal": "User:a", "client_address": address, **body}
    else:
        request_context = body["input"]["requestContext"]  # type: ignore[index]
        request_context["clientAddress"] = f"/{address}"
    with serve.client(token=BROKER_TOKEN) as broker:
        response = broker.post(path, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "INVALID_REQUEST" and error.get("field") == (field or "$.client_address")
    assert "is not an IP address" in error["message"]


def test_malformed_json_and_http(serve: ServeProcess) -> None:
    with serve.client(token=BROKER_TOKEN) as broker:
        response = broker.post("/v1/authorize", content=b'{"principal": NaN}')
        assert response.status_code == 400 and response.json()["error"]["message"].startswith("malformed JSON")
        assert broker.get("/v1/nowhere").status_code == 404
        not_allowed = broker.get("/v1/authorize")
        assert not_allowed.status_code == 405 and not_allowed.headers["allow"] == "POST"
    host, port = serve.url("CLIENT").removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as raw:
        raw.sendall(b"GARBAGE / HTTP/9.9\r\n\r\n")
        answer = raw.recv(65536)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "INVALID_REQUEST"


def test_body_over_the_limit_is_refused(serve: ServeProcess) -> None:
    with serve.client(token=BROKER_TOKEN) as broker:
        response = broker.post("/v1/authorize", content=b" " * (16 * 1024 * 1024 + 10))
    assert response.status_code == 413
    assert "request.max.bytes" in response.json()["error"]["message"]


def test_keep_alive_and_pipelining(serve: ServeProcess) -> None:
    body = json.dumps(
        {
            "principal": "User:admin",
            "client_address": "1.2.3.4",
            "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}],
        }
    ).encode()
    one = (
        b"POST /v1/authorize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        + BROKER_TOKEN.encode()
        + b"\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )
    host, port = serve.url("CLIENT").removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as raw:
        raw.sendall(one * 5)  # five pipelined requests on one connection
        data = b""
        while data.count(b"HTTP/1.1 200 OK") < 5:
            chunk = raw.recv(65536)
            assert chunk, data
            data += chunk
    assert data.count(b'"results":["ALLOWED"]') == 5


def test_status_and_metrics_are_public_here(serve: ServeProcess) -> None:
    status = httpx.get(serve.url("CLIENT") + "/v1/status").json()
    assert status["ready"] is True and status["roles"] == ["broker", "controller"]
    metrics = httpx.get(serve.url("CLIENT") + "/metrics").text
    assert "acls_total_count" in metrics and "kraft_acl_decisions_total" in metrics
    assert httpx.get(serve.url("CLIENT") + "/v1/openapi.json").json()["openapi"] == "3.1.0"


def test_alice_may_ask_about_herself_only(serve: ServeProcess) -> None:
    with serve.client(token=ALICE_TOKEN) as alice:
        assert _authorize(alice, "User:alice", ("READ", "TOPIC", "x")).status_code == 200
        other = _authorize(alice, "User:bob", ("READ", "TOPIC", "x"))
    assert other.status_code == 403
    assert other.json()["error"]["field"] == "$.principal"
