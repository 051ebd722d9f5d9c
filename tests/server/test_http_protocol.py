"""serve's HTTP protocol (`server.http.HttpProtocol`) in process, on a real uvloop loop where sockets matter:
one answer per connection per turn of the event loop (requests pipelined in one read, 16 `GET /metrics`, take
turns with every other connection's, instead of running back to back while a broker's decision waits), without
losing what the turn-taking delays (an upgrade behind an answer, requests before a half-close); the head's size
counted exactly as it arrives."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest
import uvloop

from kraftacl.server.auth import Caller
from kraftacl.server.config import NetworkLimits
from kraftacl.server.config_listeners import Listener
from kraftacl.server.connections import Connections
from kraftacl.server.http import HttpProtocol
from kraftacl.server.http_wire import Request, Response

LIMITS = NetworkLimits(
    request_max_bytes=1 << 20,
    import_max_bytes=1 << 20,
    queued_max_request_bytes=1 << 24,
    max_connections=100,
    reserved_broker_connections=0,
    max_in_flight=16,
    max_unsent_bytes=1 << 20,
    idle_timeout_s=600.0,
    request_timeout_s=30.0,
    request_max_actions=1000,
    self_query_max_actions=1000,
    explain_max_actions=1000,
)


class FakeTransport:
    """What the protocol asks of a socket transport; written bytes are kept."""

    def __init__(self) -> None:
        self.written = bytearray()
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 50000) if name == "peername" else default

    def write(self, data: bytes) -> None:
        self.written += data

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        pass

    def abort(self) -> None:
        self.closed = True


def connection(answered: list[str], dispatch: Any = None) -> tuple[HttpProtocol, FakeTransport]:
    def answer(request: Request) -> Response:
        answered.append(request.path)
        return Response(200, b"{}")

    protocol = HttpProtocol(
        lambda request, probation: (1 << 20, "request.max.bytes"),
        dispatch or answer,
        Listener("CLIENT", "127.0.0.1", 0, early_start=False),
        LIMITS,
        Connections(LIMITS),
        lambda cert: None,
        frozenset(),
    )
    transport = FakeTransport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


def test_pipelined_requests_take_turns_with_other_connections() -> None:
    async def run() -> list[str]:
        answered: list[str] = []
        noisy, _ = connection(answered)
        broker, _ = connection(answered)
        noisy.data_received(b"GET /metrics HTTP/1.1\r\nHost: s\r\n\r\n" * 16)  # one read, 16 requests
        broker.data_received(b"POST /v1/authorize HTTP/1.1\r\nHost: s\r\nContent-Length: 2\r\n\r\n{}")
        for _ in range(40):
            await asyncio.sleep(0)
        return answered

    answered = asyncio.run(run())
    assert len(answered) == 17
    assert answered.index("/v1/authorize") <= 1, f"the broker's request waited behind {answered.index('/v1/authorize')}"


def test_pipelined_answers_stay_in_order_one_per_turn() -> None:
    async def run() -> tuple[list[str], list[int]]:
        answered: list[str] = []
        protocol, transport = connection(answered)
        protocol.data_received(b"".join(f"GET /p{n} HTTP/1.1\r\nHost: s\r\n\r\n".encode() for n in range(5)))
        per_turn = [len(answered)]
        for _ in range(6):
            await asyncio.sleep(0)
            per_turn.append(len(answered))
        assert transport.written.count(b"HTTP/1.1 200 ") == 5
        return answered, per_turn

    answered, per_turn = asyncio.run(run())
    assert answered == [f"/p{n}" for n in range(5)]
    assert per_turn[0] == 1, "one answer in the turn the read came in"


class Frames:
    """The protocol a 101 hands the connection to: what it was given."""

    took: bytes | None = None

    def take_over(
        self, transport: Any, rest: bytes, limits: Any, connections: Any, listener: Any, peer: str = ""
    ) -> None:
        Frames.took = rest


def test_an_upgrade_pipelined_behind_an_answer_in_one_read_still_switches() -> None:
    """The turn-taking defers a request answered at once behind another, but never an upgrade: the parser hands
    the connection over right after it (deferred, its frames were parsed as HTTP and refused)."""

    def dispatch(request: Request) -> Response:
        if request.path == "/v1/frames":
            return Response(101, b"", headers=[(b"upgrade", b"kraft-acl-frames")], upgrade=Frames)
        return Response(200, b"{}")

    async def run() -> None:
        protocol, transport = connection([], dispatch)
        transport.set_protocol = lambda proto: None  # type: ignore[attr-defined]
        protocol.data_received(
            b"GET /v1/status HTTP/1.1\r\nHost: s\r\n\r\n"
            b"GET /v1/frames HTTP/1.1\r\nHost: s\r\nConnection: Upgrade\r\nUpgrade: kraft-acl-frames\r\n\r\n"
            b"\x00\x00\x00\x05FRAME"
        )
        for _ in range(5):
            await asyncio.sleep(0)

    Frames.took = None
    asyncio.run(run())
    assert Frames.took == b"\x00\x00\x00\x05FRAME", "the 101 was sent but the connection never switched"


def _serve_plain(handle: Any) -> Any:
    return lambda: HttpProtocol(
        lambda request, probation: (1 << 20, "k"),
        lambda request: Response(200, b"{}"),
        Listener("C", "127.0.0.1", 0, early_start=False),
        LIMITS,
        handle,
        lambda cert: None,
        frozenset(),
    )


def test_requests_pipelined_before_a_half_close_are_all_answered() -> None:
    """Four requests then FIN in one go (`printf ... | nc -N`) while the loop was busy: all four are answered,
    though one a turn would leave the last ones to a connection already closing."""

    async def main() -> bytes:
        server = await asyncio.get_running_loop().create_server(_serve_plain(Connections(LIMITS)), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]

        def client() -> bytes:
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(b"GET /a HTTP/1.1\r\nHost: s\r\n\r\n" * 4)
                sock.shutdown(socket.SHUT_WR)
                sock.settimeout(5)
                got = b""
                while chunk := sock.recv(65536):
                    got += chunk
                return got

        answer = asyncio.get_running_loop().run_in_executor(None, client)
        await asyncio.sleep(0.05)  # accepted
        time.sleep(0.3)  # the loop busy: the requests and the FIN arrive together
        got = await answer
        server.close()
        return got

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        got = runner.run(main())
    assert got.count(b"HTTP/1.1 200") == 4


def test_a_head_under_64_kib_in_odd_sized_reads_is_admitted() -> None:
    """Only the bytes of a head count against its 64 KiB, however the reads cut it (4,097 bytes each here)."""

    async def run() -> bytes:
        protocol, transport = connection([])
        head = b"GET /v1/status HTTP/1.1\r\nHost: s\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n"
        for start in range(0, len(head), 4097):
            protocol.data_received(head[start : start + 4097])
            await asyncio.sleep(0)
        return bytes(transport.written)

    assert asyncio.run(run()).startswith(b"HTTP/1.1 200")


def test_requests_pipelined_before_a_half_close_take_turns_with_other_connections() -> None:
    """A client that pipelines 16 requests and half-closes still gets them answered in order, but one a turn (all in
    the turn of its end of file, they held every broker's decision for their sum); the connection closes after the
    last."""

    async def run() -> tuple[list[str], bool, bool]:
        answered: list[str] = []
        noisy, transport = connection(answered)
        broker, _ = connection(answered)
        noisy.data_received(b"GET /metrics HTTP/1.1\r\nHost: s\r\n\r\n" * 16)  # one read, 16 requests
        kept_open = noisy.eof_received()
        broker.data_received(b"POST /v1/authorize HTTP/1.1\r\nHost: s\r\nContent-Length: 2\r\n\r\n{}")
        for _ in range(40):
            await asyncio.sleep(0)
        return answered, kept_open, transport.closed

    answered, kept_open, closed = asyncio.run(run())
    assert len(answered) == 17
    assert answered.index("/v1/authorize") <= 2, f"the broker's request waited behind {answered.index('/v1/authorize')}"
    assert kept_open and closed, "open for the answers after the end of file, closed after the last"


@pytest.mark.parametrize("noisy", [None, Caller("User:alice", "127.0.0.1")], ids=["no credentials", "not a broker"])
def test_calls_without_credentials_share_one_answer_per_turn(noisy: Caller | None) -> None:
    """Public calls (no credentials: `caller` None) take one turn of the loop over all connections, not one per
    connection: 32 connections pipelining an unauthenticated /metrics made a broker's decision wait for 32 of them.
    Calls of any other caller that is not a broker or super user share that turn: any principal may ask about
    itself (no ACL needed), and 16 connections of 1000-action self-queries took a broker's p50 from 0.2 to 46-50 ms."""

    async def run() -> list[list[str]]:
        answered: list[str] = []
        shared = Connections(LIMITS)

        def admit(caller: Caller | None) -> Any:
            def admitted(request: Request, probation: bool) -> tuple[int, str]:
                request.caller = caller
                return 1 << 20, "request.max.bytes"

            return admitted

        def answer(request: Request) -> Response:
            answered.append(request.path)
            return Response(200, b"{}")

        def open_one(caller: Caller | None) -> HttpProtocol:
            protocol = HttpProtocol(
                admit(caller), answer, Listener("CLIENT", "127.0.0.1", 0, early_start=False), LIMITS, shared,
                lambda cert: None, frozenset({"User:broker"}),
            )  # fmt: skip
            protocol.connection_made(FakeTransport())  # type: ignore[arg-type]
            return protocol

        public = [open_one(noisy) for _ in range(3)]
        broker = open_one(Caller("User:broker", "127.0.0.1"))
        for n, protocol in enumerate(public):
            protocol.data_received(f"GET /metrics/{n} HTTP/1.1\r\nHost: s\r\n\r\n".encode() * 2)
        broker.data_received(b"POST /v1/authorize HTTP/1.1\r\nHost: s\r\nContent-Length: 2\r\n\r\n{}")
        turns = [list(answered)]
        for _ in range(10):
            seen = len(answered)
            await asyncio.sleep(0)
            turns.append(answered[seen:])
        return turns

    turns = asyncio.run(run())
    assert turns[0] == ["/metrics/0", "/v1/authorize"], turns  # one public call in the first turn; the broker too
    assert all(sum(p.startswith("/metrics") for p in turn) <= 1 for turn in turns), turns
    assert sorted(p for turn in turns for p in turn if p.startswith("/metrics")) == sorted(
        f"/metrics/{n}" for n in range(3) for _ in range(2)
    ), "a public call was lost"
