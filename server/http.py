"""HTTP/1.1 for serve: an asyncio protocol over httptools (llhttp, Node's parser) with keep-alive, pipelining,
limits and timeouts; handlers receive a parsed `Request` and return a `Response`.

Why not an ASGI server: on this machine a minimal uvicorn/httptools ASGI app answers a keep-alive POST
in 82 µs at p50, Sanic in 88 µs, aiohttp in 103 µs and granian in 133 µs, against 32 µs for this
protocol with the same parser (client and server on one 2-vCPU guest; BENCHMARKS.md "serve"). The
ASGI layer (a task, scope and message dicts per request) is most of the latency budget of the
authorize call, so serve keeps the well-kept parser and event loop (httptools, uvloop) and drops the
layer. Parsing is httptools'; this module only routes bytes and enforces limits.

Everything here runs on the event loop thread. A connection answers its requests strictly in order:
while an async handler (an ACL write) runs, reading pauses and further pipelined requests wait.
"""

from __future__ import annotations

import asyncio
import logging
import math
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import cast

import httptools

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024  # URL plus headers
_STATUS_LINES = {s.value: f"HTTP/1.1 {s.value} {s.phrase}\r\n".encode() for s in HTTPStatus}
_KEPT_HEADERS = frozenset({b"authorization", b"expect", b"content-type"})


@dataclass(slots=True)
class Request:
    """One parsed request; `principal_from_tls` is the client certificate's principal on mutual-TLS listeners."""

    method: str
    path: str
    headers: dict[bytes, bytes]
    body: bytes
    peer_host: str
    listener: str
    principal_from_tls: str | None
    query: str = ""  # the URL's query string, undecoded ("" without one)


@dataclass(slots=True)
class Response:
    """Status, body and content type; `headers` are extra (name, value) pairs."""

    status: int
    body: bytes
    content_type: bytes = b"application/json"
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


