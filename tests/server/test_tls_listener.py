"""serve's TLS listener (`server.tls_listener`) in process, on a uvloop loop over real loopback sockets: a handshake
evicted as it completes is not admitted after, a failed handshake gives its place and its protocol up at once, and
an error on one accepted connection costs that connection only.

The clients run their TLS by hand (`ssl.MemoryBIO`) on the loop's own thread: a test decides what reaches serve in
which turn of its loop. Every wait is for a condition, bounded by `BOUND_S` only against a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import gc
import logging
import select
import socket
import ssl
import warnings
import weakref
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
import trustme
import uvloop

from kraftacl.server.config import NetworkLimits
from kraftacl.server.config_listeners import Listener
from kraftacl.server.connections import Connection, Connections
from kraftacl.server.http import HttpProtocol
from kraftacl.server.http_wire import Request, Response
from kraftacl.server.tls_listener import Handshake, TlsListener
from tests.server.test_http_protocol import LIMITS

BOUND_S = 30.0  # no scenario here takes a second; only a hang reaches this
REQUEST = b"GET /v1/status HTTP/1.1\r\nHost: s\r\n\r\n"
T = TypeVar("T")

_CA = trustme.CA()
_CERT = _CA.issue_cert("127.0.0.1")


def _server_context() -> ssl.SSLContext:
    """As serve's (`server.listeners.tls_context`): TLS 1.2 at least, no client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    _CERT.configure_cert(ctx)
    return ctx


def _client_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    _CA.configure_trust(ctx)
    return ctx


class Counted(Connections):
    """The registry, noting the most connections it ever counted at once."""

    peak = 0

    def add(self, conn: Connection, listener: str, loop: asyncio.AbstractEventLoop, *args: Any, **kw: Any) -> None:
        super().add(conn, listener, loop, *args, **kw)
        self.peak = max(self.peak, len(self.open))


class Served:
    """One TLS listener as serve opens it (`Process._open`), its protocols `HttpProtocol` answering 200 to anything,
    each one's weak reference kept."""

    def __init__(self, limits: NetworkLimits, sock: Any = None, timeout_s: float = 60.0) -> None:
        self.listener = Listener("TLS", "127.0.0.1", 0, early_start=False)
        self.limits = limits
        self.connections = Counted(limits)
        self.protocols: list[weakref.ref[HttpProtocol]] = []
        self.handshakes: list[weakref.ref[Handshake]] = []  # of the protocols, in the same order
        self.answered = 0
        if sock is None:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
        self.sock = sock
        self.tls = TlsListener(sock, self.listener, _server_context(), self._protocol, self.connections, timeout_s)
        self.tls.start(64)
        self.port: int = sock.getsockname()[1]

    def _protocol(self, handshake: Handshake) -> HttpProtocol:
        protocol = HttpProtocol(
            lambda request, probation: (1 << 20, "request.max.bytes"),
            self._answer,
            self.listener,
            self.limits,
            self.connections,
            lambda cert: None,
            frozenset(),
            handshake,
        )
        self.protocols.append(weakref.ref(protocol))
        self.handshakes.append(weakref.ref(handshake))
        return protocol

    def _answer(self, request: Request) -> Response:
        self.answered += 1
        return Response(200, b"{}")

    def handshakes_ended(self) -> bool:
        """Every handshake's task has ended (`Handshake.ended`: it let go of its protocol)."""
        return all((handshake := ref()) is None or handshake.task is None for ref in self.handshakes)

    def settled(self, handshakes: int) -> bool:
        """`handshakes` began, they ended, and the connections of those that completed were lost."""
        lost = all((protocol := ref()) is None or protocol.transport is None for ref in self.protocols)
        return len(self.handshakes) == handshakes and self.handshakes_ended() and lost

    def counted(self) -> int:
        return self.connections.per_listener.get("TLS", 0)

    def close(self) -> None:
        self.tls.close()
        self.sock.close()


