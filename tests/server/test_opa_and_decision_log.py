"""The OPA-compatible decision endpoint (both input shapes of the opa-kafka-plugin) and the decision log."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.serve_process import (
    ADMIN_TOKEN,
    ALICE_READ_ORDERS,
    ALICE_TOKEN,
    BROKER_TOKEN,
    ServeProcess,
    base_properties,
)

ACLS = [
    ALICE_READ_ORDERS,
    {
        "resource_type": "TOPIC",
        "resource_name": "pay-",
        "pattern_type": "PREFIXED",
        "principal": "User:alice",
        "host": "10.0.0.9",
        "operation": "WRITE",
        "permission_type": "ALLOW",
    },
]


def _opa(
    principal: str,
    address: str,
    operation: str,
    rtype: str,
    name: str,
    pattern: str = "LITERAL",
    header_key: str = "name",
) -> dict[str, object]:
    kind, _, who = principal.partition(":")
    return {
        "input": {
            "requestContext": {
                "clientAddress": address,
                "clientInformation": {"softwareName": "unknown", "softwareVersion": "unknown"},
                "connectionId": "127.0.0.1:9092-127.0.0.1:58864-0",
                "header": {
                    header_key: {
                        "clientId": "rdkafka",
                        "correlationId": 5,
                        "requestApiKey": 3,
                        "requestApiVersion": 12,
                    },
                    "headerVersion": 2,
                },
                "listenerName": "SASL_PLAINTEXT",
                "principal": {"name": who, "principalType": kind},
                "securityProtocol": "SASL_PLAINTEXT",
            },
            "action": {
                "logIfAllowed": True,
                "logIfDenied": True,
                "operation": operation,
                "resourcePattern": {"name": name, "patternType": pattern, "resourceType": rtype, "unknown": False},
                "resourceReferenceCount": 1,
            },
        }
    }


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A serve with a decision log and two ACLs."""
    work: Path = tmp_path_factory.mktemp("opa")
    props = base_properties(work, decision_log_file=str(work / "decisions.jsonl"))
    with ServeProcess(work, props).start() as serve, serve.client(token=ADMIN_TOKEN) as admin:
        admin.post("/v1/acls/create", json={"acls": ACLS})
        yield serve


@pytest.mark.parametrize(
    ("address", "header_key"),
    [("/10.0.0.9", "name"), ("10.0.0.9", "data"), ("broker-host/10.0.0.9", "name")],
    ids=["plugin-1.5.x", "plugin-readme", "hostname-form"],
)
def test_opa_shapes_decide_like_authorize(logged: ServeProcess, address: str, header_key: str) -> None:
    with logged.client(token=BROKER_TOKEN) as broker:
        cases = [
            (_opa("User:alice", address, "READ", "TOPIC", "orders", header_key=header_key), True),
            (_opa("User:alice", address, "DESCRIBE", "TOPIC", "orders", header_key=header_key), True),
            (_opa("User:alice", address, "WRITE", "TOPIC", "orders", header_key=header_key), False),
            (_opa("User:alice", address, "WRITE", "TOPIC", "pay-eu", header_key=header_key), True),
            (_opa("User:bob", address, "READ", "TOPIC", "orders", header_key=header_key), False),
            (_opa("User:admin", address, "ALTER", "CLUSTER", "kafka-cluster", header_key=header_key), True),
            # the plugin's authorizeByResourceType: PREFIXED with the empty name
            (_opa("User:alice", address, "WRITE", "TOPIC", "", "PREFIXED", header_key), True),
            (_opa("User:bob", address, "WRITE", "TOPIC", "", "PREFIXED", header_key), False),
        ]
        for body, allowed in cases:
            response = broker.post("/v1/data/kafka/authz/allow", json=body)
            assert response.status_code == 200, response.text
            assert response.json() == {"result": allowed}, body


def test_opa_needs_a_broker_principal_and_a_well_formed_input(logged: ServeProcess) -> None:
    with logged.client(token=ALICE_TOKEN) as alice:
        assert (
            alice.post(
                "/v1/data/kafka/authz/allow", json=_opa("User:alice", "/1.2.3.4", "READ", "TOPIC", "x")
            ).status_code
            == 403
        )
    with logged.client(token=BROKER_TOKEN) as broker:
        bad = broker.post("/v1/data/kafka/authz/allow", json={"input": {"action": {}}})
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "$.input.action"


def test_decision_log_has_one_line_per_decision_with_the_deciding_acl(logged: ServeProcess) -> None:
    with logged.client(token=BROKER_TOKEN) as broker, logged.client(token=ADMIN_TOKEN) as admin:
        ids = {a["resource_name"]: a["id"] for a in admin.post("/v1/acls/describe", json={}).json()["acls"]}
        body = {
            "principal": "User:alice",
            "client_address": "10.0.0.9",
            "listener": "CLIENT",
            "request": "Produce",
            "actions": [
                {"operation": "WRITE", "resource_type": "TOPIC", "resource_name": "pay-1"},
                {"operation": "DELETE", "resource_type": "TOPIC", "resource_name": "orders"},
            ],
        }
        offset = broker.post("/v1/authorize", json=body).json()["offset"]
    lines = _decision_lines(Path(logged.properties["decision.log.file"]), lambda d: d.get("resource_name") == "orders")
    last = lines[-2:]
    assert [(d["operation"], d["resource_name"], d["result"], d["rule"], d["acl_id"]) for d in last] == [
        ("WRITE", "pay-1", "ALLOWED", "MatchingAcl", ids["pay-"]),
        ("DELETE", "orders", "DENIED", "DefaultDeny", None),
    ]
    assert {d["principal"] for d in last} == {"User:alice"} and {d["host"] for d in last} == {"10.0.0.9"}
    assert {d["listener"] for d in last} == {"CLIENT"} and {d["request"] for d in last} == {"Produce"}
    assert {d["offset"] for d in last} == {offset}
    assert all(d["time"].endswith("Z") and d["ts_ms"] > 1_700_000_000_000 for d in last)


def _decision_lines(
    path: Path, last_is: Callable[[dict[str, Any]], bool], timeout: float = 10.0
) -> list[dict[str, Any]]:
    """The decision log's lines once the last one is the expected one (a writer thread appends them)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        if (lines and last_is(lines[-1])) or time.monotonic() > deadline:
            return lines
        time.sleep(0.02)