Handler = Callable[[Request], "Response | Awaitable[Response]"]
Dispatch = Callable[[Request], "Response | Awaitable[Response]"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-connection limits (serve's request.max.bytes, connections.max.idle.ms, request.timeout.ms)."""

    max_body: int
    idle_timeout_s: float
    request_timeout_s: float
    body_limits: Mapping[bytes, tuple[int, str]] = field(default_factory=dict)  # URL -> own limit, its config key


def error_body(status: int, code: str, message: str) -> Response:
    """A minimal JSON error for failures found before routing (malformed HTTP, limits)."""
    import msgspec

    body = msgspec.json.encode({"error": {"code": code, "message": message}})
    return Response(status, body)


def encode_response(response: Response, keep_alive: bool) -> bytes:
    """The response's bytes: status line, Content-Type, Content-Length, extra headers, body."""
    head = [
        _STATUS_LINES.get(response.status) or f"HTTP/1.1 {response.status} Unknown\r\n".encode(),
        b"content-type: ",
        response.content_type,
        b"\r\ncontent-length: ",
        str(len(response.body)).encode(),
        b"\r\n",
    ]
    for name, value in response.headers:
        head += [name, b": ", value, b"\r\n"]
    if not keep_alive:
        head.append(b"connection: close\r\n")
    head.append(b"\r\n")
    head.append(response.body)
    return b"".join(head)


class Connections:
    """Every open connection of one server process, so that shutdown can close them, and the one timer that
    enforces their deadlines (a sweep every `tick` seconds instead of a timer armed per request)."""

    def __init__(self, tick: float = 0.25) -> None:
        self.open: set[HttpProtocol] = set()
        self.closing = False
        self.tick = tick
        self._sweeper: asyncio.TimerHandle | None = None

    def add(self, conn: HttpProtocol) -> None:
        """A new connection; the sweep starts with the first one."""
        self.open.add(conn)
        if self._sweeper is None:
            self._sweeper = conn.loop.call_later(self.tick, self._sweep, conn.loop)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for conn in [c for c in self.open if c.deadline <= now]:
            conn.timed_out()
        self._sweeper = loop.call_later(self.tick, self._sweep, loop)

    def close_idle(self) -> None:
        """Stop accepting new requests: idle connections close now, busy ones after their response."""
        self.closing = True
        for conn in list(self.open):
            conn.close_when_idle()
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None

    def busy(self) -> int:
        """Connections with a request in progress."""
        return sum(1 for c in self.open if c.in_request)


class HttpProtocol(asyncio.Protocol):
    """One client connection: parse with httptools, answer in order, enforce limits and timeouts."""

    def __init__(
        self,
        dispatch: Dispatch,
        listener: str,
        limits: Limits,
        connections: Connections,
        principal_of_cert: Callable[[Mapping[str, object]], str | None],
    ) -> None:
        self.dispatch = dispatch
        self.listener = listener
        self.limits = limits
        self.connections = connections
        self.principal_of_cert = principal_of_cert
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.peer_host = ""
        self.tls_principal: str | None = None
        self.url = b""
        self.headers: dict[bytes, bytes] = {}
        self.head_bytes = 0
        self.body: list[bytes] = []
        self.body_bytes = 0
        self.body_limit = (limits.max_body, "request.max.bytes")
        self.in_request = False
        self.queue: list[Request] = []  # pipelined requests waiting behind an async handler
        self.busy = False  # an async handler is running
        self.closing = False
        self.deadline = math.inf  # loop time at which `timed_out` applies (see Connections' sweep)
        self.loop = asyncio.get_event_loop()

    # ---- connection lifecycle ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio classes
        peer = transport.get_extra_info("peername")
        self.peer_host = peer[0] if isinstance(peer, tuple) else ""
        ssl_object = transport.get_extra_info("ssl_object")
        if isinstance(ssl_object, ssl.SSLObject | ssl.SSLSocket):
            cert = ssl_object.getpeercert()
            if cert:
                self.tls_principal = self.principal_of_cert(cert)
        self.connections.add(self)
        if self.connections.closing:
            self.closing = True
            transport.close()
            return
        self._arm(self.limits.idle_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self.connections.open.discard(self)
        self.deadline = math.inf
        self.transport = None

    def _arm(self, seconds: float) -> None:
        self.deadline = self.loop.time() + seconds

    def timed_out(self) -> None:
        """The deadline passed: a request that did not arrive in time gets 408, an idle connection closes."""
        self.deadline = math.inf
        if self.transport is None:
            return
        if self.in_request and not self.busy:
            self._fail(HTTPStatus.REQUEST_TIMEOUT, "REQUEST_TIMED_OUT", "the request did not arrive in time")
        elif not self.busy:
            self.transport.close()

    def close_when_idle(self) -> None:
        """Shutdown: close now if nothing is in progress, else after the current response."""
        self.closing = True
        if not self.in_request and not self.busy and not self.queue and self.transport is not None:
            self.transport.close()

    # ---- bytes in ---------------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(HTTPStatus.BAD_REQUEST, "INVALID_REQUEST", "protocol upgrades are not supported")
        except httptools.HttpParserError as exc:
            self._fail(HTTPStatus.BAD_REQUEST, "INVALID_REQUEST", f"malformed HTTP request: {exc}")

    def _fail(self, status: int, code: str, message: str) -> None:
        """Answer an HTTP-level error and close (the byte stream can no longer be trusted)."""
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(encode_response(error_body(status, code, message), keep_alive=False))
            self.transport.close()
        self.closing = True

    # ---- httptools callbacks ----------------------------------------------------------------------
    def on_message_begin(self) -> None:
        self.in_request = True
        self.url = b""
        self.headers = {}
        self.head_bytes = 0
        self.body = []
        self.body_bytes = 0
        if not self.busy:
            self._arm(self.limits.request_timeout_s)

    def on_url(self, url: bytes) -> None:
        self.url += url
        self._count_head(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self.head_bytes += len(name) + len(value)  # `_count_head`, inlined: every header of every request
        if self.head_bytes > MAX_HEAD_BYTES:
            self._count_head(0)
        lower = name.lower()
        if lower in _KEPT_HEADERS:
            self.headers[lower] = value

    def _count_head(self, n: int) -> None:
        self.head_bytes += n
        if self.head_bytes > MAX_HEAD_BYTES:
            self._fail(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                "INVALID_REQUEST",
                f"the URL and headers exceed {MAX_HEAD_BYTES} bytes",
            )
            raise httptools.HttpParserError("head too large")

    def on_headers_complete(self) -> None:
        self.body_limit = self.limits.body_limits.get(self.url, (self.limits.max_body, "request.max.bytes"))
        if self.headers.get(b"expect", b"").lower() == b"100-continue" and self.transport is not None:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self.body_bytes += len(body)
        limit, key = self.body_limit
        if self.body_bytes > limit:
            self._fail(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "INVALID_REQUEST", f"the request body exceeds {key} ({limit})"
            )
            raise httptools.HttpParserError("body too large")
        self.body.append(body)

    def on_message_complete(self) -> None:
        if self.closing and self.transport is None:
            return
        url = self.url
        query = ""
        if not url:
            path = "/"
        elif b"?" in url or b"#" in url or not url.startswith(b"/"):
            parsed = httptools.parse_url(url)
            path = parsed.path.decode("latin-1")
            query = (parsed.query or b"").decode("latin-1")
        else:
            path = url.decode("latin-1")  # a plain origin-form path, as every client of serve sends
        request = Request(
            self.parser.get_method().decode("latin-1"),
            path,
            self.headers,
            b"".join(self.body),
            self.peer_host,
            self.listener,
            self.tls_principal,
            query,
        )
        keep_alive = self.parser.should_keep_alive()
        if not keep_alive:
            self.closing = True
        if self.busy:
            self.queue.append(request)
            return
        self._handle(request)

    # ---- dispatch ---------------------------------------------------------------------------------
    def _handle(self, request: Request) -> None:
        try:
            outcome = self.dispatch(request)
        except Exception:  # a bug must cost one 500, never the connection or the process
            log.exception("unhandled error answering %s %s", request.method, request.path)
            outcome = error_body(500, "UNKNOWN_SERVER_ERROR", "internal error (logged by the server)")
        if isinstance(outcome, Response):
            self._write(outcome)
            return
        self.busy = True
        if self.transport is not None:
            self.transport.pause_reading()
        self.deadline = math.inf
        task = self.loop.create_task(_await(outcome))
        task.add_done_callback(self._async_done)

    def _async_done(self, task: asyncio.Task[Response]) -> None:
        self.busy = False
        if self.transport is None:
            return
        self._write(task.result())
        self.transport.resume_reading()
        while self.queue and not self.busy:
            self._handle(self.queue.pop(0))

    def _write(self, response: Response) -> None:
        self.in_request = False
        if self.transport is None or self.transport.is_closing():
            return
        keep_alive = not self.closing
        self.transport.write(encode_response(response, keep_alive))
        if not keep_alive:
            self.transport.close()
        elif not self.busy:
            self._arm(self.limits.idle_timeout_s)


async def _await(outcome: Awaitable[Response]) -> Response:
    try:
        return await outcome
    except Exception:
        log.exception("unhandled error in an asynchronous handler")
        return error_body(500, "UNKNOWN_SERVER_ERROR", "internal error (logged by the server)")
