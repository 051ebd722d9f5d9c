"""Adversarial, class 1 (one host rule): every decision serve makes about its own API uses the client address in
Kafka's form, on IPv4, IPv6 and dual-stack (`[::]`) listeners alike: a host-specific DENY on the cluster applies
whichever listener the caller comes through, an IPv4-mapped peer (`::ffff:127.0.0.1`) is `127.0.0.1`, and IPv6
is Java's getHostAddress() text (`0:0:0:0:0:0:0:1`). Also class 5's printed IPv6 URLs (brackets)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.serve_process import ADMIN_TOKEN, ALICE_TOKEN, ServeProcess, base_properties, free_port

BOB_TOKEN = "bob-token-0123456789abcdefgh"
V6_LOOPBACK = "0:0:0:0:0:0:0:1"


def _acl(principal: str, operation: str, permission: str, host: str = "*") -> dict[str, str]:
    return {
        "resource_type": "CLUSTER",
        "resource_name": "kafka-cluster",
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission,
    }


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A serve on 127.0.0.1, [::1] and [::]: alice is denied DESCRIBE and ALTER from ::1, bob from 127.0.0.1."""
    work: Path = tmp_path_factory.mktemp("stacks")
    props = base_properties(work)
    tokens = Path(props["auth.token.file"])
    tokens.write_text(tokens.read_text() + f"User:bob {BOB_TOKEN}\n")
    props["listeners"] = (
        f"CONTROLLER://127.0.0.1:{free_port()},CLIENT://127.0.0.1:{free_port()},"
        f"VSIX://[::1]:{free_port()},DUAL://[::]:{free_port()}"
    )
    with ServeProcess(work, props).start() as serve:
        acls = [_acl(p, op, "ALLOW") for p in ("User:alice", "User:bob") for op in ("DESCRIBE", "ALTER")]
        acls += [_acl("User:alice", op, "DENY", V6_LOOPBACK) for op in ("DESCRIBE", "ALTER")]
        acls += [_acl("User:bob", op, "DENY", "127.0.0.1") for op in ("DESCRIBE", "ALTER")]
        with serve.client(token=ADMIN_TOKEN) as admin:
            assert admin.post("/v1/acls/create", json={"acls": acls}).status_code == 200
        yield serve


def _dual(serve: ServeProcess, host: str) -> str:
    port = serve.url("DUAL").rsplit(":", 1)[1]
    return f"http://{host}:{port}"


ENDPOINTS: list[tuple[str, str, Any]] = [
    ("POST", "/v1/acls/describe", {}),
    ("GET", "/v1/acls/image", None),
    ("POST", "/v1/acls/history", {"ids": ["AAAAAAAAAAAAAAAAAAAAAA"]}),
    ("POST", "/v1/acls/create", {"acls": []}),
    ("POST", "/v1/acls/delete", {"filters": []}),
    ("POST", "/v1/acls/import", {"acls": [], "dry_run": True}),
]


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS, ids=[e[1] for e in ENDPOINTS])
def test_a_host_specific_deny_applies_on_every_stack(stacks: ServeProcess, method: str, path: str, body: Any) -> None:
    routes = {
        "ipv4": stacks.url("CLIENT"),
        "ipv6": stacks.url("VSIX"),
        "dual over ipv4": _dual(stacks, "127.0.0.1"),
        "dual over ipv6": _dual(stacks, "[::1]"),
    }
    seen = {}
    for route, base in routes.items():
        for who, token in (("alice", ALICE_TOKEN), ("bob", BOB_TOKEN)):
            answer = httpx.request(
                method, base + path, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30
            )
            seen[(route, who)] = answer.status_code
    # alice is denied from ::1 only, bob from 127.0.0.1 only; a dual-stack listener sees IPv4 as 127.0.0.1
    assert seen == {
        ("ipv4", "alice"): 200,
        ("ipv4", "bob"): 403,
        ("ipv6", "alice"): 403,
        ("ipv6", "bob"): 200,
        ("dual over ipv4", "alice"): 200,
        ("dual over ipv4", "bob"): 403,
        ("dual over ipv6", "alice"): 403,
        ("dual over ipv6", "bob"): 200,
    }


def test_the_refusal_and_the_audit_line_name_the_host_in_kafkas_form(stacks: ServeProcess) -> None:
    answer = httpx.post(
        stacks.url("VSIX") + "/v1/acls/describe",
        json={},
        headers={"Authorization": f"Bearer {ALICE_TOKEN}"},
        timeout=30,
    )
    assert answer.json()["error"]["message"] == f"User:alice from {V6_LOOPBACK} is not allowed DESCRIBE on the cluster"
    line = f"Principal = User:alice is Denied operation = DESCRIBE from host = {V6_LOOPBACK} on resource = "
    assert any(line in err and "for request = DescribeAcls" in err for err in stacks.stderr), stacks.output()


def test_ipv6_listener_urls_are_printed_with_brackets(stacks: ServeProcess) -> None:
    port = stacks.url("VSIX").rsplit(":", 1)[1]
    assert any(f"listening on VSIX http://[::1]:{port}" in line for line in stacks.stdout), stacks.output()
    assert any("listening on DUAL http://[::]:" in line for line in stacks.stdout), stacks.output()


def test_decisions_asked_for_an_ipv4_mapped_client_address_use_the_ipv4_text(stacks: ServeProcess) -> None:
    deny = {**_acl("User:carol", "READ", "DENY", "10.0.0.1"), "resource_type": "TOPIC", "resource_name": "t"}
    allow = {**deny, "host": "*", "permission_type": "ALLOW"}
    with stacks.client(token=ADMIN_TOKEN) as admin:
        assert admin.post("/v1/acls/create", json={"acls": [deny, allow]}).status_code == 200
    with stacks.client(token=ADMIN_TOKEN) as http:
        results = [
            http.post(
                "/v1/authorize",
                json={
                    "principal": "User:carol",
                    "client_address": address,
                    "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}],
                },
            ).json()["results"][0]
            for address in ("10.0.0.1", "::ffff:10.0.0.1", "::ffff:a00:1", "10.0.0.2")
        ]
    assert results == ["DENIED", "DENIED", "DENIED", "ALLOWED"]