class Client:
    """A TLS client driven by hand over a non-blocking socket: what it sends and when is the test's."""

    def __init__(self, port: int, context: ssl.SSLContext | None = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setblocking(False)
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = (context or _client_context()).wrap_bio(self.incoming, self.outgoing, server_hostname="127.0.0.1")

    async def handshake_but_the_last_flight(self) -> bytes:
        """Run the handshake until only the client's last flight (its Finished) is missing: returned, unsent."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                self.tls.do_handshake()
                return self.outgoing.read()
            except ssl.SSLWantReadError:
                if sent := self.outgoing.read():
                    await loop.sock_sendall(self.sock, sent)
                try:
                    received = await loop.sock_recv(self.sock, 65536)
                except ConnectionResetError:
                    received = b""
                assert received, "serve closed the connection in its handshake"
                self.incoming.write(received)

    async def handshake(self) -> None:
        await asyncio.get_running_loop().sock_sendall(self.sock, await self.handshake_but_the_last_flight())

    async def send(self, data: bytes) -> None:
        self.tls.write(data)
        await asyncio.get_running_loop().sock_sendall(self.sock, self.outgoing.read())

    async def raw_until_closed(self) -> bytes:
        """What serve sent, as sent, until it closed the connection."""
        loop = asyncio.get_running_loop()
        got = bytearray()
        with contextlib.suppress(ConnectionResetError):
            while received := await loop.sock_recv(self.sock, 65536):
                got += received
        return bytes(got)

    async def until_closed(self) -> bytes:
        """What serve sent, decrypted, until it closed the connection."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                received = await loop.sock_recv(self.sock, 65536)
            except ConnectionResetError:
                received = b""
            if not received:
                self.incoming.write_eof()
            else:
                self.incoming.write(received)
            got = bytearray()
            with contextlib.suppress(ssl.SSLError):  # SSLWantReadError, or the end (an alert, no close_notify)
                while chunk := self.tls.read(65536):
                    got += chunk
            if got or not received:
                return bytes(got)

    def close(self) -> None:
        self.sock.close()


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.005)


