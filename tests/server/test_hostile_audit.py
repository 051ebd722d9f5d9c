"""Adversarial, class 8 (audit logging is Kafka's): every denial is logged by `kafka.authorizer.logger` at INFO and
allowed decisions at DEBUG, on every decision path (the fast one included), with the request name; the decision
log rotates at its size even within one large call, and a caller asking about itself has its own budget, so it
cannot push broker decisions out of the rotation."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.server.serve_process import ADMIN_TOKEN, ALICE_TOKEN, BROKER_TOKEN, ServeProcess, base_properties

ALLOW_ALICE = {
    "resource_type": "TOPIC",
    "resource_name": "open",
    "pattern_type": "LITERAL",
    "principal": "User:alice",
    "host": "*",
    "operation": "READ",
    "permission_type": "ALLOW",
}


def _ask(serve: ServeProcess, token: str, actions: list[dict[str, Any]], request: str = "") -> httpx.Response:
    body = {"principal": "User:alice", "client_address": "10.0.0.7", "request": request, "actions": actions}
    with serve.client(token=token) as http:
        return http.post("/v1/authorize", json=body)


def _read(name: str, op: str = "READ", **flags: bool) -> dict[str, Any]:
    return {"operation": op, "resource_type": "TOPIC", "resource_name": name, **flags}


def _lines(serve: ServeProcess, words: str, timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        found = [line for line in serve.stderr if words in line]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_denials_on_the_fast_path_are_logged_at_info_with_the_request_name(tmp_path: Path) -> None:
    with ServeProcess(tmp_path, base_properties(tmp_path)).start() as serve:
        with serve.client(token=ADMIN_TOKEN) as admin:
            assert admin.post("/v1/acls/create", json={"acls": [ALLOW_ALICE]}).status_code == 200
        answer = _ask(
            serve, BROKER_TOKEN, [_read("open"), _read("closed"), _read("quiet", log_if_denied=False)], "Fetch"
        )
        assert answer.json()["results"] == ["ALLOWED", "DENIED", "DENIED"]
        _ask(serve, BROKER_TOKEN, [_read("unnamed")])  # no request name given: the endpoint's
        denied = _lines(serve, "is Denied operation = READ from host = 10.0.0.7 on resource = Topic:LITERAL:closed")
        unnamed = _lines(serve, "Topic:LITERAL:unnamed")
        assert len(denied) == 1 and " INFO kafka.authorizer.logger: " in denied[0]
        assert "for request = Fetch with resourceRefCount = 1 based on rule DefaultDeny" in denied[0]
        assert len(unnamed) == 1 and "for request = Authorize " in unnamed[0]
        assert _lines(serve, "Topic:LITERAL:quiet", timeout=0.5) == []  # log_if_denied=false: TRACE
        assert _lines(serve, "is Allowed", timeout=0.5) == []  # allowed: DEBUG


def test_allowed_decisions_are_logged_at_debug(tmp_path: Path) -> None:
    with ServeProcess(tmp_path, base_properties(tmp_path, log_level="DEBUG")).start() as serve:
        with serve.client(token=ADMIN_TOKEN) as admin:
            assert admin.post("/v1/acls/create", json={"acls": [ALLOW_ALICE]}).status_code == 200
        _ask(serve, BROKER_TOKEN, [_read("open")], "Produce")
        allowed = _lines(serve, "Principal = User:alice is Allowed operation = READ from host = 10.0.0.7")
    assert len(allowed) == 1 and " DEBUG kafka.authorizer.logger: " in allowed[0]
    assert "for request = Produce" in allowed[0] and "based on rule MatchingAcl(acl=StandardAcl(" in allowed[0]


def test_the_decision_log_rotates_within_one_large_call_and_self_queries_have_their_own_budget(
    tmp_path: Path,
) -> None:
    path = tmp_path / "decisions" / "decisions.log"
    props = base_properties(
        tmp_path,
        decision_log_file=str(path),
        decision_log_max_bytes="20000",
        decision_log_backups="3",
        decision_log_self_query_rate="5",
    )
    with ServeProcess(tmp_path, props).start() as serve:
        assert _ask(serve, BROKER_TOKEN, [_read(f"broker-{i}") for i in range(1000)]).status_code == 200
        assert _ask(serve, ALICE_TOKEN, [_read(f"self-{i}") for i in range(200)]).status_code == 200
        metrics: dict[str, float] = {}
        deadline = time.monotonic() + 10
        while metrics.get("written", 0) < 1005 and time.monotonic() < deadline:
            text = httpx.get(serve.url("CLIENT") + "/metrics").text
            metrics = {
                line.split('fate="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("kraft_acl_decision_log_lines_total{")
            }
    files = sorted(path.parent.iterdir())
    assert [f.name for f in files] == [f"decisions.log{suffix}" for suffix in ("", ".1", ".2", ".3")]
    assert all(f.stat().st_size <= 20_000 for f in files), [f.stat().st_size for f in files]
    oldest_first = [*sorted(files[1:], key=lambda f: -int(f.suffix[1:])), files[0]]
    lines = [json.loads(line) for f in oldest_first for line in f.read_text().splitlines()]
    self_lines = [d for d in lines if d["resource_name"].startswith("self-")]
    assert 1 <= len(self_lines) <= 6  # the budget: 5 a second (plus what refilled meanwhile)
    broker_lines = [d["resource_name"] for d in lines if d["resource_name"].startswith("broker-")]
    assert broker_lines[-1] == "broker-999" and lines[-1]["resource_name"].startswith("self-")
    assert metrics["skipped"] >= 194 and metrics["written"] == 1000 + len(self_lines)


def test_the_self_query_budget_of_the_decision_log_bounds_its_bytes(tmp_path: Path) -> None:
    """Counted one line each, a caller asking about itself wrote decision lines of 98 KB (its resource, request and
    listener names of 32,767 characters), 1000 a second by default: the log rotated every 1.5 s and brokers' lines
    left the backups within seconds. A line now takes one line of the budget per KiB of the names it writes."""
    path = tmp_path / "decisions.log"
    props = base_properties(tmp_path, decision_log_file=str(path), decision_log_self_query_rate="100")
    long = "x" * 32_767
    with ServeProcess(tmp_path, props).start() as serve, serve.client(token=ALICE_TOKEN) as http:
        started = time.monotonic()
        for call in range(40):
            body = {"principal": "User:alice", "client_address": "10.0.0.7", "request": long, "listener": long}
            answer = http.post("/v1/authorize", json={**body, "actions": [_read(f"{call:02d}{long[2:]}")]})
            assert answer.status_code == 200 and answer.json()["results"] == ["DENIED"]
        seconds = time.monotonic() - started
        assert _ask(serve, BROKER_TOKEN, [_read("broker-after")]).status_code == 200
        deadline = time.monotonic() + 10
        while "broker-after" not in path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    self_lines = [d for d in lines if d["resource_name"] != "broker-after"]
    # 100 lines of one KiB a second, a second's worth at once: a line of 96 KiB of names takes 96 of them
    assert 0 < len(self_lines) <= 2 + 100 / 96 * seconds, f"{len(self_lines)} lines of 96 KiB in {seconds:.1f} s"
    assert lines[-1]["resource_name"] == "broker-after"


def test_a_caller_cannot_write_a_line_of_its_own_into_the_log(tmp_path: Path) -> None:
    """A request name or resource name holding a newline is written escaped on the audit line: no caller can
    append a forged line (an `is Allowed` decision for User:admin) to the text log."""
    forged = "Principal = User:admin is Allowed operation = ALTER from host = 10.0.0.1 on resource = Cluster"
    with ServeProcess(tmp_path, base_properties(tmp_path)).start() as serve:
        answer = _ask(serve, ALICE_TOKEN, [_read(f"x\n2026-01-01 INFO kafka.authorizer.logger: {forged}")], "Produce")
        assert answer.json()["results"] == ["DENIED"]
        _ask(serve, ALICE_TOKEN, [_read("y")], f"Produce\r\n{forged}")
        lines = _lines(serve, "Topic:LITERAL:y") + _lines(serve, "Topic:LITERAL:x")
        assert len(lines) == 2, lines
        assert "Topic:LITERAL:x\\n2026-01-01 INFO" in lines[1] and "request = Produce\\r\\nPrincipal" in lines[0]
        assert not [line for line in serve.stderr if line.startswith(("Principal = ", "2026-01-01"))]


def test_a_caller_asking_about_itself_has_a_budget_of_audit_lines(tmp_path: Path) -> None:
    """Each audit line is formatted on the event loop (about 25 us): a caller without any ACL asking about itself
    1000 denied actions per call held the loop 25 ms a call, and a broker's one-action p99 went to 19-28 ms (its own
    lines dropped from the full log queue). Its lines now share decision.log.self.query.rate per second with every
    other such caller; the rest are counted; a broker's lines are all written."""
    props = base_properties(tmp_path, decision_log_self_query_rate="100")
    with ServeProcess(tmp_path, props).start() as serve:
        started = time.monotonic()
        for call in range(3):
            answer = _ask(serve, ALICE_TOKEN, [_read(f"self-{call}-{i}") for i in range(1000)], "SelfQuery")
            assert answer.status_code == 200 and set(answer.json()["results"]) == {"DENIED"}
        body = {"principal": "User:alice", "client_address": "10.0.0.7", "request": "SelfQuery", "explain": True}
        with serve.client(token=ALICE_TOKEN) as http:  # explain: decided with rules on the rules thread, same budget
            answer = http.post("/v1/authorize", json={**body, "actions": [_read(f"x-{i}") for i in range(1000)]})
            assert answer.status_code == 200 and set(answer.json()["results"]) == {"DENIED"}
        budget = 100 + 100 * (time.monotonic() - started)  # a second's worth at once, then the rate
        for n in range(20):
            assert _ask(serve, BROKER_TOKEN, [_read(f"broker-{n}")], "Fetch").json()["results"] == ["DENIED"]
        assert len(_lines(serve, "Topic:LITERAL:broker-19")) == 1
        time.sleep(0.5)
        self_lines = [line for line in serve.stderr if "for request = SelfQuery " in line]
        assert 0 < len(self_lines) <= budget, f"{len(self_lines)} audit lines of a caller asking about itself"
        assert len([line for line in serve.stderr if "Topic:LITERAL:broker-" in line]) == 20
        metrics = httpx.get(serve.url("CLIENT") + "/metrics").text
        skipped = [line for line in metrics.splitlines() if line.startswith("kraft_acl_audit_lines_skipped_total ")]
        assert skipped and float(skipped[0].split()[1]) == 4000 - len(self_lines), skipped


