"""HTTP/1.1 for serve: an asyncio protocol over httptools (llhttp, Node's parser) that admits each request at its
head (authentication, authorization, the body limit) before reading any body byte, bounds everything a caller can
make it hold, and answers pipelined requests strictly in order.

Why not an ASGI server: on this machine a minimal uvicorn/httptools ASGI app answers a keep-alive POST
in 82 µs at p50, Sanic in 88 µs, aiohttp in 103 µs and granian in 133 µs, against 32 µs for this
protocol with the same parser (BENCHMARKS.md "serve"). Parsing is httptools'; this module routes bytes,
enforces limits and deadlines, and applies back-pressure:

* the head: URL plus headers at most 64 KiB; `admit` (the API) answers 401/403/404/413/503 before the body, after
  which the connection discards what the client still sends (briefly) and closes;
* the body: reserved from the process-wide `RequestMemory` before it is read (else the connection reads nothing
  until it fits), never more than the endpoint's limit; past GATHER_ABOVE bytes it grows in one bytearray as it
  arrives (a 36 MB import is not joined in one 22 ms copy on the loop when its last byte comes);
* in flight: at most max.in.flight.requests.per.connection requests read and not answered; beyond it, and while the
  client does not read its answers (unsent bytes above connections.max.unsent.bytes: asyncio's pause_writing),
  the connection stops reading (bytes already received wait unparsed);
* time: a new connection's first whole request within request.timeout.ms, each later request whole within it
  from its first byte (an earlier request being answered or not), an idle connection closed after
  connections.max.idle.ms, a client that stops reading its answers closed after request.timeout.ms (an answer in
  progress or not); a request being answered has no deadline of its own (a long poll waits);
* `Connection: close`: every request before it is answered in order, nothing after it is executed;
* fairness: a connection gets one answer per turn of the event loop, so pipelined requests take turns with every
  other connection's (16 pipelined `/metrics` do not run back to back while a broker's decision waits).
* an upgrade: a request that the API answers 101 (`GET /v1/frames`) hands the connection, from the byte after its
  head, to the protocol the answer names (`server.frames`); upgrades are honoured only with nothing else of the
  connection in progress; an `Upgrade` serve did not agree to (h2c) is ignored, and the connection stays HTTP/1.1.

Everything here runs on the event loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import math
import ssl
from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, cast

import httptools

from kraftacl.authorizer.model.hosts import java_host_address
from kraftacl.server.config import Listener, NetworkLimits
from kraftacl.server.connections import Connections, refusal_reason
from kraftacl.server.frames import FrameConnection
from kraftacl.server.http_wire import (
    LINGER_S,
    Dispatch,
    Outcome,
    Request,
    Response,
    StreamedResponse,
    encode_chunk,
    encode_response,
    encode_stream_head,
    encode_switching,
    error_body,
)

if TYPE_CHECKING:
    from kraftacl.server.tls_listener import Handshake

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024  # URL plus headers
GATHER_ABOVE = 1 << 20  # a body past this many bytes grows in one bytearray as it arrives (no join at its end)
FEED_SLICE = 4096  # bytes parsed per step once a connection may have to stop mid-read (see `_feed`)
_EVICTED = (
    "serve has max.connections open; this connection held one of the places kept for broker principals without "
    "sending a whole request head, and made room for a new connection; retry later"
)
_MEMORY_BUSY = (
    "the request waited connections.max.idle.ms for serve's request memory (queued.max.request.bytes), held by "
    "the requests being answered; retry later"
)
_KEPT_HEADERS = frozenset({b"authorization", b"expect", b"content-type", b"content-length", b"upgrade", b"connection"})
Admit = Callable[[Request, bool], "Response | tuple[int, str]"]  # -> a refusal, or the body limit and its key
# What a closed (or upgraded) connection's `parser` becomes: a live parser holds its protocol's bound callbacks, a
# reference cycle that only the cyclic collector frees, and every gc.freeze() (each import, each bulk publish) moved
# the cycles of the connections closed since the last full collection to the permanent generation, never freed.
_SPENT_PARSER = httptools.HttpRequestParser(object())


class HttpProtocol(asyncio.Protocol):
    """One client connection; its state is the request being read, the requests waiting, and what blocks it."""

    def __init__(
        self,
        admit: Admit,
        dispatch: Dispatch,
        listener: Listener,
        limits: NetworkLimits,
        connections: Connections,
        principal_of_cert: Callable[[Mapping[str, object]], str | None],
        trusted: frozenset[str],
        handshake: Handshake | None = None,
    ) -> None:
        self.admit, self.dispatch = admit, dispatch
        self.handshake = handshake  # the place its TLS handshake held since the accept (server.tls_listener)
        self.listener, self.limits, self.connections = listener, limits, connections
        self.principal_of_cert, self.trusted = principal_of_cert, trusted
        self.loop = asyncio.get_event_loop()
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.peer_host = ""
        self.tls_principal: str | None = None
        self.probation = False  # the first request must come from a broker principal (max.connections reserve)
        self.requests_seen = 0
        # the request being read
        self.url = b""
        self.headers: dict[bytes, bytes] = {}
        self.repeated_auth = False
        self.head_bytes = 0
        self.head_fed = 0  # bytes fed since the request began, while its head is incomplete
        self.current: Request | None = None  # admitted at its head, its body being read
        self.reading = False  # a request has begun (its first byte came) and is not whole yet
        self.body: list[bytes] = []
        self.gathered: bytearray | None = None  # the body so far, once past GATHER_ABOVE
        self.body_bytes = 0
        self.body_limit = 0
        self.limit_key = ""
        self.reserved = 0  # request-memory bytes reserved for `current`
        self.awaiting_memory = 0  # bytes this connection waits to reserve (reading stopped meanwhile)
        # requests read and not yet answered, and what blocks reading
        # (request, reserved bytes) read and waiting their turn; a Response is a refusal at a later head, sent in turn
        self.pending: list[tuple[Request | Response, int]] = []
        self.running = False  # an asynchronous handler or a streamed answer is in progress
        self._task: asyncio.Task[None] | None = None  # that answer: cancelled when the client leaves
        self.unparsed = b""
        self.write_paused = False
        self._resumed: asyncio.Future[None] | None = None
        self.reading_paused = False
        self.accepting = True  # False after `Connection: close` or a refusal: nothing more is executed
        self.discarding = False
        self.closing = False
        self.deadline = math.inf  # loop time at which `timed_out` applies (the registry's sweep)
        self._switch_to: FrameConnection | None = None  # the protocol a 101 just sent hands the connection to
        self.continue_due = False  # the request being read waits for earlier answers before its 100 Continue
        self.answered_this_turn = False  # a request was answered in this turn of the loop (the next waits a turn)
        self.authenticated = False  # a request of this connection showed credentials (else: short idle limit)
        self.awaiting_public_turn = False  # a call without credentials waits for the turn callers without share
        self.memory_wait_until = math.inf  # a request waiting for request memory is answered 503 after this
        self.heard = False  # a byte was received (a connection that sent nothing makes room first)
        self.last_words = False  # a TLS client left: what it sent before is answered at once
        self.half_closed = False  # the client half-closed: its pending requests are answered (one a turn), then close

    # ---- connection lifecycle ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio classes
        peer = transport.get_extra_info("peername")
        self.peer_host = java_host_address(peer[0]) if isinstance(peer, tuple) else ""
        if self.handshake is not None:  # the handshake's place is given up for the connection's own
            handshake, self.handshake = self.handshake, None
            self.heard = True  # its TLS handshake: not a silent connection
            self.connections.remove(handshake, self.listener.name)
            if handshake.aborted:  # evicted (or shut down) as its handshake completed: not admitted now
                self.transport.abort()
                return
        refused, self.probation = self.connections.admit(self.listener, self.peer_host)
        self.connections.add(self, self.listener.name, self.loop, self.peer_host)
        if self.probation:
            self.connections.on_probation(self, self.listener.name)
        if refused is not None:
            self.connections.refuse(self.listener.name, refusal_reason(refused))
            self.accepting = False
            self._refuse(error_body(HTTPStatus.SERVICE_UNAVAILABLE, "CONNECTION_LIMIT", f"{refused}; retry later"))
            return
        self._arm(self.limits.request_timeout_s)  # the first whole request is due within request.timeout.ms
        ssl_object = transport.get_extra_info("ssl_object")  # a TLS connection's handshake is done by now
        if isinstance(ssl_object, ssl.SSLObject | ssl.SSLSocket):
            cert = ssl_object.getpeercert()
            if cert:
                self.tls_principal = self.principal_of_cert(cert)
        self.transport.set_write_buffer_limits(high=self.limits.max_unsent_bytes, low=self.limits.max_unsent_bytes // 4)

    def spend(self) -> None:
        """Let the parser go (reference counting then frees this protocol: see _SPENT_PARSER); also for a protocol
        whose connection never came (a TLS handshake that failed: `server.tls_listener`)."""
        self.parser = _SPENT_PARSER

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection closed (its parser is let go)."""
        self.spend()
        self.connections.remove(self, self.listener.name)
        self.connections.memory.forget(self._memory_granted)
        self._release(self.reserved + sum(n for _, n in self.pending))
        self.reserved, self.pending = 0, []
        self.deadline = math.inf
        self.transport = None
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)
        if self._task is not None and not self._task.done():
            self._task.cancel()  # nobody waits for the answer: its work stops (a long poll ends)

    def eof_received(self) -> bool:
        """The client closed its connection: it has left. serve closes too, and `connection_lost` stops the work
        in progress for it (an explain, a describe, a long poll) and drops what it sent but serve had not begun,
        as Go's net/http ends a request's context when its client's connection closes: an abandoned 10,000-action
        explain otherwise ran on for seconds, taking the GIL from the decisions of every broker. (A client that
        only half-closes to signal the end of its requests gets no answer to those still running.)

        What it sent before it left and can be answered at once is still answered, in order and one a turn as ever
        (`half_closed`): the connection stays open for those answers and closes after the last, or as soon as one
        needs asynchronous work. Answered all in one turn, as before, 16 pipelined calls of a caller that half-closes
        and reconnects held every broker's decision for their sum (p50 9 ms, p99 22 ms with two such callers). Over
        TLS the transport closes once this returns, so there they are still answered at once."""
        self.accepting, self.reading, self.current = False, False, None
        if not self.pending or self.running or self.write_paused or self.transport is None:
            return False
        if self.transport.get_extra_info("ssl_object") is None:
            self.half_closed = True
            if not self.answered_this_turn:
                self._pump()
            return self.transport is not None and not self.transport.is_closing()
        # TLS: the transport closes when this returns, whatever it returns (uvloop, as asyncio): answered now, public
        # calls too (their shared turn would come after the close)
        self.last_words = True
        while self.pending and not self.running and not self.write_paused and self.transport is not None:
            waiting = len(self.pending)
            self.answered_this_turn = self.awaiting_public_turn = False
            self._pump()
            if len(self.pending) == waiting:
                break
        return False

    def _arm(self, seconds: float) -> None:
        self.deadline = self.loop.time() + seconds

    def silent(self) -> bool:
        """Nothing received yet."""
        return not self.heard

    def busy(self) -> bool:
        """A request is being read, waits, or is being answered."""
        return self.reading or self.running or bool(self.pending)

    def timed_out(self) -> None:
        """The deadline passed: a request not read whole in time gets 408; an idle connection, a client that does
        not read its answers, or a lingering refused one is closed."""
        self.deadline = math.inf
        if self.transport is None:
            return
        if self.awaiting_memory and not self.write_paused:  # serve, not the client, holds this request up
            if self.loop.time() < self.memory_wait_until:
                self.deadline = self.memory_wait_until  # re-armed meanwhile (an earlier answer ended): not yet
                return
            self.connections.memory.forget(self._memory_granted)  # the waiters behind it go on now
            self.awaiting_memory = 0
            if self.running:
                self.transport.abort()  # no answer inside the one in progress
            else:
                self._fail(HTTPStatus.SERVICE_UNAVAILABLE, "REQUEST_MEMORY_BUSY", _MEMORY_BUSY)
            return
        if self.running and not self.write_paused and not (self.reading and not self.discarding):
            return  # the answer in progress has no deadline (a long poll waits)
        if self.running:  # a request behind it came too slowly: no 408 inside (or before) the answer in progress
            self.transport.abort()
            return
        if self.write_paused:
            self.transport.abort()  # it does not read its answers: a close would wait for it forever
        elif self.reading and not self.discarding:
            self._fail(HTTPStatus.REQUEST_TIMEOUT, "REQUEST_TIMED_OUT", "the request did not arrive whole in time")
        else:
            self.transport.close()

    def abort(self) -> None:
        """Close now (shutdown's deadline passed)."""
        if self.transport is not None:
            self.transport.close()

    def evict(self) -> None:
        """Make room for a new connection: this one, in a kept place without having shown who it is, is answered
        503 and closed (and no longer counted from now on)."""
        self.connections.remove(self, self.listener.name)
        self._refuse(error_body(HTTPStatus.SERVICE_UNAVAILABLE, "CONNECTION_LIMIT", _EVICTED))
        self.abort()  # no lingering: it is no longer counted, so no deadline would close it

    def close_when_idle(self) -> None:
        """Shutdown: close now if nothing is in progress, else after the answers in progress."""
        self.closing = True
        self.accepting = False
        if not self.busy() and self.transport is not None:
            self.transport.close()

    # ---- write back-pressure ----------------------------------------------------------------------
    def pause_writing(self) -> None:
        self.write_paused = True
        self._pause_reading()
        self._arm(self.limits.request_timeout_s)  # the client must read its answers in time, answer in progress or not

    def resume_writing(self) -> None:
        self.write_paused = False
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)
        self._pump()

    async def writable(self) -> bool:
        """Wait until the client has read enough (False: it did not within request.timeout.ms, or it left)."""
        if self.write_paused and self.transport is not None:
            self._resumed = self.loop.create_future()
            try:
                await asyncio.wait_for(self._resumed, self.limits.request_timeout_s)
            except TimeoutError:
                if self.transport is not None:
                    self.transport.abort()  # a close would wait for a client that does not read
                return False
        return self.transport is not None and not self.transport.is_closing()

    def _pause_reading(self) -> None:
        if not self.reading_paused and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()

    def _blocked(self) -> bool:
        """True while this connection must not parse further requests."""
        in_flight = len(self.pending) + self.running
        return self.write_paused or self.awaiting_memory > 0 or in_flight >= self.limits.max_in_flight

    # ---- bytes in ---------------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        self.heard = True
        if self.discarding or not self.accepting:
            return
        if (  # `_blocked()` inline (every read)
            self.unparsed
            or self.write_paused
            or self.awaiting_memory > 0
            or len(self.pending) + self.running >= self.limits.max_in_flight
        ):
            self.unparsed += data  # at most one read: reading stops now
            self._pause_reading()
            return
        self._feed(data)
        if self.gathered is not None:
            self._next_turn()

    def _next_turn(self) -> None:
        """While a large body arrives, one read per turn of the event loop: libuv reads a ready socket up to 32 times
        in a row (8 MB of an import, 10-20 ms) before it looks at any other connection's request."""
        if not self.reading_paused and self.transport is not None:
            self._pause_reading()
            self.loop.call_soon(self._pump)  # reads again once the other ready connections had their turn

    def _feed(self, data: bytes) -> None:
        """Parse `data`; a large read is parsed in slices, and what follows a slice after which this connection
        is blocked waits unparsed (so a read of tiny pipelined requests cannot queue thousands of them)."""
        start = 0
        try:
            if len(data) <= FEED_SLICE:
                # `_in_head()` inline: a read that begins a request (the common one) counts nothing here
                in_head = self.reading and self.current is None and self.accepting and not self.discarding
                self.parser.feed_data(data)
                if in_head:
                    self._count_head(len(data), in_head)
                return
            for start in range(0, len(data), FEED_SLICE):
                if self._blocked() or not self.accepting:
                    if self.accepting:
                        self.unparsed = data[start:]
                        self._pause_reading()
                    return
                piece = data[start : start + FEED_SLICE]
                in_head = self._in_head()
                self.parser.feed_data(piece)
                self._count_head(len(piece), in_head)
        except httptools.HttpParserUpgrade as upgrade:
            self._switch(data[start + int(upgrade.args[0]) :])
        except httptools.HttpParserError as exc:
            if not self.discarding and self.accepting:
                self._fail(HTTPStatus.BAD_REQUEST, "INVALID_REQUEST", f"malformed HTTP request: {exc}")

    def _in_head(self) -> bool:
        """A request's head has begun and is not complete."""
        return self.reading and self.current is None and self.accepting and not self.discarding

    def _count_head(self, fed: int, in_head_before: bool) -> None:
        """Bytes fed while a head is incomplete count against MAX_HEAD_BYTES as they come: llhttp hands a header
        line to the callbacks only once it ends, and httptools grows an unfinished one by concatenation (quadratic),
        so a head that never ends is refused after its first 64 KiB (plus at most the slice it began in), not
        after 16 MiB of CPU. Only a slice fed whole to a head already under way, and still in it, is counted."""
        if not (in_head_before and self._in_head()):
            return
        self.head_fed += fed
        if self.head_fed > MAX_HEAD_BYTES:
            self._fail(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                "INVALID_REQUEST",
                f"the URL and headers exceed {MAX_HEAD_BYTES} bytes",
            )

    def _switch(self, rest: bytes) -> None:
        """A request asked to upgrade the connection: if serve answered it 101 (`server.frames`), the frame
        protocol reads the connection from the byte after the request's head; otherwise the upgrade is ignored and
        the connection goes on as HTTP/1.1."""
        protocol, self._switch_to = self._switch_to, None
        transport = self.transport
        if protocol is None or transport is None:
            if self.accepting and transport is not None:
                # an upgrade serve did not agree to (curl --http2 asks for h2c): ignored, as RFC 9110 lets a server
                # do; the request was answered over HTTP/1.1, and the connection goes on with a new parser
                self.parser = httptools.HttpRequestParser(self)
                if rest:
                    self._feed(rest)
            return
        self.connections.remove(self, self.listener.name)
        self.accepting, self.deadline, self.transport = False, math.inf, None
        self.parser = _SPENT_PARSER  # this protocol is done with the connection (see _SPENT_PARSER)
        transport.set_protocol(protocol)
        protocol.take_over(transport, rest, self.limits, self.connections, self.listener, self.peer_host)
        if self.reading_paused:
            transport.resume_reading()

    def _fail(self, status: int, code: str, message: str) -> None:
        """Answer an HTTP-level error and close (the byte stream can no longer be trusted)."""
        self.accepting = False
        self.current, self.reading = None, False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(encode_response(error_body(status, code, message), keep_alive=False))
            self.transport.close()

    def _refuse(self, response: Response) -> None:
        """Answer at the head and stop: the client's unread bytes are discarded for a moment (so that it reads the
        answer instead of a reset), then the connection closes. Earlier requests are answered first, in order."""
        self.accepting, self.discarding, self.current, self.reading = False, True, None, False
        if self.running or self.pending:
            self.pending.append((response, 0))
            return
        self._refusal(response)

    def _refusal(self, response: Response) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        transport.write(encode_response(response, keep_alive=False))
        # the place is given up now: a refused caller that reconnects fast fills no place kept for brokers
        if transport.can_write_eof() and self.connections.linger(self, self.listener.name):
            transport.write_eof()
            self._arm(LINGER_S)
        else:
            transport.close()

    # ---- httptools callbacks ----------------------------------------------------------------------
    def on_message_begin(self) -> None:
        self.reading = True
        self.url = b""
        self.headers = {}
        self.repeated_auth = False
        self.head_bytes = 0
        self.head_fed = 0
        self.continue_due = False
        self.body = []
        self.gathered = None
        self.body_bytes = 0
        self.current = None
        if self.requests_seen and not self.write_paused:
            # a later request must arrive whole in time too, even while an earlier one is being answered: a
            # request begun behind a long answer must not hold its reserved body memory for that long (`_arm`)
            self.deadline = self.loop.time() + self.limits.request_timeout_s

    def on_url(self, url: bytes) -> None:
        self.url += url
        self.head_bytes += len(url)
        if self.head_bytes > MAX_HEAD_BYTES:
            self._head_too_large()

    def on_header(self, name: bytes, value: bytes) -> None:
        self.head_bytes += len(name) + len(value)
        if self.head_bytes > MAX_HEAD_BYTES:
            self._head_too_large()
        lower = name.lower()
        if lower in _KEPT_HEADERS:
            if lower == b"authorization" and lower in self.headers:
                self.repeated_auth = True
            self.headers[lower] = value

    def _head_too_large(self) -> None:
        self._fail(
            HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
            "INVALID_REQUEST",
            f"the URL and headers exceed {MAX_HEAD_BYTES} bytes",
        )
        raise httptools.HttpParserError("head too large")

    def on_headers_complete(self) -> None:
        request = self._request_of_head()
        if self.repeated_auth:
            self._refuse(error_body(HTTPStatus.BAD_REQUEST, "INVALID_REQUEST", "two Authorization headers"))
            raise httptools.HttpParserError("refused at the head")
        outcome = self.admit(request, self.probation)
        if self.probation:
            self.probation = False
            self.connections.cleared(self)
        if isinstance(outcome, Response):
            self._refuse(outcome)
            raise httptools.HttpParserError("refused at the head")
        self.current, (self.body_limit, self.limit_key) = request, outcome
        self.authenticated = self.authenticated or request.caller is not None
        length = self.headers.get(b"content-length")
        wanted = int(length) if length is not None else 0  # llhttp checked the digits
        if wanted > self.body_limit:
            self._refuse(_too_large(request.path, self.body_limit, self.limit_key))
            raise httptools.HttpParserError("refused at the head")
        self.reserved = 0
        if wanted and not self._reserve(wanted):
            return  # reading stops until the memory is granted; 100 Continue is sent then
        if b"expect" in self.headers:
            self._continue()

    def _request_of_head(self) -> Request:
        url = self.url
        query = ""
        if not url:
            path = "/"
        elif 63 in url or 35 in url or url[0] != 47:  # "?", "#", not "/" (int needles: a bytes one costs 0.3 us each)
            parsed = httptools.parse_url(url)
            path = (parsed.path or b"/").decode("latin-1")
            query = (parsed.query or b"").decode("latin-1")
        else:
            path = url.decode("latin-1")  # a plain origin-form path, as every client of serve sends
        method = self.parser.get_method().decode("latin-1")
        return Request(method, path, query, self.headers, self.peer_host, self.listener.name, self.tls_principal)

    def _continue(self) -> None:
        """`100 Continue` for a request that expects it, once every earlier request of the connection is answered
        (it belongs to this request's answer: it must not overtake theirs)."""
        if self.headers.get(b"expect", b"").lower() != b"100-continue" or self.transport is None:
            return
        if self.running or self.pending:
            self.continue_due = True  # sent by `_pump` when the earlier answers are out
            return
        self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _reserve(self, n: int) -> bool:
        trusted = (
            self.current is not None
            and self.current.caller is not None
            and self.current.caller.principal in self.trusted
        )
        if self.connections.memory.try_reserve(n, trusted, holding=self.reserved > 0):
            self.reserved += n
            return True
        self.awaiting_memory = n
        self.connections.memory.wait(n, trusted, self._memory_granted)
        self._pause_reading()
        # serve does not read it meanwhile: the client is not blamed (no request.timeout.ms), but the wait is bounded
        self.memory_wait_until = self.loop.time() + self.limits.idle_timeout_s
        if not self.write_paused:
            self.deadline = self.memory_wait_until
        return False

    def _memory_granted(self) -> None:
        self.reserved += self.awaiting_memory
        self.awaiting_memory = 0
        if not self.write_paused:
            self._arm(self.limits.request_timeout_s)  # the rest is due within request.timeout.ms from now
        if self.current is not None and self.body_bytes == 0:
            self._continue()
        self._pump()

    def _release(self, n: int) -> None:
        if n:
            self.connections.memory.release(n)

    def on_body(self, body: bytes) -> None:
        self.body_bytes += len(body)
        if self.body_bytes > self.body_limit:  # a chunked body has no Content-Length to refuse at the head
            self._refuse(_too_large("", self.body_limit, self.limit_key))
            raise httptools.HttpParserError("body too large")
        if self.body_bytes > self.reserved and not self.awaiting_memory:
            self._reserve(self.body_bytes - self.reserved)  # chunked: reserved as it comes
        if self.gathered is not None:
            self.gathered += body
        elif self.body_bytes > GATHER_ABOVE:
            self.gathered = bytearray().join(self.body)
            self.gathered += body
            self.body = []
        else:
            self.body.append(body)

    def on_message_complete(self) -> None:
        request = self.current
        self.reading = False
        if request is None or not self.accepting:
            return
        self.current = None
        self.requests_seen += 1
        if self.awaiting_memory:  # the rest arrived in the same read: nothing left to wait for
            self.connections.memory.forget(self._memory_granted)
            self.awaiting_memory = 0
        if self.gathered is not None:
            request.body, self.gathered = self.gathered, None  # a bytearray: the decoders read any buffer
        else:
            request.body = b"".join(self.body) if len(self.body) != 1 else self.body[0]
        self.body = []
        request.keep_alive = self.parser.should_keep_alive() and not self.closing
        if not request.keep_alive:
            self.accepting = False  # answered last; nothing after it is executed
        reserved, self.reserved = self.reserved, 0
        if (self.running or self.pending) and not self.write_paused:
            self.deadline = math.inf  # whole: the answers in progress have no deadline; the next is armed after
        # an upgrade is not deferred a turn: the parser hands the connection over right after this request
        deferred = self.answered_this_turn and b"upgrade" not in self.headers
        if self.running or self.pending or self.write_paused or deferred:
            self.pending.append((request, reserved))
            return
        self._handle(request, reserved)

    # ---- answering --------------------------------------------------------------------------------
    def _handle(self, request: Request, reserved: int) -> None:
        # an upgrade is never deferred, nor what a TLS client sent before it left (`eof_received`); callers other than
        # brokers and super users share the turn of calls without credentials (`Connections.take_public_turn`)
        untrusted = request.caller is None or request.caller.principal not in self.trusted
        public = untrusted and b"upgrade" not in request.headers and not self.last_words
        if public and not self.connections.take_public_turn(self.loop):
            self.pending.insert(0, (request, reserved))  # a public call without credentials: at a later turn
            self.awaiting_public_turn = True
            self.connections.wait_public_turn(self._public_turn)
            return
        try:
            outcome: Outcome = self.dispatch(request)
        except Exception:  # a bug must cost one 500, never the connection or the process
            log.exception("unhandled error answering %s %s", request.method, request.path)
            outcome = error_body(500, "UNKNOWN_SERVER_ERROR", "internal error (logged by the server)")
        if isinstance(outcome, Response):
            self._release(reserved)
            if outcome.upgrade is not None:
                self._upgrade(outcome)
                return
            # one answer per connection per turn of the loop: pipelined requests (16 /metrics in one read) wait for
            # the next turn, after every other connection's ready requests (a broker's decision among them)
            self.answered_this_turn = True
            self.loop.call_soon(self._next_turn_of_answers)
            self._write(outcome, request.keep_alive)
            return
        self.running = True
        self.deadline = math.inf  # a request being answered (a long poll too) is in flight, not idle
        self._task = self.loop.create_task(self._answer(outcome, request, reserved))
        self._task.add_done_callback(_log_crash)

    async def _answer(self, outcome: Outcome, request: Request, reserved: int) -> None:
        try:
            response = outcome if isinstance(outcome, StreamedResponse | Response) else await _settled(outcome)
            self._release(reserved)
            reserved = 0
            if isinstance(response, StreamedResponse):
                await self._stream(response, request.keep_alive)
            else:
                self._write(response, request.keep_alive)
        finally:
            self._release(reserved)
            self.running = False
            self._after_answer(request.keep_alive)
            self._pump()

    async def _stream(self, response: StreamedResponse, keep_alive: bool) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            await _close_pieces(response)
            return
        transport.write(encode_stream_head(response, keep_alive))
        try:
            async for piece in response.pieces:
                if piece:
                    transport.write(encode_chunk(piece))
                if not await self.writable():
                    return
        except Exception:  # the head is sent: the only honest signal left is an incomplete body
            log.exception("a streamed answer failed midway; the connection is closed")
            transport.close()
            return
        finally:
            await _close_pieces(response)
        transport.write(encode_chunk(b""))
        if not keep_alive:
            transport.close()

    def _upgrade(self, response: Response) -> None:
        """Send the 101; the connection switches protocol when the parser reaches the end of the head (it does
        in this same read: an upgrade is honoured only when nothing else of this connection is in progress)."""
        if self.transport is None or self.transport.is_closing():
            return
        if self.pending or self.running:
            self._fail(HTTPStatus.BAD_REQUEST, "INVALID_REQUEST", "an upgrade must not be pipelined behind requests")
            return
        assert response.upgrade is not None
        self.transport.write(encode_switching(response))
        self._switch_to = response.upgrade()

    def _write(self, response: Response, keep_alive: bool) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        transport.write(encode_response(response, keep_alive))
        if not keep_alive:
            transport.close()
        elif not self.running:
            self._after_answer(keep_alive)

    def _after_answer(self, keep_alive: bool) -> None:
        if not keep_alive or self.transport is None:
            return
        if self.closing and not self.pending:
            self.transport.close()
        elif not self.reading and not self.pending and not self.write_paused:
            # a connection that never showed credentials (public endpoints only) keeps no place for long (`_arm`)
            limits = self.limits
            idle = limits.idle_timeout_s if self.authenticated else limits.request_timeout_s
            self.deadline = self.loop.time() + idle
        elif self.reading:
            self._arm(self.limits.request_timeout_s)

    def _public_turn(self) -> None:
        self.awaiting_public_turn = False
        self._pump()

    def _next_turn_of_answers(self) -> None:
        self.answered_this_turn = False
        if self.pending:
            self._pump()

    def _pump(self) -> None:
        """Go on after whatever blocked: answer waiting requests, parse held bytes, read again."""
        while (
            self.pending
            and not self.running
            and not self.write_paused
            and not self.answered_this_turn
            and not self.awaiting_public_turn
            and self.transport is not None
        ):
            request, reserved = self.pending.pop(0)
            if isinstance(request, Response):
                self._refusal(request)
                return
            self._handle(request, reserved)
        if self.continue_due and not self.running and not self.pending and self.transport is not None:
            self.continue_due = False
            if self.current is not None and self.accepting:
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if self.half_closed and (self.running or not self.pending) and self.transport is not None:
            self.transport.close()  # the last pending request is answered, or one needs work the client left (eof)
            return
        if self.transport is None or self.discarding or not self.accepting or self._blocked():
            return
        if self.unparsed:
            data, self.unparsed = self.unparsed, b""
            self._feed(data)
        if not self.unparsed and not self._blocked() and self.reading_paused and self.transport is not None:
            self.reading_paused = False
            self.transport.resume_reading()


def _too_large(path: str, limit: int, key: str) -> Response:
    where = f" of {path}" if path else ""
    return error_body(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        "INVALID_REQUEST",
        f"the request body{where} exceeds {key} ({limit})",
        "Content-Length",
    )


async def _settled(outcome: Awaitable[Response | StreamedResponse]) -> Response | StreamedResponse:
    try:
        return await outcome
    except Exception:
        log.exception("unhandled error in an asynchronous handler")
        return error_body(500, "UNKNOWN_SERVER_ERROR", "internal error (logged by the server)")


async def _close_pieces(response: StreamedResponse) -> None:
    """Close the pieces' generator (its cleanup runs if it had started) and tell the answer it is done with."""
    try:
        close = getattr(response.pieces, "aclose", None)
        if close is not None:
            await close()
    finally:
        if response.on_close is not None:
            response.on_close()


def _log_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("an answer task failed", exc_info=task.exception())
