"""serve's connection registry (`server.connections.Connections`) in process: which connection makes room when every
place is taken (one that has sent nothing before one that has: a broker's TLS handshake in progress is not evicted by
a flood of bare connects), and that a listener full by its own limit takes no other listener's place."""

from __future__ import annotations

import asyncio
import dataclasses

from kraftacl.server.config_listeners import Listener
from kraftacl.server.connections import Connections
from tests.server.test_http_protocol import LIMITS


@dataclasses.dataclass(eq=False)
class Conn:
    """A connection as the registry sees it; `heard`: it sent something."""

    heard: bool
    evicted: bool = False
    deadline: float = float("inf")
    registry: Connections | None = None
    listener: str = ""

    def timed_out(self) -> None: ...
    def close_when_idle(self) -> None: ...
    def abort(self) -> None: ...
    def busy(self) -> bool:
        return False

    def silent(self) -> bool:
        return not self.heard

    def evict(self) -> None:
        """As a connection does: it is no longer counted."""
        self.evicted = True
        assert self.registry is not None
        self.registry.remove(self, self.listener)


def _fill(registry: Connections, listener: Listener, conns: list[Conn], loop: asyncio.AbstractEventLoop) -> None:
    for conn in conns:
        refused, probation = registry.admit(listener)
        assert refused is None
        conn.registry, conn.listener = registry, listener.name
        registry.add(conn, listener.name, loop)
        if probation:
            registry.on_probation(conn, listener.name)


def test_a_connection_that_sent_nothing_makes_room_first() -> None:
    loop = asyncio.new_event_loop()
    try:
        limits = dataclasses.replace(LIMITS, max_connections=4, reserved_broker_connections=2)
        client = Listener("CLIENT", "127.0.0.1", 0, early_start=False)
        registry = Connections(limits)
        anyone = [Conn(heard=False), Conn(heard=False)]
        broker, bare = Conn(heard=True), Conn(heard=False)  # in the kept places: the broker is older
        _fill(registry, client, [*anyone, broker, bare], loop)
        assert registry.admit(client) == (None, True)
        assert bare.evicted and not broker.evicted, "the handshake in progress made room before the bare connect"
        _fill(registry, client, [other := Conn(heard=True)], loop)  # the kept places: two that sent something
        registry.admit(client)
        assert broker.evicted and not other.evicted, "then the oldest makes room"
    finally:
        loop.close()


def test_a_listener_full_by_its_own_limit_takes_no_other_listeners_place() -> None:
    loop = asyncio.new_event_loop()
    try:
        limits = dataclasses.replace(LIMITS, max_connections=4, reserved_broker_connections=2)
        client = Listener("CLIENT", "127.0.0.1", 0, early_start=False)
        tls = Listener("TLS", "127.0.0.1", 0, early_start=False, max_connections=1)
        registry = Connections(limits)
        _fill(registry, tls, [Conn(heard=True)], loop)  # not in a kept place: it cannot be made to leave
        on_client = [Conn(heard=False) for _ in range(3)]  # the last two in kept places
        _fill(registry, client, on_client, loop)
        refused, _ = registry.admit(tls)
        assert refused is not None and "listener TLS" in refused
        assert not any(c.evicted for c in on_client), "another listener's connection was evicted for nothing"
    finally:
        loop.close()


def test_connections_per_client_address_count_over_listeners_and_leave_nothing_behind() -> None:
    loop = asyncio.new_event_loop()
    try:
        limits = dataclasses.replace(LIMITS, max_connections_per_ip=2, per_ip_overrides={"10.0.0.9": 0})
        client = Listener("CLIENT", "127.0.0.1", 0, early_start=False)
        early = Listener("CONTROLLER", "127.0.0.1", 0, early_start=True)
        registry = Connections(limits)
        a, b = Conn(heard=True), Conn(heard=True)
        for conn, listener in ((a, client), (b, early)):  # the early-start listener's connections count too
            assert registry.admit(listener, "10.0.0.1") == (None, False)
            registry.add(conn, listener.name, loop, "10.0.0.1")
        refused, _ = registry.admit(client, "10.0.0.1")
        assert refused == "10.0.0.1 has its max.connections.per.ip (2) open"
        assert registry.admit(client, "10.0.0.2") == (None, False)  # another address
        assert registry.admit(client, "10.0.0.9")[0] is not None  # its override: 0
        registry.remove(a, "CLIENT")
        registry.remove(a, "CLIENT")  # idempotent
        assert registry.per_ip == {"10.0.0.1": 1}
        assert registry.admit(client, "10.0.0.1") == (None, False)
        registry.remove(b, "CONTROLLER")
        assert registry.per_ip == {} and registry.peer_of == {}, "an address that left is still remembered"
    finally:
        loop.close()
