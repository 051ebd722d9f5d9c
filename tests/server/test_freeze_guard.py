"""No decision from a state the process slept through: a serve frozen (SIGSTOP) while an ACL was revoked answers the
requests it finds on waking with 503 STALE_STATE (or, once caught up, DENIED), never with its stale ALLOWED."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx

from kraftacl.authorizer.state.tailer import TailStatus
from kraftacl.server.freeze_guard import FreezeGuard, StaleState
from tests.server.serve_process import (
    ADMIN_TOKEN,
    ALICE_READ_ORDERS,
    BROKER_TOKEN,
    ServeProcess,
    alice_reads,
    base_properties,
)

ACL = ALICE_READ_ORDERS
BODY = {
    "principal": "User:alice",
    "client_address": "10.0.0.1",
    "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "orders"}],
}


class _Tailer:
    def __init__(self, started: float) -> None:
        self.started = started

    def status(self) -> TailStatus:
        return TailStatus(0, 0, None, self.started, started_monotonic=self.started)


def test_a_gap_between_ticks_holds_decisions_until_a_poll_starts_after_it() -> None:
    guard = FreezeGuard(frozen_after_s=0.2)
    guard.check(_Tailer(0.0))  # no freeze noticed: decisions flow
    time.sleep(0.3)  # as if frozen: no tick for longer than frozen_after_s
    old_poll = _Tailer(time.monotonic() - 1)
    try:
        guard.check(old_poll)
        raise AssertionError("a decision was answered from a state older than the freeze")
    except StaleState as exc:
        assert exc.status == 503 and exc.code == "STALE_STATE"
    guard.check(_Tailer(time.monotonic() + 1))  # a poll that began after the wake-up: decisions flow again
    guard.check(old_poll)  # and stay flowing until the next freeze


def test_a_frozen_broker_role_serve_never_answers_its_stale_allow(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    controller = ServeProcess(tmp_path / "controller", base_properties(tmp_path / "controller", log_dir)).start()
    reader_props = base_properties(tmp_path / "reader", log_dir, process_roles="broker")
    # The reader's next poll comes seconds after it wakes: only the guard keeps it from answering its stale state.
    reader_props["metadata.log.poll.interval.ms"] = "8000"
    try:
        with ServeProcess(tmp_path / "reader", reader_props).start() as reader:
            with controller.client(token=ADMIN_TOKEN) as admin:
                assert admin.post("/v1/acls/create", json={"acls": [ACL]}).status_code == 200
            deadline = time.monotonic() + 20
            while alice_reads(reader) != "ALLOWED":  # ends right after the poll that applied it
                assert time.monotonic() < deadline, "the reader did not follow the controller"
                time.sleep(0.02)
            assert reader.proc is not None
            feed = _feed(reader, "")
            assert feed.status_code == 200, feed.text
            known = f"?after={feed.json()['acl_offset']}&wait_ms=50&instance={feed.json()['instance']}"
            reader.proc.send_signal(signal.SIGSTOP)
            try:
                with controller.client(token=ADMIN_TOKEN) as admin:  # revoked while the reader sleeps
                    assert admin.post("/v1/acls/delete", json={"filters": [ACL]}).status_code == 200
                answers: list[httpx.Response] = []
                asked = threading.Thread(target=lambda: answers.append(_ask(reader)), daemon=True)
                asked.start()  # queued in the frozen process's socket
                time.sleep(1.5)
            finally:
                reader.proc.send_signal(signal.SIGCONT)
            # the change feed vouches for nothing either: a heartbeat now would keep the plugins' remembered ALLOW
            feed = _feed(reader, known)
            assert feed.status_code == 503 and feed.json()["error"]["code"] == "STALE_STATE", feed.text
            asked.join(30)
            answer = answers[0]
            assert answer.status_code == 503 or answer.json()["results"] == ["DENIED"], answer.text
            if answer.status_code == 503:
                assert answer.json()["error"]["code"] == "STALE_STATE", answer.text
            deadline = time.monotonic() + 20
            while (later := _ask(reader)).status_code == 503:  # caught up at the next poll
                assert time.monotonic() < deadline, later.text
                time.sleep(0.02)
            assert later.json()["results"] == ["DENIED"], later.text
    finally:
        controller.stop()


def _feed(serve: ServeProcess, query: str) -> httpx.Response:
    with serve.client(token=BROKER_TOKEN, timeout=30) as client:
        return client.get("/v1/changes" + query)


def _ask(serve: ServeProcess) -> httpx.Response:
    with serve.client(token=BROKER_TOKEN, timeout=30) as client:
        return client.post("/v1/authorize", json=BODY)
