"""Decision frames on an upgraded connection (`kraft-acl-frames/1`, `kraftacl.api.frames`): the broker's hot
path without an HTTP head per decision.

The caller was authenticated once, at the upgrade; each frame then runs the decision endpoint its kind names,
through the same `Api.dispatch` as HTTP (so limits, audit lines, the decision log, read-your-writes and metrics
are the endpoint's), and its answer goes back with the frame's id. The bounds are HTTP's: a frame's body at most
its endpoint's limit (reserved from the process-wide request memory before it is read), at most
max.in.flight.requests.per.connection frames read and not answered, write back-pressure, a frame begun whole
within request.timeout.ms, an idle connection closed after connections.max.idle.ms.

Deadlines. At every moment exactly one deadline is armed, the one the connection's state calls for (`_rearm`, after
every change of state: bytes read, a frame answered, writing paused or resumed, request memory granted), checked
in this order:

* the client does not read its answers (writing paused): aborted request.timeout.ms after writing paused, whatever
  frames are in flight (their answers could not reach it anyway; a close would wait for it forever);
* part of a frame has arrived and serve is reading it (not stopped at max.in.flight.requests.per.connection nor
  waiting for request memory): the frame must be whole within request.timeout.ms of its first byte, or of the
  moment serve resumed reading it if serve had stopped, whatever other frames are in flight; else the connection
  closes, releasing the request memory reserved for that frame at once (the frames in flight are not answered);
* frames in flight, or serve not reading (max.in.flight.requests.per.connection reached, or waiting for request
  memory): no deadline; a frame being answered waits as long as its endpoint makes it (min_offset's wait is
  bounded by min.offset.wait.max.ms), and the client cannot be blamed for what serve does not read;
* nothing received and not answered: idle, closed connections.max.idle.ms after it became idle;
* a frame that could not be read (answered 400 or 413, then the connection is half-closed): closed after a
  short linger.

A deadline that passes closes the connection (aborts it while answers are unsent: a close would wait for a client
that does not read them).

Fairness. A connection answers frames for at most TURN_BUDGET_S of loop time per turn of the event loop; the frames
left wait, unread bytes and all, for the next turn, after every other connection's ready work (a broker's decision
among them): libuv reads a ready socket up to 32 times in a row, so 8 MB of one-action frames poured on one
connection were answered back to back, hundreds of milliseconds during which no broker was answered.

Everything here runs on the event loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import math
import struct
import time
from collections.abc import Awaitable, Mapping
from http import HTTPStatus

from kraftacl.api.frames import REQUEST, answer_frame
from kraftacl.server.config import Listener, NetworkLimits
from kraftacl.server.connections import Connections
from kraftacl.server.http_wire import LINGER_S, Dispatch, Request, Response, StreamedResponse, error_body

log = logging.getLogger(__name__)

FrameRoute = tuple[str, object, int, str]  # path, the api's Route, body limit, its config key
_LENGTH = struct.Struct(">I")
_INTERNAL = error_body(500, "UNKNOWN_SERVER_ERROR", "internal error (logged by the server)")
_HEADERS: dict[bytes, bytes] = {}
RESERVED_ABOVE = 4096  # a frame's body above this is reserved from the request memory before it is read
TURN_BUDGET_S = 0.0001  # loop time one connection's frames may take per turn of the loop (at least one frame)


class FrameConnection(asyncio.Protocol):
    """One upgraded connection: bytes received and not yet framed, the frames being answered, what blocks it."""

    def __init__(self, dispatch: Dispatch, kinds: Mapping[int, FrameRoute], upgrade: Request, trusted: bool) -> None:
        self.dispatch, self.kinds, self.trusted = dispatch, kinds, trusted
        self.caller, self.peer_host, self.tls_principal = upgrade.caller, upgrade.peer_host, upgrade.principal_from_tls
        self.limit = max(limit for _, _, limit, _ in kinds.values())
        self.loop = asyncio.get_event_loop()
        self.transport: asyncio.Transport | None = None
        self.limits: NetworkLimits | None = None
        self.connections: Connections | None = None
        self.listener = ""
        self.buffer = bytearray()
        self.reserved = 0  # request memory held for the frame being read
        self.waiting = 0  # bytes waited for in the request memory (reading stopped meanwhile)
        self.tasks: dict[asyncio.Task[None], int] = {}  # frames answered later -> their reserved bytes
        self.write_paused = self.reading_paused = self.closing = self.discarding = False
        self.held: list[bytes] | None = None  # answers of the frames of one read, written together
        self.armed_for = ""  # the state whose deadline is armed: "unread", "frame", "busy", "idle" ("" re-arms)
        self.deadline = math.inf
        self.spent = 0.0  # loop time this connection's frames took in this turn of the loop
        self.deferred = False  # the turn's budget is spent: frames wait for `_next_turn`, reading stopped
        self.awaiting_turn = False  # not a broker's: its next frame waits for the turn such callers share

    def take_over(
        self,
        transport: asyncio.Transport,
        rest: bytes,
        limits: NetworkLimits,
        connections: Connections,
        listener: Listener,
        peer: str = "",
    ) -> None:
        """The HTTP connection answered 101: from now on this protocol reads `transport` (`rest`: bytes after
        the upgrade's head; `peer`: the client address, Kafka's form)."""
        self.transport, self.limits, self.connections, self.listener = transport, limits, connections, listener.name
        connections.add(self, listener.name, self.loop, peer)
        self._rearm()
        if rest:
            self.data_received(rest)

    def _arm(self, seconds: float) -> None:
        self.deadline = self.loop.time() + seconds

    def _rearm(self) -> None:
        """Arm the deadline this connection's state calls for (the module docstring); a deadline already armed for
        the same state stays (it runs from the moment the state began: a frame's first byte, not its latest)."""
        if self.transport is None or self.limits is None or self.discarding:
            return  # closed, or lingering after a frame that could not be read (its deadline stays)
        if self.write_paused:
            state = "unread"
        elif self.buffer and not self.closing and not self._blocked():
            state = "frame"
        elif self.tasks or self.buffer or self.waiting or self.closing:
            state = "busy"
        else:
            state = "idle"
        if state == self.armed_for:
            return
        self.armed_for = state
        if state == "idle":
            self._arm(self.limits.idle_timeout_s)
        elif state == "busy":
            self.deadline = math.inf
        else:
            self._arm(self.limits.request_timeout_s)

    # ---- what the connection registry asks ----------------------------------------------------------
    def busy(self) -> bool:
        """A frame is being read or answered."""
        return bool(self.buffer) or bool(self.tasks)

    def timed_out(self) -> None:
        """A frame not whole in time, a client that does not read its answers, an idle connection, or the linger
        after a frame that could not be read: closed, whatever frames are in flight (`connection_lost` cancels
        them); the memory reserved for a partial frame is released now, not when the close completes."""
        self.deadline = math.inf
        transport = self.transport
        if transport is None:
            return
        self.closing = self.discarding = True  # nothing more is read, started or re-armed
        self.buffer.clear()
        self._release(self.reserved)
        self.reserved = 0
        if self.write_paused or transport.get_write_buffer_size():
            transport.abort()  # a close would wait for a client that does not read its answers
        else:
            transport.close()

    def abort(self) -> None:
        """Close now (shutdown's deadline passed)."""
        if self.transport is not None:
            self.transport.close()

    def silent(self) -> bool:
        return False  # it has sent its upgrade at least

    def evict(self) -> None:
        """Never on probation (its caller showed who it is at the upgrade); close if asked."""
        self.abort()

    def close_when_idle(self) -> None:
        """Shutdown: close now if nothing is in progress, else after the answers in progress."""
        self.closing = True
        if not self.tasks and self.transport is not None:
            self.transport.close()
        self._rearm()  # the answers in progress have no deadline; shutdown's own bounds them

    # ---- asyncio ------------------------------------------------------------------------------------
    def connection_lost(self, exc: Exception | None) -> None:
        if self.connections is not None:
            self.connections.remove(self, self.listener)
            self.connections.memory.forget(self._granted)
            self._release(self.reserved)
        self.reserved, self.transport, self.deadline = 0, None, math.inf
        for task in list(self.tasks):
            task.cancel()  # nobody waits for these answers

    def pause_writing(self) -> None:
        self.write_paused = True
        self._pause_reading()
        self._rearm()  # the client must read its answers within request.timeout.ms, whatever is in flight

    def resume_writing(self) -> None:
        self.write_paused = False
        self._parse()

    def data_received(self, data: bytes) -> None:
        if self.discarding:
            return
        self.buffer += data
        self._parse()

    def eof_received(self) -> bool:
        return False  # the client has left: close, and `connection_lost` stops its work

    # ---- frames -------------------------------------------------------------------------------------
    def _blocked(self) -> bool:
        assert self.limits is not None
        return (
            self.deferred
            or self.awaiting_turn
            or self.write_paused
            or self.waiting > 0
            or len(self.tasks) >= self.limits.max_in_flight
        )

    def _parse(self) -> None:
        """Answer every whole frame received, as far as this connection is not blocked, the answers ready at once
        written together (one send for the frames of one read: a client multiplexing many callers' frames on one
        connection costs serve one read and one write per batch, not per frame); then read on or wait."""
        self.held = []
        try:
            self._frames()
        finally:
            self._flush()
            self._rearm()

    def _frames(self) -> None:
        buffer = self.buffer
        while len(buffer) >= REQUEST.size and self.transport is not None and not self.closing:
            if self._blocked():
                self._pause_reading()
                return
            if self.spent > TURN_BUDGET_S:
                self._defer()
                return
            length, frame_id, kind = REQUEST.unpack_from(buffer)
            route = self.kinds.get(kind)
            if length < 5 or length - 5 > (self.limit if route is None else route[2]):
                self._fail(frame_id, length, route)
                return
            if length - 5 > RESERVED_ABOVE and not self.reserved and not self._reserve(length - 5):
                return
            if len(buffer) < 4 + length:
                break
            if not self.trusted and not self._take_turn():
                return
            body = bytes(buffer[REQUEST.size : 4 + length])
            del buffer[: 4 + length]
            self.armed_for = ""  # a frame read whole: the next one's deadline (or idleness) runs from now
            reserved, self.reserved = self.reserved, 0
            started = time.perf_counter()
            self._run(frame_id, kind, route, body, reserved)
            if not self.spent:
                self.loop.call_soon(self._next_turn)  # the turn's budget starts again with the next turn
            self.spent += time.perf_counter() - started or 1e-9
        if self.transport is None or self.closing:
            return
        if self.reading_paused and not self._blocked():
            self.reading_paused = False
            self.transport.resume_reading()

    def _defer(self) -> None:
        """The turn's budget is spent: read nothing more and answer nothing more of this connection until the next
        turn (`_next_turn` is due, scheduled with the turn's first frame)."""
        self.deferred = True
        self._pause_reading()

    def _take_turn(self) -> bool:
        """A frame of a caller other than a broker or super user runs only in the turn of the loop such callers share
        over all connections (`Connections.take_public_turn`, with the calls without credentials), else it waits for
        a later one, reading stopped: one caller's (any principal's: asking about itself needs no ACL) frames of
        1000 actions over 16 connections took every connection's turn, and a broker's one-action p50 to 14-22 ms."""
        assert self.connections is not None
        if self.connections.take_public_turn(self.loop):
            return True
        self.awaiting_turn = True
        self._pause_reading()
        self.connections.wait_public_turn(self._turn_granted)
        return False

    def _turn_granted(self) -> None:
        self.awaiting_turn = False
        self._parse()

    def _next_turn(self) -> None:
        self.spent = 0.0
        if self.deferred:
            self.deferred = False
            self._parse()

    def _run(self, frame_id: int, kind: int, route: FrameRoute | None, body: bytes, reserved: int) -> None:
        if route is None:
            self._release(reserved)
            known = ", ".join(f"{k} ({path})" for k, (path, _, _, _) in self.kinds.items())
            self._answer(frame_id, error_body(400, "INVALID_REQUEST", f"no frame kind {kind}; known: {known}", "kind"))
            return
        path, api_route, _, _ = route
        request = Request(
            "POST", path, "", _HEADERS, self.peer_host, self.listener, self.tls_principal, body, self.caller, api_route
        )
        try:
            outcome = self.dispatch(request)
        except Exception:  # a bug must cost one 500, never the connection or the process
            log.exception("unhandled error answering a %s frame", path)
            outcome = _INTERNAL
        if isinstance(outcome, Response):
            self._release(reserved)
            self._answer(frame_id, outcome)
            return
        task = self.loop.create_task(self._later(frame_id, outcome))
        self.tasks[task] = reserved
        task.add_done_callback(self._done)

    async def _later(self, frame_id: int, outcome: Awaitable[Response | StreamedResponse] | StreamedResponse) -> None:
        try:
            response = outcome if isinstance(outcome, StreamedResponse) else await outcome
        except Exception:
            log.exception("unhandled error in an asynchronous frame handler")
            response = _INTERNAL
        if isinstance(response, StreamedResponse):  # no decision endpoint streams; refuse rather than buffer
            log.error("a decision endpoint answered a frame with a streamed response")
            response = _INTERNAL
        self._answer(frame_id, response)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._release(self.tasks.pop(task, 0))
        if self.closing and not self.tasks and self.transport is not None:
            self.transport.close()
        else:
            self._parse()

    def _answer(self, frame_id: int, response: Response) -> None:
        frame = answer_frame(frame_id, response.status, response.body)
        if self.held is not None:
            self.held.append(frame)
        elif self.transport is not None and not self.transport.is_closing():
            self.transport.write(frame)

    def _flush(self) -> None:
        held, self.held = self.held, None
        if held and self.transport is not None and not self.transport.is_closing():
            self.transport.write(held[0] if len(held) == 1 else b"".join(held))

    def _fail(self, frame_id: int, length: int, route: FrameRoute | None) -> None:
        """A frame that cannot be read: one answer naming why, then the connection closes."""
        if length < 5:
            response = error_body(400, "INVALID_REQUEST", f"frame length {length} is below 5", "length")
        else:
            path, _, limit, key = route or ("a decision endpoint", None, self.limit, "every decision body's limit")
            message = f"frame length {length}: the request body of {path} exceeds {key} ({limit})"
            response = error_body(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "INVALID_REQUEST", message, "length")
        self.closing = self.discarding = True
        self.buffer.clear()
        self._flush()
        self._answer(frame_id, response)
        transport = self.transport
        if transport is not None and transport.can_write_eof():
            transport.write_eof()  # the client reads the answer; what it still sends is discarded, then close
            self._arm(LINGER_S)
        elif transport is not None:
            transport.close()

    # ---- request memory -----------------------------------------------------------------------------
    def _reserve(self, n: int) -> bool:
        assert self.connections is not None
        if self.connections.memory.try_reserve(n, self.trusted):
            self.reserved = n
            return True
        self.waiting = n
        self.connections.memory.wait(n, self.trusted, self._granted)
        self._pause_reading()
        return False

    def _granted(self) -> None:
        self.reserved, self.waiting = self.waiting, 0
        self._parse()

    def _release(self, n: int) -> None:
        if n and self.connections is not None:
            self.connections.memory.release(n)

    def _pause_reading(self) -> None:
        if not self.reading_paused and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()