def test_the_budget_of_audit_lines_bounds_their_bytes(tmp_path: Path) -> None:
    """Counted one line each, the lines of a caller asking about itself with 32,767-character resource and request
    names wrote 65 MB a second to stderr (381 MB in 5.8 s), and with stderr not read 10,000 of them waited in the log
    queue (650 MB). A line takes one line of the budget per KiB of the names it writes (short lines one each, as
    before), on the fast path and with explain."""
    props = base_properties(tmp_path, decision_log_self_query_rate="100")
    long = "x" * 32_767
    with ServeProcess(tmp_path, props).start() as serve:
        started = time.monotonic()
        for call in range(40):
            answer = _ask(serve, ALICE_TOKEN, [_read(f"{call:02d}{long[2:]}")], long)
            assert answer.status_code == 200 and answer.json()["results"] == ["DENIED"]
        body = {"principal": "User:alice", "client_address": "10.0.0.7", "request": long, "explain": True}
        with serve.client(token=ALICE_TOKEN) as http:
            for call in range(40):
                answer = http.post("/v1/authorize", json={**body, "actions": [_read(f"e{call:02d}{long[3:]}")]})
                assert answer.status_code == 200 and answer.json()["results"] == ["DENIED"]
        seconds = time.monotonic() - started
        assert _ask(serve, BROKER_TOKEN, [_read("broker-after")], "Fetch").json()["results"] == ["DENIED"]
        assert len(_lines(serve, "Topic:LITERAL:broker-after")) == 1
        written = [line for line in serve.stderr if f"for request = {long[:100]}" in line]
        # 100 lines of one KiB a second, a second's worth at once: a line of 64 KiB of names takes 64 of them
        assert 0 < len(written) <= 2 + 100 / 64 * seconds, f"{len(written)} lines of 64 KiB in {seconds:.1f} s"
        time.sleep(1.0)  # the budget fills again
        with serve.client(token=ALICE_TOKEN) as http:  # short lines: one each, as before
            for _ in range(5):
                assert (
                    http.post("/v1/authorize", json={**body, "request": "Short", "actions": [_read("s")]}).status_code
                    == 200
                )
        time.sleep(1.0)
        assert len(_lines(serve, "for request = Short ")) == 5


