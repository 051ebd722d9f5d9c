"""Decision frames take turns with other connections (`server.frames`, "Fairness"): one connection's frames get at
most a small budget of loop time per turn of the event loop, so frames poured on one connection (a caller asking
about itself, thousands of one-action frames per read) do not make a broker's decision on another connection wait
for all of them. In process on a real uvloop loop (the turn-taking, exactly), and against a real serve process (a
broker's latency during such a flood)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import uvloop

from kraftacl.api.frames import FrameClient, request_frame, upgrade_head
from kraftacl.server.config_listeners import Listener
from kraftacl.server.connections import Connections
from kraftacl.server.frames import FrameConnection
from kraftacl.server.http_wire import Request, Response
from tests.server.raw_http import address
from tests.server.serve_process import (
    ADMIN_TOKEN,
    ALICE_READ_ORDERS,
    ALICE_TOKEN,
    BROKER_TOKEN,
    ServeProcess,
    base_properties,
)
from tests.server.test_http_protocol import LIMITS, FakeTransport

ONE = msgspec.json.encode(
    {
        "principal": "User:alice",
        "client_address": "10.0.0.1",
        "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "orders"}],
    }
)


def _connection(
    answered: list[str], name: str, cost_s: float, registry: Connections | None = None, trusted: bool = False
) -> FrameConnection:
    """A frame connection whose every decision costs `cost_s` on the loop and is recorded in `answered` by name."""

    def dispatch(request: Request) -> Response:
        end = time.perf_counter() + cost_s  # a decision's work on the loop
        while time.perf_counter() < end:
            pass
        answered.append(name)
        return Response(200, b"{}")

    kinds: dict[int, Any] = {1: ("/v1/authorize", None, 1 << 20, "request.max.bytes")}
    upgrade = Request("GET", "/v1/frames", "", {}, "127.0.0.1", "CLIENT", None)
    conn = FrameConnection(dispatch, kinds, upgrade, trusted=trusted)
    conn.take_over(
        FakeTransport(),  # type: ignore[arg-type]
        b"",
        LIMITS,
        Connections(LIMITS) if registry is None else registry,
        Listener("CLIENT", "127.0.0.1", 0, early_start=False),
    )
    return conn


async def _turns_until(answered: list[str], count: int) -> list[str]:
    """`answered` once it holds `count` frames' answers (or after 1000 turns of the loop)."""
    for _ in range(1000):
        if len(answered) == count:
            break
        await asyncio.sleep(0)
    return answered


def test_frames_of_one_read_take_turns_with_other_connections() -> None:
    async def run() -> list[str]:
        answered: list[str] = []
        noisy = _connection(answered, "noisy", 0.0001)
        broker = _connection(answered, "broker", 0.0)
        noisy.data_received(b"".join(request_frame(n, 1, ONE) for n in range(500)))  # one read, 500 frames
        broker.data_received(request_frame(1, 1, ONE))
        return await _turns_until(answered, 501)

    answered = uvloop.run(run())
    assert len(answered) == 501, "every frame is answered"
    waited = answered.index("broker")
    assert waited < 100, f"the broker's frame waited behind {waited} frames of another connection"


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeProcess]:
    with ServeProcess(tmp_path / "serve", base_properties(tmp_path)).start() as serve:
        with serve.client(token=ADMIN_TOKEN) as admin:
            assert admin.post("/v1/acls/create", json={"acls": [ALICE_READ_ORDERS]}).status_code == 200
        yield serve


def test_a_flood_of_frames_on_one_connection_does_not_hold_a_brokers_decision(serve: ServeProcess) -> None:
    host, port = address(serve.url("CLIENT"))
    flood = socket.create_connection((host, port), timeout=10)
    flood.sendall(upgrade_head(host, ALICE_TOKEN))
    assert flood.recv(200).startswith(b"HTTP/1.1 101 ")
    batch = b"".join(request_frame(n, 1, ONE) for n in range(2000))  # ~290 KB of one-action frames
    done = threading.Event()

    def pour() -> None:
        with contextlib.suppress(OSError):
            while not done.is_set():
                flood.sendall(batch)

    def drain() -> None:  # the flood reads its answers: serve never stops reading it
        with contextlib.suppress(OSError):
            while not done.is_set() and flood.recv(1 << 20):
                pass

    threading.Thread(target=pour, daemon=True).start()
    threading.Thread(target=drain, daemon=True).start()
    latencies: list[float] = []
    try:
        with FrameClient(host, port, BROKER_TOKEN, timeout=30.0) as broker:
            time.sleep(0.3)
            until = time.monotonic() + 2.0
            while time.monotonic() < until:
                started = time.perf_counter()
                status, _ = broker.call(1, ONE)
                latencies.append(time.perf_counter() - started)
                assert status == 200
                time.sleep(0.002)
    finally:
        done.set()
        flood.close()
    latencies.sort()
    median = latencies[len(latencies) // 2]
    assert median < 0.02, f"a broker's one-action decision took {median * 1000:.1f} ms (median of {len(latencies)})"


def test_callers_other_than_brokers_share_one_turn_over_all_their_connections() -> None:
    """Any principal may ask about itself (no ACL needed): its frames of 1000 actions (about 1 ms each) over 16
    connections ran one per connection per turn, and a broker's decision waited for all 16 (p50 14-22 ms against a
    real serve); now such callers' frames share one turn of the loop over all their connections."""

    async def run() -> list[str]:
        answered: list[str] = []
        registry = Connections(LIMITS)

        noisy = [_connection(answered, f"noisy-{n}", 0.001, registry) for n in range(16)]
        broker = _connection(answered, "broker", 0.0, registry, trusted=True)
        for conn in noisy:
            conn.data_received(b"".join(request_frame(n, 1, ONE) for n in range(4)))
        await asyncio.sleep(0)
        broker.data_received(request_frame(1, 1, ONE))
        return await _turns_until(answered, 65)

    answered = uvloop.run(run())
    assert len(answered) == 65, "every frame is answered"
    waited = answered.index("broker")
    assert waited <= 3, f"the broker's frame waited behind {waited} frames of callers asking about themselves"
