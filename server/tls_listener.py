"""A TLS listener that counts a connection from its accept: its handshake holds a place under max.connections like
any connection, a new one is closed at once when no place is free, and the handshake must end within
request.timeout.ms.

asyncio's own TLS server (`create_server(ssl=...)`) shows a connection to its protocol only once the handshake is
done, so a caller could hold any number of TCP connections in their handshake; here serve accepts the socket
itself (`sock_accept`), takes its place, and hands it to asyncio's TLS (`connect_accepted_socket`), whose
`HttpProtocol` trades the place for its own when the handshake completes (`HttpProtocol.connection_made`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import socket
import ssl
from collections.abc import Callable

from kraftacl.server.config import Listener
from kraftacl.server.connections import Connections

log = logging.getLogger("kraft_acl.serve")

ACCEPT_ERROR_PAUSE_S = 0.1  # after EMFILE and the like: accept again a moment later (Kafka's acceptor backs off too)


class Handshake:
    """One accepted connection in its TLS handshake, as the registry sees it (`server.connections.Connection`)."""

    def __init__(self, sock: socket.socket, listener: str, connections: Connections, deadline: float) -> None:
        self.sock, self.listener, self.connections = sock, listener, connections
        self.deadline = deadline
        self.task: asyncio.Task[None] | None = None
        self.attached = False  # asyncio's transport owns the socket (and closes it)

    def busy(self) -> bool:
        return False  # nothing to finish: shutdown closes it at once

    def timed_out(self) -> None:
        self.abort()  # asyncio's handshake timeout (the same) normally ends it first

    def close_when_idle(self) -> None:
        self.abort()

    def evict(self) -> None:
        self.connections.remove(self, self.listener)
        self.abort()

    def abort(self) -> None:
        """End the handshake: its transport closes the socket, or the socket is closed here if it has none yet."""
        self.deadline = math.inf
        if self.task is not None and not self.task.done():
            self.task.cancel()
        elif not self.attached:
            self.sock.close()

    def ended(self, _task: asyncio.Task[None]) -> None:
        """The handshake task ended (done, failed, timed out or cancelled): its place is given up."""
        self.connections.remove(self, self.listener)
        if not self.attached:
            self.sock.close()  # cancelled before asyncio took the socket


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
        self._task: asyncio.Task[None] | None = None

    def start(self, backlog: int) -> None:
        """Listen and accept from now on."""
        self.sock.setblocking(False)
        self.sock.listen(backlog)
        self._task = asyncio.get_running_loop().create_task(self._accept())

    def close(self) -> None:
        """Stop accepting (the connections already accepted stay)."""
        if self._task is not None:
            self._task.cancel()  # cancels its `sock_accept`, which stops watching the socket at once

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        failed = 0  # accepts failed in a row (logged at the first, and when accepting works again)
        while True:
            try:
                sock, _ = await loop.sock_accept(self.sock)
                if failed:
                    log.warning("listener %s: accepting again after %d failed accepts", self.listener.name, failed)
                    failed = 0
                self._admit(sock, loop)
            except OSError as exc:  # EMFILE, ENFILE, ENOBUFS: the connections that exist go on
                if not failed:
                    log.warning("listener %s: accept failed, retrying every 0.1 s: %s", self.listener.name, exc)
                failed += 1
                await asyncio.sleep(ACCEPT_ERROR_PAUSE_S)
            except Exception:  # a bug must not end the listener: the next connection is accepted all the same
                log.exception("listener %s: accepting a connection failed", self.listener.name)
                await asyncio.sleep(ACCEPT_ERROR_PAUSE_S)

    def _admit(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        """Take a place for `sock` and start its handshake, or close it at once when there is no place."""
        name = self.listener.name
        refused, probation = self.connections.admit(self.listener)
        if refused is not None:
            self.connections.refuse(name, "limit" if "max.connections" in refused else "closing")
            sock.close()  # before its handshake: no answer can be sent, as a full Kafka acceptor closes it
            return
        handshake = Handshake(sock, name, self.connections, loop.time() + self.handshake_timeout_s)
        self.connections.add(handshake, name, loop)
        if probation:
            self.connections.on_probation(handshake, name)
        handshake.task = loop.create_task(self._handshake(handshake, loop))
        handshake.task.add_done_callback(handshake.ended)

    async def _handshake(self, handshake: Handshake, loop: asyncio.AbstractEventLoop) -> None:
        handshake.attached = True  # connect_accepted_socket takes the socket before it first waits
        with contextlib.suppress(OSError, TimeoutError):  # a failed or late handshake: the client's problem
            await loop.connect_accepted_socket(
                lambda: self.protocol(handshake),
                handshake.sock,
                ssl=self.context,
                ssl_handshake_timeout=self.handshake_timeout_s,
            )