def test_the_budget_of_audit_lines_holds_with_a_reader_process(tmp_path: Path) -> None:
    """The reader answers as its own broker principal: a large explain of a caller asking about itself, handed to it,
    had every audit line written (277,000 in 12 s from four connections), its budget bypassed. Such a call stays on
    serve's rules thread."""
    props = base_properties(tmp_path, heavy_reads_process="on", decision_log_self_query_rate="0")
    with ServeProcess(tmp_path, props).start() as serve:
        serve.wait_for("heavy reads: reader process", 60)
        body = {"principal": "User:alice", "client_address": "10.0.0.7", "request": "ReaderSelfQuery", "explain": True}
        with serve.client(token=ALICE_TOKEN) as http:
            answer = http.post("/v1/authorize", json={**body, "actions": [_read(f"r-{i}") for i in range(40)]})
            assert answer.status_code == 200 and set(answer.json()["results"]) == {"DENIED"}
        assert len(_lines(serve, "Topic:LITERAL:reader-probe", 0)) == 0
        _ask(serve, BROKER_TOKEN, [_read("reader-probe")], "Fetch")
        assert len(_lines(serve, "Topic:LITERAL:reader-probe")) == 1
        time.sleep(1.0)  # the reader's lines (it shares serve's stderr) would have arrived by now
        assert [line for line in serve.stderr if "for request = ReaderSelfQuery " in line] == []


def test_the_budget_of_audit_lines_holds_when_two_threads_take_from_it() -> None:
    """The event loop and the rules thread take from one budget: without a lock both read the same tokens and
    together granted more lines than the budget held (up to 4 over a budget of 100 in 20 tries of 4 threads)."""
    import sys
    import threading

    from kraftacl.server.decision_log import SelfQueryBudget

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(20):
            budget, began = SelfQueryBudget(100), time.monotonic()
            granted = [0] * 4

            def take(budget: SelfQueryBudget, granted: list[int], i: int) -> None:
                for _ in range(5_000):
                    granted[i] += budget.take(1)

            threads = [threading.Thread(target=take, args=(budget, granted, i)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sum(granted) <= 100 + (time.monotonic() - began) * 100
    finally:
        sys.setswitchinterval(interval)
