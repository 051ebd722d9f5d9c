"""What serve's connections share: how many are open (over all listeners, per listener, with capacity kept for
broker principals; early-start listeners exempt, as Kafka exempts its inter-broker listener from
max.connections), the request-body bytes held over all of them (queued.max.request.bytes), and the one timer
that enforces every connection's deadline.

An early-start listener (the brokers' port) is exempt from max.connections: its connections are neither limited by it
nor counted in it, and it keeps its own last places for brokers (max.connections.reserved.brokers in proportion to
its own limit), as the process does. Counted and never on probation, silent connections on it (nobody's credentials
needed to open one) held every place of the process and of that listener, and no broker could connect anywhere.

Everything here runs on the event loop thread; nothing is locked.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Protocol

from kraftacl.server.config import Listener, NetworkLimits

MAX_LINGERING = 256  # refused connections kept open for a moment to deliver their answer (beyond: closed at once)


class Connection(Protocol):
    """What the registry needs of a connection (server.http.HttpProtocol)."""

    deadline: float

    def timed_out(self) -> None: ...
    def close_when_idle(self) -> None: ...
    def abort(self) -> None: ...
    def evict(self) -> None: ...
    def busy(self) -> bool: ...
    def silent(self) -> bool: ...


class RequestMemory:
    """Request-body bytes held over all connections: a reservation before a body is read (its Content-Length),
    released when the request is answered. Callers other than brokers and super users may hold three quarters of
    the bound; a reservation that does not fit waits (its connection reads nothing meanwhile). The others' waits are
    first come, first served (a large body is not overtaken forever by small ones); brokers' and super users' are
    not ordered (a broker never waits behind an administrator's import), nor is more memory for a request that
    already holds some (a chunked body's next piece: ordered, it could wait for a waiter waiting for it)."""

    def __init__(self, limit: int, others_limit: int) -> None:
        self.limit = limit
        self.others_limit = others_limit
        self.held = 0
        self.peak = 0
        self._waiting: list[tuple[int, bool, Callable[[], None]]] = []

    def try_reserve(self, n: int, trusted: bool, holding: bool = False) -> bool:
        """Reserve `n` bytes now if they fit and (for another's reservation at a request's head) no earlier one of
        the others waits; `holding`: the request already holds memory."""
        if not trusted and not holding and any(not w[1] for w in self._waiting):
            return False
        return self._fits(n, trusted)

    def _fits(self, n: int, trusted: bool) -> bool:
        if self.held + n > (self.limit if trusted else self.others_limit) and self.held > 0:
            return False
        self.held += n
        self.peak = max(self.peak, self.held)
        return True

    def wait(self, n: int, trusted: bool, granted: Callable[[], None]) -> None:
        """Call `granted` once `n` bytes have been reserved (in the order asked, as far as each fits)."""
        self._waiting.append((n, trusted, granted))

    def forget(self, granted: Callable[[], None]) -> None:
        """Stop waiting (the connection closed, was answered 503, or the rest of the request came first); the
        waiters behind it are granted what now fits. Compared with ==: a bound method is a new object each time it
        is read (`is` never matched, and forgotten waiters were granted later: their bytes never given back)."""
        kept = [w for w in self._waiting if w[2] != granted]
        if len(kept) != len(self._waiting):
            self._waiting = kept
            self.release(0)

    def release(self, n: int) -> None:
        """Give back `n` bytes and grant the waiting reservations that now fit (the others' in order). The grants
        are called once the queue is settled: a grant that answers a request releases again, in its turn."""
        self.held -= n
        if not self._waiting:  # nobody waits (every answer of a broker): nothing to grant
            return
        waiting, self._waiting = self._waiting, []
        others_blocked = False  # the others' first waiter did not fit: the later ones wait too
        grants: list[Callable[[], None]] = []
        for n_wanted, trusted, granted in waiting:
            if (trusted or not others_blocked) and self._fits(n_wanted, trusted):
                grants.append(granted)
            else:
                others_blocked = others_blocked or not trusted
                self._waiting.append((n_wanted, trusted, granted))
        for granted in grants:
            granted()


def refusal_reason(refused: str) -> str:
    """The `reason` label of kraft_acl_connections_refused_total for what `Connections.admit` answered."""
    if "max.connections.per.ip" in refused:
        return "ip"
    return "limit" if "max.connections" in refused else "closing"


class Connections:
    """Every open connection of one process: counts and limits, the deadline sweep, shutdown."""

    def __init__(self, limits: NetworkLimits, tick: float = 0.25) -> None:
        self.limits = limits
        self.open: set[Connection] = set()
        self.per_listener: dict[str, int] = {}
        self.exempt: set[str] = set()  # early-start listeners: not counted against max.connections
        self.per_ip: dict[str, int] = {}  # client address (Kafka's form) -> its open connections, over all listeners
        self.peer_of: dict[Connection, str] = {}
        self.refused: dict[tuple[str, str], int] = {}  # (listener, reason) -> connections refused
        # connections in the kept places that have not shown a broker principal yet, oldest first
        self.probation: dict[Connection, str] = {}
        # refused connections delivering their answer before they close: no longer counted against any limit (a
        # caller reconnecting fast must not fill the places with its refusals), bounded here, swept like the others
        self.lingering: set[Connection] = set()
        self.memory = RequestMemory(limits.queued_max_request_bytes, limits.others_request_bytes)
        # calls without credentials (the public endpoints) share one answer per turn of the loop over all connections
        self.public_turn_taken = False
        self.public_waiting: deque[Callable[[], None]] = deque()
        self.closing = False
        self.tick = tick
        self._sweeper: asyncio.TimerHandle | None = None

    def admit(self, listener: Listener, peer: str = "") -> tuple[str | None, bool]:
        """(why a new connection from `peer` (Kafka's form; "" unknown) is refused or None, whether it must prove a
        broker principal on its first request: the last max.connections.reserved.brokers places are kept for
        brokers and super users).

        A client address at its max.connections.per.ip is refused first, on every listener (as Kafka's
        ConnectionQuotas does): it makes nobody else leave.

        When every place is taken, the oldest connection in a kept place that has not yet shown who it is
        makes room (it is answered 503), one that has sent nothing at all first: silent connections cannot hold
        the places kept for brokers, and a broker shows its principal within milliseconds of connecting (its
        TLS ClientHello at once: under a flood of bare connects, a broker's handshake in progress is not the one
        that makes room)."""
        if self.closing:
            return "serve is shutting down", False
        if peer and self.per_ip.get(peer, 0) >= (limit := self.limits.per_ip_limit(peer)):
            return f"{peer} has its max.connections.per.ip ({limit}) open", False
        if listener.early_start:
            self.exempt.add(listener.name)
        if self._full(listener):
            own_limit = self.per_listener.get(listener.name, 0) >= listener.max_connections
            # another listener's place helps only when the process-wide limit is what is full
            victim = self._victim(lambda name: name == listener.name) or (
                None if listener.early_start or own_limit else self._victim(lambda name: name not in self.exempt)
            )
            if victim is not None:
                self.refuse(self.probation[victim], "evicted")
                victim.evict()
        count = self.per_listener.get(listener.name, 0)
        if count >= listener.max_connections:
            return f"listener {listener.name} has its max.connections ({listener.max_connections}) open", False
        if listener.early_start:  # exempt from the process-wide limit; its own last places are kept for brokers
            kept = self.limits.reserved_broker_connections * listener.max_connections // self.limits.max_connections
            return None, kept > 0 and count >= listener.max_connections - kept
        total, limit = self._counted(), self.limits.max_connections
        if total >= limit:
            return f"serve has max.connections ({limit}) open", False
        return None, total >= limit - self.limits.reserved_broker_connections

    def _victim(self, on: Callable[[str], bool]) -> Connection | None:
        """The connection on probation (on a listener `on` accepts) that makes room: the oldest silent one, else
        the oldest."""
        candidates = [conn for conn, name in self.probation.items() if on(name)]
        return next((conn for conn in candidates if conn.silent()), None) or next(iter(candidates), None)

    def _counted(self) -> int:
        """Open connections counted against max.connections (early-start listeners' are not)."""
        return len(self.open) - sum(self.per_listener.get(name, 0) for name in self.exempt)

    def _full(self, listener: Listener) -> bool:
        if self.per_listener.get(listener.name, 0) >= listener.max_connections:
            return True
        return not listener.early_start and self._counted() >= self.limits.max_connections

    def take_public_turn(self, loop: asyncio.AbstractEventLoop) -> bool:
        """True when a call without credentials may be answered now: one per turn of the loop over all connections,
        so that a broker's decision waits for at most one of them (32 connections pipelining an unauthenticated
        `GET /metrics`, 0.4 ms each, one per connection per turn, put a broker's p99 at 7.5 ms)."""
        if self.public_turn_taken:
            return False
        self.public_turn_taken = True
        loop.call_soon(self._public_turn_over)
        return True

    def wait_public_turn(self, wake: Callable[[], None]) -> None:
        """Call `wake` at a later turn of the loop, in the order asked (it tries `take_public_turn` again)."""
        self.public_waiting.append(wake)

    def _public_turn_over(self) -> None:
        self.public_turn_taken = False
        while self.public_waiting and not self.public_turn_taken:  # a connection gone since passes the turn on
            self.public_waiting.popleft()()

    def on_probation(self, conn: Connection, listener: str) -> None:
        """`conn` holds a kept place until its first request shows a broker principal."""
        self.probation[conn] = listener

    def cleared(self, conn: Connection) -> None:
        """`conn` showed who it is (or left)."""
        self.probation.pop(conn, None)

    def refuse(self, listener: str, reason: str) -> None:
        """Count a refused connection."""
        key = (listener, reason)
        self.refused[key] = self.refused.get(key, 0) + 1

    def add(self, conn: Connection, listener: str, loop: asyncio.AbstractEventLoop, peer: str = "") -> None:
        """A new connection (from `peer`, Kafka's form); the sweep starts with the first one."""
        self.open.add(conn)
        self.per_listener[listener] = self.per_listener.get(listener, 0) + 1
        if peer:
            self.peer_of[conn] = peer
            self.per_ip[peer] = self.per_ip.get(peer, 0) + 1
        if self._sweeper is None and not self.closing:
            self._sweeper = loop.call_later(self.tick, self._sweep, loop)

    def remove(self, conn: Connection, listener: str) -> None:
        """A connection closed."""
        self.probation.pop(conn, None)
        self.lingering.discard(conn)
        if conn in self.open:
            self.open.discard(conn)
            self.per_listener[listener] -= 1
            if (peer := self.peer_of.pop(conn, None)) is not None:
                if self.per_ip[peer] <= 1:
                    del self.per_ip[peer]  # nothing kept for an address that has left
                else:
                    self.per_ip[peer] -= 1

    def linger(self, conn: Connection, listener: str) -> bool:
        """`conn` was refused and only delivers its answer now: it gives its place up. False when MAX_LINGERING
        refused connections linger already (the caller closes it at once instead)."""
        self.remove(conn, listener)
        if len(self.lingering) >= MAX_LINGERING:
            return False
        self.lingering.add(conn)
        return True

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for conn in [c for c in (*self.open, *self.lingering) if c.deadline <= now]:
            conn.timed_out()
        self._sweeper = loop.call_later(self.tick, self._sweep, loop)

    def close_idle(self) -> None:
        """Stop accepting new requests: idle connections close now, busy ones after their response."""
        self.closing = True
        for conn in [*self.open, *self.lingering]:
            conn.close_when_idle()
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None

    def busy(self) -> int:
        """Connections with a request in progress."""
        return sum(1 for c in self.open if c.busy())
