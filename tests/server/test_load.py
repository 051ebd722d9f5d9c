"""A bounded load test on loopback: 16 keep-alive clients authorize while another client creates and deletes ACLs.

Every answer must be exactly the decision of the state at a batch boundary of the log (its reported
offset), never a state in between: each write is KIP-801's DENY-then-ALLOW pair in one batch, so a
reader that saw half a batch would see bob allowed on `foo`. Zero errors, and resident memory flat.
"""

from __future__ import annotations

import threading
from pathlib import Path

from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.model.acls import (
    AclOperation,
    AclPermissionType,
    AuthorizationResult,
    PatternType,
    ResourceType,
    StandardAcl,
)
from tests.server.serve_process import ADMIN_TOKEN, BROKER_TOKEN, ServeProcess, base_properties

CLIENTS = 16
REQUESTS_PER_CLIENT = 150
WRITES = 60
TOPICS = ["foo", "bar", "foo-1", "baz"]


def _pair(n: int) -> list[StandardAcl]:
    """DENY bob READ on foo, then ALLOW bob READ on every topic (`*`), for principal set n."""
    principal = f"User:bob{n % 4}"
    deny = StandardAcl(
        ResourceType.TOPIC, "foo", PatternType.LITERAL, principal, "*", AclOperation.READ, AclPermissionType.DENY
    )
    allow = StandardAcl(
        ResourceType.TOPIC, "*", PatternType.LITERAL, principal, "*", AclOperation.READ, AclPermissionType.ALLOW
    )
    return [deny, allow]


def _json(acl: StandardAcl) -> dict[str, str]:
    return {
        "resource_type": acl.resource_type.name,
        "resource_name": acl.resource_name,
        "pattern_type": acl.pattern_type.name,
        "principal": acl.principal,
        "host": acl.host,
        "operation": acl.operation.name,
        "permission_type": acl.permission_type.name,
    }


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_readers_see_only_batch_boundaries_under_writes(tmp_path: Path) -> None:
    states: dict[int, frozenset[StandardAcl]] = {-1: frozenset()}
    answers: list[tuple[int, str, list[str]]] = []
    errors: list[str] = []
    done = threading.Event()
    with ServeProcess(tmp_path, base_properties(tmp_path, log_format="text")).start() as serve:
        assert serve.proc is not None
        with serve.client(token=BROKER_TOKEN) as warm:  # warm up before the first memory reading
            for _ in range(200):
                warm.post("/v1/authorize", json=_body("User:bob0"))
        rss_before = _rss_kb(serve.proc.pid)

        def reader(k: int) -> None:
            with serve.client(token=BROKER_TOKEN) as client:
                for i in range(REQUESTS_PER_CLIENT):
                    principal = f"User:bob{(k + i) % 4}"
                    response = client.post("/v1/authorize", json=_body(principal))
                    if response.status_code != 200:
                        errors.append(f"{response.status_code} {response.text}")
                        continue
                    got = response.json()
                    answers.append((got["offset"], principal, got["results"]))

        def writer() -> None:
            current: set[StandardAcl] = set()
            with serve.client(token=ADMIN_TOKEN) as admin:
                for n in range(WRITES):
                    pair = _pair(n)
                    if pair[0] in current:
                        filters = [{k: v for k, v in _json(acl).items()} for acl in pair]
                        response = admin.post("/v1/acls/delete", json={"filters": filters})
                        current -= set(pair)
                    else:
                        response = admin.post("/v1/acls/create", json={"acls": [_json(acl) for acl in pair]})
                        current |= set(pair)
                    if response.status_code != 200:
                        errors.append(f"write {response.status_code} {response.text}")
                        break
                    states[response.json()["offset"]] = frozenset(current)
            done.set()

        threads = [threading.Thread(target=reader, args=(k,)) for k in range(CLIENTS)]
        threads.append(threading.Thread(target=writer))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
        rss_after = _rss_kb(serve.proc.pid)
    assert done.is_set() and not errors, errors[:5]
    assert len(answers) == CLIENTS * REQUESTS_PER_CLIENT
    seen_offsets = {offset for offset, _, _ in answers}
    assert seen_offsets <= set(states), f"answers from offsets that are no batch boundary: {seen_offsets - set(states)}"
    assert len(seen_offsets) > 3, "the readers saw too few states for the test to mean anything"
    for offset, principal, results in answers:
        assert results == _expected(states[offset], principal), (offset, principal)
    print(
        f"serve RSS before {rss_before} kB, after {rss_after} kB ({len(answers)} decisions, {len(states) - 1} writes)"
    )
    assert rss_after - rss_before < 30_000, f"resident memory grew from {rss_before} to {rss_after} kB"


def _body(principal: str) -> dict[str, object]:
    return {
        "principal": principal,
        "client_address": "10.0.0.1",
        "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": t} for t in TOPICS],
    }


def _expected(acls: frozenset[StandardAcl], principal: str) -> list[str]:
    authorizer = StandardAuthorizer()
    authorizer.load_snapshot({f"id{i}": acl for i, acl in enumerate(sorted(acls))})
    authorizer.complete_initial_load()
    ctx = RequestContext.of(principal, "10.0.0.1")
    results = authorizer.authorize(ctx, [Action(AclOperation.READ, ResourceType.TOPIC, t) for t in TOPICS])
    return ["ALLOWED" if r is AuthorizationResult.ALLOWED else "DENIED" for r in results]
