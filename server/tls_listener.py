"""A TLS listener that counts a connection from its accept: its handshake holds a place under max.connections like
any connection, a new one is closed at once when no place is free, and the handshake must end within
request.timeout.ms.

asyncio's own TLS server (`create_server(ssl=...)`) shows a connection to its protocol only once the handshake is
done, so a caller could hold any number of TCP connections in their handshake; here serve accepts the sockets
itself (every pending one when the listening socket is readable, up to ACCEPT_BATCH, as asyncio's own accept loop
does), takes a place for each, waits for its first bytes (a connection that sent none is the first to make room
for a newcomer: a flood of bare connects does not evict a broker's handshake in progress), and hands it to
asyncio's TLS (`connect_accepted_socket`), whose `HttpProtocol` trades the place for its own when the handshake
completes (`HttpProtocol.connection_made`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import math
import socket
import ssl
from collections.abc import Callable
from typing import Any

from kraftacl.authorizer.model.hosts import java_host_address
from kraftacl.server.config import Listener
from kraftacl.server.connections import Connections, refusal_reason

log = logging.getLogger("kraft_acl.serve")

ACCEPT_BATCH = 64  # connections accepted per wake-up of the listening socket (then the loop answers others)
ACCEPT_ERROR_PAUSE_S = 0.1  # after EMFILE and the like: accept again a moment later (Kafka's acceptor backs off too)
OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class Handshake:
    """One accepted connection in its TLS handshake, as the registry sees it (`server.connections.Connection`)."""

    def __init__(self, sock: socket.socket, listener: str, connections: Connections, deadline: float) -> None:
        self.sock, self.listener, self.connections = sock, listener, connections
        self.deadline = deadline
        self.task: asyncio.Task[None] | None = None
        self.protocol: Any = None  # the HttpProtocol made for it (its parser is let go if the handshake fails)
        self.attached = False  # asyncio's transport owns the socket (and closes it)
        self.aborted = False  # evicted, timed out or shut down: a handshake completing now is not admitted
        self.heard = False  # its first bytes (a ClientHello) arrived: the handshake began
        self.unheard: Callable[[], None] | None = None  # stops watching for them

    def busy(self) -> bool:
        return False  # nothing to finish: shutdown closes it at once

    def silent(self) -> bool:
        return not self.heard  # a bare connect, not yet a handshake: it makes room first

    def timed_out(self) -> None:
        self.abort()  # asyncio's handshake timeout (the same) normally ends it first

    def close_when_idle(self) -> None:
        self.abort()

    def evict(self) -> None:
        self.abort()

    def abort(self) -> None:
        """End the handshake and give its place up now: its transport closes the socket, or the socket is closed
        here if it has none yet."""
        self.aborted = True
        self.deadline = math.inf
        self.connections.remove(self, self.listener)  # (`ended` gives it up too: remove is idempotent)
        if self.unheard is not None:  # still waiting for its first bytes
            self.unheard()
            self.unheard = None
            self.sock.close()
        elif self.task is not None and not self.task.done():
            self.task.cancel()
        elif not self.attached:
            self.sock.close()

    def ended(self, _task: asyncio.Task[None]) -> None:
        """The handshake task ended (done, failed, timed out or cancelled): its place is given up, and what a failed
        handshake leaves is let go at once (no reference cycle waits for the collector)."""
        self.connections.remove(self, self.listener)
        if not self.attached:
            self.sock.close()  # cancelled before asyncio took the socket
        if self.protocol is not None and self.protocol.transport is None:
            self.protocol.spend()  # the handshake never completed: the protocol never saw a connection
        self.task = self.protocol = None


class TlsListener:
    """Accepts on one TLS listener's socket until closed (`close`, as `asyncio.Server.close`)."""

    def __init__(
        self,
        sock: socket.socket,
        listener: Listener,
        context: ssl.SSLContext,
        protocol: Callable[[Handshake], asyncio.BaseProtocol],
        connections: Connections,
        handshake_timeout_s: float,
    ) -> None:
        self.sock, self.listener, self.context = sock, listener, context
        self.protocol, self.connections = protocol, connections
        self.handshake_timeout_s = handshake_timeout_s
        self.loop = asyncio.get_running_loop()
        self.failed = 0  # accepts failed in a row for want of resources (logged at the first, and when over)
        self.watching = False
        self._resume: asyncio.TimerHandle | None = None

    def start(self, backlog: int) -> None:
        """Listen and accept from now on."""
        self.sock.setblocking(False)
        self.sock.listen(backlog)
        self._watch()

    def close(self) -> None:
        """Stop accepting (the connections already accepted stay)."""
        if self._resume is not None:
            self._resume.cancel()
            self._resume = None
        if self.watching:
            self.loop.remove_reader(self.sock.fileno())
            self.watching = False

    def _watch(self) -> None:
        self._resume = None
        self.loop.add_reader(self.sock.fileno(), self._accept)
        self.watching = True

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                sock, address = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno not in OUT_OF_RESOURCES:
                    continue  # ECONNABORTED and the like: that connection only
                if not self.failed:
                    log.warning("listener %s: accept failed, retrying every 0.1 s: %s", self.listener.name, exc)
                self.failed += 1
                self.close()  # the existing connections go on; accepting resumes a moment later
                self._resume = self.loop.call_later(ACCEPT_ERROR_PAUSE_S, self._watch)
                return
            if self.failed:
                log.warning("listener %s: accepting again after %d failed accepts", self.listener.name, self.failed)
                self.failed = 0
            try:
                self._admit(sock, java_host_address(address[0]) if isinstance(address, tuple) else "")
            except Exception:  # a bug must not end the listener: this connection is closed, the next accepted
                log.exception("listener %s: accepting a connection failed", self.listener.name)
                sock.close()

    def _admit(self, sock: socket.socket, peer: str) -> None:
        """Take a place for `sock` (from `peer`, Kafka's form) and start its handshake, or close it at once when
        there is no place."""
        name = self.listener.name
        refused, probation = self.connections.admit(self.listener, peer)
        if refused is not None:
            self.connections.refuse(name, refusal_reason(refused))
            sock.close()  # before its handshake: no answer can be sent, as a full Kafka acceptor closes it
            return
        handshake = Handshake(sock, name, self.connections, self.loop.time() + self.handshake_timeout_s)
        self.connections.add(handshake, name, self.loop, peer)
        try:
            if probation:
                self.connections.on_probation(handshake, name)
            sock.setblocking(False)
            if _has_bytes(sock):  # a client's ClientHello is usually here by now
                self._begin(handshake)
                return
            fd = sock.fileno()
            self.loop.add_reader(fd, self._heard, handshake)  # TLS begins with its first bytes
        except BaseException:
            handshake.abort()  # not set up: its place is given up now (it was kept until request.timeout.ms)
            raise

        def unheard() -> None:
            self.loop.remove_reader(fd)

        handshake.unheard = unheard

    def _heard(self, handshake: Handshake) -> None:
        """The first bytes of an accepted connection arrived: its TLS handshake begins, bounded by what is left of
        request.timeout.ms since the accept."""
        if handshake.unheard is None:
            return
        handshake.unheard()
        handshake.unheard = None
        self._begin(handshake)

    def _begin(self, handshake: Handshake) -> None:
        handshake.heard = True
        handshake.task = self.loop.create_task(self._handshake(handshake))
        handshake.task.add_done_callback(handshake.ended)

    def _made(self, handshake: Handshake) -> asyncio.BaseProtocol:
        """The protocol of an accepted connection (asyncio takes its socket right after)."""
        handshake.protocol = self.protocol(handshake)
        handshake.attached = True
        return handshake.protocol  # type: ignore[no-any-return]

    async def _handshake(self, handshake: Handshake) -> None:
        left = max(handshake.deadline - self.loop.time(), 0.001)
        with contextlib.suppress(OSError, TimeoutError):  # a failed or late handshake: the client's problem
            await self.loop.connect_accepted_socket(
                lambda: self._made(handshake), handshake.sock, ssl=self.context, ssl_handshake_timeout=left
            )


def _has_bytes(sock: socket.socket) -> bool:
    """True when bytes (or the end, or an error) wait on `sock`: reading it now would not block."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True  # reset already: the handshake fails at once
    return True