def _run(scenario: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(scenario(), BOUND_S)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(bounded())


@contextlib.contextmanager
def _no_collector() -> Iterator[None]:
    """Only reference counting frees objects meanwhile."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_a_handshake_evicted_as_it_completes_is_not_admitted() -> None:
    """The one place, kept for brokers, is held by a handshake whose client's Finished (and a request behind it)
    reaches serve in the same turn of the loop as a new connection: the accept runs first and evicts the handshake
    (cancelling its task, whose cancellation only lands in the next turn), then the Finished completes the handshake
    in that turn. Its protocol is not admitted: no answer, the place is not taken twice, the newcomer stays, and the
    counts return to nothing once the newcomer leaves."""
    limits = dataclasses.replace(LIMITS, max_connections=1, reserved_broker_connections=1)

    async def scenario() -> None:
        served = Served(limits)
        victim = Client(served.port)
        last_flight = await victim.handshake_but_the_last_flight()
        victim.tls.write(REQUEST)
        last_flight += victim.outgoing.read()
        (handshake,) = served.connections.probation
        assert isinstance(handshake, Handshake) and not handshake.silent() and handshake.protocol is not None
        protocol = handshake.protocol
        # the newcomer first, then the Finished: the loop sees both in its next poll, in that order
        newcomer = socket.create_connection(("127.0.0.1", served.port))
        readable, _, _ = select.select([served.sock], [], [], BOUND_S)
        assert readable, "the newcomer never reached the listening socket"
        victim.sock.send(last_flight)
        await _until(lambda: handshake.task is None)  # its task ended (`Handshake.ended`)
        assert protocol.handshake is None, "the race was not run: the handshake's cancellation came first"
        assert protocol not in served.connections.open, "the evicted handshake's protocol was admitted"
        assert served.connections.refused == {("TLS", "evicted"): 1}, served.connections.refused
        answer = await victim.until_closed()
        assert answer == b"", f"an evicted handshake was answered: {answer!r}"
        assert served.answered == 0
        assert served.connections.peak == 1, "the evicted handshake's place was counted twice"
        (kept,) = served.connections.open
        assert isinstance(kept, Handshake) and kept.sock.getpeername() == newcomer.getsockname(), "the newcomer left"
        newcomer.close()
        victim.close()
        # the newcomer's handshake began at its end (the bytes it never sent), and ended
        await _until(lambda: len(served.handshakes) == 2 and served.handshakes_ended())
        assert not served.connections.open and served.counted() == 0, "a place was kept"
        assert not served.connections.probation
        served.close()

    _run(scenario)


def _old_client_context() -> ssl.SSLContext:
    """A client that speaks TLS 1.1 at most (serve wants 1.2 at least)."""
    ctx = _client_context()
    ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # that is the point
        ctx.minimum_version = ssl.TLSVersion.TLSv1
        ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    return ctx


async def _garbage_client_hello(port: int) -> None:
    """A handshake record that is no ClientHello: serve ends the connection."""
    client = Client(port)
    await asyncio.get_running_loop().sock_sendall(client.sock, b"\x16\x03\x01\x00\x20" + bytes(range(32)))
    await client.until_closed()
    client.close()


async def _plain_http(port: int) -> None:
    """An HTTP request on the TLS port."""
    client = Client(port)
    await asyncio.get_running_loop().sock_sendall(client.sock, REQUEST)
    await client.until_closed()
    client.close()


async def _leaves_mid_handshake(port: int) -> None:
    """A ClientHello, serve's answer read, then the client closes."""
    client = Client(port)
    loop = asyncio.get_running_loop()
    with contextlib.suppress(ssl.SSLWantReadError):
        client.tls.do_handshake()
    await loop.sock_sendall(client.sock, client.outgoing.read())
    assert await loop.sock_recv(client.sock, 65536), "serve sent nothing back to a ClientHello"
    client.close()


async def _old_protocol_version(port: int) -> None:
    """A TLS 1.1 ClientHello: serve refuses it and closes (with no handshake record in reply: no ServerHello)."""
    client = Client(port, _old_client_context())
    loop = asyncio.get_running_loop()
    with contextlib.suppress(ssl.SSLWantReadError):
        client.tls.do_handshake()
    hello = client.outgoing.read()
    assert hello[9:11] == b"\x03\x02", "not a TLS 1.1 ClientHello"
    await loop.sock_sendall(client.sock, hello)
    assert not (await client.raw_until_closed()).startswith(b"\x16"), "serve answered a TLS 1.1 ClientHello"
    client.close()


FAILURES = [_garbage_client_hello, _plain_http, _leaves_mid_handshake, _old_protocol_version]


@pytest.mark.parametrize("fail", FAILURES, ids=lambda fail: fail.__name__.strip("_"))
def test_a_failed_handshake_gives_up_its_place_and_its_protocol(fail: Callable[[int], Awaitable[None]]) -> None:
    """Handshakes that fail (each kind 20 times, one after another and then 20 at once) each made their protocol;
    once they have ended, no place is counted any more and reference counting alone has freed every protocol (its
    parser let go: `HttpProtocol.spend`), with the collector off: before, each stayed in a reference cycle until a
    full collection, and a gc.freeze() made it permanent. A handshake that completes after them is served."""

    async def scenario() -> None:
        served = Served(LIMITS)
        for _ in range(20):
            await fail(served.port)
        await asyncio.gather(*(fail(served.port) for _ in range(20)))
        await _until(served.handshakes_ended)
        assert not served.connections.open and served.counted() == 0, "failed handshakes kept their places"
        assert len(served.protocols) == 40, "a failed handshake never made its protocol: nothing was checked"
        alive = sum(ref() is not None for ref in served.protocols)
        assert alive == 0, f"{alive} protocols of failed handshakes are alive: only the collector would free them"
        client = Client(served.port)
        await client.handshake()
        await client.send(REQUEST)
        assert (await client.until_closed()).startswith(b"HTTP/1.1 200 ")
        client.close()
        served.close()

    with _no_collector():
        _run(scenario)


class Listening:
    """A listening socket whose accept fails for the first connections, as `faults` says (each takes the socket
    accepted for that connection: it closes it and raises, or returns what `TlsListener` is given instead)."""

    def __init__(self, faults: list[Callable[[socket.socket], Any]]) -> None:
        self.real = socket.socket()
        self.real.bind(("127.0.0.1", 0))
        self.faults = faults

    def accept(self) -> tuple[Any, Any]:
        sock, peer = self.real.accept()
        return (self.faults.pop(0)(sock) if self.faults else sock), peer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _aborted(sock: socket.socket) -> Any:
    """The connection was reset while it waited in the backlog (accept fails with ECONNABORTED)."""
    sock.close()
    raise ConnectionAbortedError(errno.ECONNABORTED, "Software caused connection abort")


class _Unsettable:
    """An accepted socket that cannot be set up (its first call from `TlsListener._admit` fails)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def setblocking(self, flag: bool) -> None:
        raise OSError(errno.EINVAL, "Invalid argument")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


async def _closed_by_serve(sock: socket.socket) -> bool:
    try:
        return await asyncio.get_running_loop().sock_recv(sock, 1) == b""
    except ConnectionResetError:
        return True


async def _answered(client: Client) -> bytes:
    await client.handshake()
    await client.send(REQUEST)
    answer = await client.until_closed()
    client.close()
    return answer


def _loop_errors(errors: list[dict[str, Any]]) -> None:
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context))


def test_an_aborted_accept_skips_that_connection_only(caplog: pytest.LogCaptureFixture) -> None:
    """A connection aborted in the backlog fails its accept (ECONNABORTED, accept(2); faked: loopback cannot be made
    to): the connections behind it in the same wake-up are accepted and served, and so are later ones; no pause, no
    "accept failed" warning (EMFILE's), nothing for the loop's exception handler."""

    async def scenario() -> None:
        errors: list[dict[str, Any]] = []
        _loop_errors(errors)
        served = Served(LIMITS, Listening([_aborted]))
        reset = socket.create_connection(("127.0.0.1", served.port))
        reset.setblocking(False)
        behind = [Client(served.port) for _ in range(2)]  # in the backlog with it: the same wake-up
        answers = await asyncio.gather(*(_answered(client) for client in behind))
        assert all(answer.startswith(b"HTTP/1.1 200 ") for answer in answers), answers
        assert await _closed_by_serve(reset)
        reset.close()
        assert served.tls.watching and served.tls._resume is None and served.tls.failed == 0, "accepting paused"
        assert (await _answered(Client(served.port))).startswith(b"HTTP/1.1 200 "), "a later connection"
        await _until(lambda: served.settled(3))
        assert not served.connections.open and served.counted() == 0
        assert errors == []
        served.close()

    with caplog.at_level(logging.WARNING):
        _run(scenario)
    assert caplog.records == [], [record.getMessage() for record in caplog.records]


def test_a_connection_that_cannot_be_set_up_holds_no_place(caplog: pytest.LogCaptureFixture) -> None:
    """An accepted socket whose setup fails (`TlsListener._admit`) is closed and logged, and the connection behind
    it on a listener with one place is served: the failed one gave its place up at once (it held it, counted,
    until request.timeout.ms, and the one behind it was refused)."""
    limits = dataclasses.replace(LIMITS, max_connections=1, reserved_broker_connections=0)

    async def scenario() -> None:
        errors: list[dict[str, Any]] = []
        _loop_errors(errors)
        served = Served(limits, Listening([_Unsettable]))
        failed = socket.create_connection(("127.0.0.1", served.port))
        failed.setblocking(False)
        behind = Client(served.port)  # in the backlog with it: the same wake-up
        answer = await _answered(behind)
        assert answer.startswith(b"HTTP/1.1 200 "), f"the connection behind a failed setup was not served: {answer!r}"
        assert await _closed_by_serve(failed)
        failed.close()
        assert served.connections.refused == {}, served.connections.refused
        await _until(lambda: served.settled(1))
        assert not served.connections.open and served.counted() == 0, "the failed connection kept its place"
        assert served.tls.watching and served.tls._resume is None
        assert errors == []
        served.close()

    with caplog.at_level(logging.WARNING):
        _run(scenario)
    assert [record.getMessage() for record in caplog.records] == ["listener TLS: accepting a connection failed"]
