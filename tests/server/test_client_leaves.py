"""A client that closes its connection has left: the work serve was doing for it stops (an abandoned explain must
not run on for seconds, taking the GIL from every broker's decisions). Observed through the decision log's line
counter: an explain call writes one line per action as it goes. And a broker's decision (logged too) does not wait
for that explain."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.raw_http import Raw, post
from tests.server.serve_process import ADMIN_TOKEN, BROKER_TOKEN, ServeProcess, alice_reads, base_properties

ACTIONS = 10_000
HOSTS = 400  # ACLs on the one topic every action asks about: finding a rule walks all of them


@pytest.fixture(scope="module")
def explaining(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    work: Path = tmp_path_factory.mktemp("leaves")
    props = base_properties(work, decision_log_file=str(work / "decisions.jsonl"))
    with ServeProcess(work / "serve", props).start() as serve, serve.client(token=ADMIN_TOKEN) as admin:
        acls = [
            {
                "resource_type": "TOPIC",
                "resource_name": "orders",
                "pattern_type": "LITERAL",
                "principal": "User:alice",
                "host": f"10.1.{i // 250}.{i % 250}",
                "operation": "READ",
                "permission_type": "ALLOW",
            }
            for i in range(HOSTS)
        ]
        assert admin.post("/v1/acls/create", json={"acls": acls}).status_code == 200
        yield serve


def _explain_body() -> dict[str, object]:
    action = {"operation": "READ", "resource_type": "TOPIC", "resource_name": "orders"}
    return {"principal": "User:alice", "client_address": "10.9.9.9", "explain": True, "actions": [action] * ACTIONS}


def _lines(serve: ServeProcess) -> int:
    """Decisions the decision log has counted so far, whatever their fate (written, skipped, dropped)."""
    text = serve.metrics_text(ADMIN_TOKEN)
    return sum(int(float(v)) for v in re.findall(r"^kraft_acl_decision_log_lines_total\{[^}]*\} (\S+)$", text, re.M))


def _settled(serve: ServeProcess) -> int:
    """The line count once it has stopped moving for a second."""
    last, still = _lines(serve), 0
    while still < 4:
        time.sleep(0.25)
        now = _lines(serve)
        still = still + 1 if now == last else 0
        last = now
    return last


def test_an_answered_explain_logs_every_action(explaining: ServeProcess) -> None:
    before = _settled(explaining)
    with Raw(explaining.url("CLIENT"), timeout=300) as raw:
        raw.send(post("/v1/authorize", _explain_body(), BROKER_TOKEN))
        assert raw.answer().status == 200
    assert _settled(explaining) - before == ACTIONS


def test_an_abandoned_explain_stops(explaining: ServeProcess) -> None:
    before = _settled(explaining)
    with Raw(explaining.url("CLIENT")) as raw:
        raw.send(post("/v1/authorize", _explain_body(), BROKER_TOKEN))
        deadline = time.monotonic() + 30
        while _lines(explaining) == before:  # the work has begun
            assert time.monotonic() < deadline, "the explain never started"
            time.sleep(0.02)
    logged = _settled(explaining) - before
    assert 0 < logged < ACTIONS, logged
    assert alice_reads(explaining) == "DENIED"  # serve carries on (no ACL for 10.0.0.1: denied)


def test_a_brokers_logged_decision_does_not_wait_for_an_explain(explaining: ServeProcess) -> None:
    """With the decision log on, every decision is found with its rule: a broker's one-action call is answered at
    once while a 10,000-action explain is still being worked through (it used to queue behind it)."""
    before = _settled(explaining)
    with Raw(explaining.url("CLIENT"), timeout=300) as raw:
        raw.send(post("/v1/authorize", _explain_body(), BROKER_TOKEN))
        deadline = time.monotonic() + 30
        while _lines(explaining) == before:
            assert time.monotonic() < deadline, "the explain never started"
            time.sleep(0.02)
        assert alice_reads(explaining) == "DENIED"
        assert _lines(explaining) - before < ACTIONS, "the broker's decision was answered only after the explain"
        assert raw.answer().status == 200
    assert _settled(explaining) - before == ACTIONS + 1
