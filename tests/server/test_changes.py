"""The change feed (GET /v1/changes) of a real serve process: a poll is answered at once when ACLs changed past
`after`, woken by an ACL change while it waits, a heartbeat otherwise; one instance id per process; broker principals
only; bad parameters named; 503 before the initial load; waiting polls answered at shutdown. And the `rules` flag of
POST /v1/authorize, which gives the plugin the audit rule of the decisions it remembers.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.serve_process import ADMIN_TOKEN, ALICE_TOKEN, BROKER_TOKEN, ServeProcess, base_properties


def acl(name: str, principal: str = "User:alice", permission: str = "ALLOW") -> dict[str, str]:
    return {
        "resource_type": "TOPIC",
        "resource_name": name,
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": "READ",
        "permission_type": permission,
    }


def poll(serve: ServeProcess, query: str = "", token: str = BROKER_TOKEN, listener: str = "CLIENT") -> httpx.Response:
    with serve.client(listener=listener, token=token) as client:
        return client.get("/v1/changes" + query, timeout=90.0)


def create(serve: ServeProcess, *acls: dict[str, str]) -> int:
    """Create ACLs as the admin; the offset of their batch."""
    with serve.client(token=ADMIN_TOKEN) as admin:
        body = admin.post("/v1/acls/create", json={"acls": list(acls)}).json()
    assert all(r["error_code"] == 0 for r in body["results"]), body
    return int(body["offset"])


def test_a_poll_answers_at_once_with_the_newest_acl_change(serve: ServeProcess) -> None:
    offset = create(serve, acl("feed-a"))
    first = poll(serve, "?after=-1&wait_ms=60000")
    assert first.status_code == 200, first.text
    body = first.json()
    assert set(body) == {"instance", "acl_offset", "acl_applied_us", "applied_offset", "held_us"}
    assert 0 <= body["held_us"] < 5_000_000, "answered at once, not held"
    assert body["acl_offset"] >= offset and body["applied_offset"] >= body["acl_offset"]
    assert body["acl_applied_us"] > 1_700_000_000_000_000  # serve's wall clock, microseconds
    assert poll(serve).json()["instance"] == body["instance"], "one instance id per process"


def test_a_waiting_poll_is_woken_by_an_acl_change(serve: ServeProcess) -> None:
    known = poll(serve).json()["acl_offset"]
    answers: list[dict[str, Any]] = []
    waiting = threading.Thread(target=lambda: answers.append(poll(serve, f"?after={known}&wait_ms=60000").json()))
    waiting.start()
    offset = create(serve, acl("feed-wake"))
    waiting.join(45)  # the poll asked to wait 60 s: only the change can answer it before that
    assert not waiting.is_alive(), "the poll was not woken by the ACL change"
    assert answers[0]["acl_offset"] == offset


def test_a_quiet_poll_is_a_heartbeat(serve: ServeProcess) -> None:
    now = poll(serve).json()
    again = poll(serve, f"?after={now['acl_offset']}&wait_ms=50&instance={now['instance']}").json()
    assert again.pop("held_us") >= 40_000, "held for wait_ms (50 ms, to the event loop timer's precision), and says so"
    assert (again["instance"], again["acl_offset"]) == (now["instance"], now["acl_offset"])
    assert again["applied_offset"] >= now["applied_offset"]


@pytest.mark.parametrize("known", ["an offset past this serve's", "another instance"])
def test_a_poll_for_a_state_this_serve_does_not_have_is_answered_at_once(serve: ServeProcess, known: str) -> None:
    """A plugin whose URL now reaches another serve (a proxy, a DNS name) knows an offset or an instance this serve
    never had: it learns so at once, not a heartbeat later (60 s asked here)."""
    now = poll(serve).json()
    after, instance = now["acl_offset"], now["instance"]
    if known == "another instance":
        instance = "0" * 32
    else:
        after += 1_000
    started = time.monotonic()
    answer = poll(serve, f"?after={after}&wait_ms=60000&instance={instance}").json()
    assert time.monotonic() - started < 30 and answer["held_us"] < 30_000_000
    assert answer["instance"] == now["instance"] and answer["acl_offset"] == now["acl_offset"]


def test_only_broker_principals_follow_the_feed(serve: ServeProcess) -> None:
    refused = poll(serve, token=ALICE_TOKEN)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "AUTHORIZATION_FAILED"
    assert poll(serve, token="").status_code == 401


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?after=-2", "query.after"),
        ("?after=x", "query.after"),
        ("?after=1&after=2", "query.after"),
        ("?wait_ms=60001", "query.wait_ms"),
        ("?wait_ms=-1", "query.wait_ms"),
        ("?after=99999999999999999999999", "query.after"),
        ("?since=1", "query.since"),
        (f"?instance={'a' * 65}", "query.instance"),
    ],
)
def test_bad_parameters_are_named(serve: ServeProcess, query: str, field: str) -> None:
    refused = poll(serve, query)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["field"] == field


def test_not_ready_before_the_initial_load_and_answered_at_shutdown(tmp_path: Path, large_log: Path) -> None:
    """Early-start listener while a 1M-record log loads: 503; a poll waiting at SIGTERM is answered, not dropped."""
    process = ServeProcess(tmp_path, base_properties(tmp_path, large_log)).start(wait_ready=False)
    try:
        early = poll(process, listener="CONTROLLER")
        assert early.status_code == 503 and early.json()["error"]["code"] == "AUTHORIZER_NOT_READY", early.text
        process.wait_for("ready:", 300)
        known = poll(process).json()["acl_offset"]
        answers: list[httpx.Response] = []
        waiting = threading.Thread(target=lambda: answers.append(poll(process, f"?after={known}&wait_ms=60000")))
        waiting.start()
        time.sleep(1.0)  # let the poll reach serve and wait there
    finally:
        assert process.stop() == 0, process.output()
    waiting.join(45)
    assert not waiting.is_alive() and answers[0].status_code == 200, "answered at shutdown, not after 60 s"


def _decide(serve: ServeProcess, rules: str | None, *names: str, explain: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "principal": "User:bob",
        "client_address": "10.0.0.1",
        "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": n} for n in names],
        "explain": explain,
    }
    if rules is not None:
        body["rules"] = rules
    with serve.client(token=BROKER_TOKEN) as broker:
        answer = broker.post("/v1/authorize", json=body)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_rules_give_the_audit_rule_of_the_decisions_asked(serve: ServeProcess) -> None:
    create(serve, acl("rules-ok", "User:bob"), acl("rules-no", "User:bob", "DENY"))
    allow = ("MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=rules-ok, patternType=LITERAL, "
             "principal=User:bob, host=*, operation=READ, permissionType=ALLOW))")  # fmt: skip
    deny = allow.replace("rules-ok", "rules-no").replace("ALLOW", "DENY")
    assert "rule_texts" not in _decide(serve, None, "rules-ok")
    denied = _decide(serve, "denied", "rules-ok", "rules-no", "rules-none")
    assert denied["results"] == ["ALLOWED", "DENIED", "DENIED"]
    assert denied["rule_texts"] == [None, deny, "DefaultDeny"]
    assert _decide(serve, "all", "rules-ok", "rules-no", "rules-none")["rule_texts"] == [allow, deny, "DefaultDeny"]
    explained = _decide(serve, "denied", "rules-ok", "rules-no", explain=True)  # the explain path gives them too
    assert explained["rule_texts"] == [None, deny] and [r["text"] for r in explained["rules"]] == [allow, deny]
    with serve.client(token=BROKER_TOKEN) as broker:
        bad = broker.post("/v1/authorize", json={"principal": "User:bob", "client_address": "1.1.1.1", "actions": [],
                                                  "rules": "some"})  # fmt: skip
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "$.rules"


def test_rules_of_a_large_call_are_found_on_the_rules_thread_and_agree(serve: ServeProcess) -> None:
    """A body above 64 KiB is decoded in slices and its rules found on the rules thread: the same texts, in order,
    as the small call's, for every action."""
    create(serve, acl("big-ok", "User:bob"), acl("big-no", "User:bob", "DENY"))
    names = ("big-ok", "big-no", "big-none") * 1000  # about 90 KB of JSON
    small = _decide(serve, "all", "big-ok", "big-no", "big-none")["rule_texts"]
    large = _decide(serve, "all", *names)
    assert large["rule_texts"] == small * 1000
    denied = _decide(serve, "denied", *names)
    assert denied["results"] == ["ALLOWED", "DENIED", "DENIED"] * 1000
    assert denied["rule_texts"] == [None, *small[1:]] * 1000
    explained = _decide(serve, "denied", *names, explain=True)  # explain.max.actions (10,000) allows 3,000
    assert explained["rule_texts"] == denied["rule_texts"] and len(explained["rules"]) == 3000
