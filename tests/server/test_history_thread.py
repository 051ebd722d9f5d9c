"""POST /v1/acls/history scans the log on serve's one paced history thread: concurrent calls (any caller allowed
DESCRIBE on the cluster can make them) never scan at once, and the scan rests for the event loop as serve's other
bulk threads do (on the default executor, eight callers took a broker's one-action p99 to 33-117 ms)."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from kraftacl.authorizer.history.acl_history import AclHistory
from kraftacl.metadata_log import pace
from kraftacl.server import acl_history
from kraftacl.server.http_wire import Request


def test_history_scans_run_one_at_a_time_on_a_paced_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    running, most = [0], [0]
    paced: set[bool] = set()
    threads: set[str] = set()
    lock = threading.Lock()

    def scan(state: Any, ids: list[str]) -> AclHistory:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        paced.add(getattr(pace._local, "pace", None) is not None)
        threads.add(threading.current_thread().name)
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return AclHistory(0, 0, {i: () for i in ids})

    monkeypatch.setattr(acl_history, "_scan", scan)
    state: Any = SimpleNamespace(reader=None)
    request = Request("POST", "/v1/acls/history", "", {}, "127.0.0.1", "CLIENT", None, b'{"ids": ["a"]}')

    async def calls() -> list[Any]:
        return await asyncio.gather(*(acl_history.history(state, request, None) for _ in range(8)))  # type: ignore[arg-type]

    answers = asyncio.run(calls())
    assert all(answer.status == 200 for answer in answers)
    assert most[0] == 1, f"{most[0]} history scans ran at once"
    assert paced == {True}, "a history scan ran on a thread that never rests for the event loop"
    assert len(threads) == 1 and threads.pop().startswith("kraft-acl-history")
