"""serve's listening sockets: every listener's port taken exclusively at start, before any file is created,
and its TLS context; a port conflict is one line and exit 1, with nothing created.

A listener that is not early-start stays bound but not listening during the initial load, so its port refuses
connections (as a Kafka broker's does before its authorizer is ready). It is bound with SO_REUSEADDR (a restart
must not wait for the last run's TIME_WAIT connections) and the option is then cleared until it listens: Linux
lets two sockets that both set SO_REUSEADDR share a port while neither listens, so another process could
otherwise take the port during the load. The option is set again just before listen, so that the accepted
connections' TIME_WAIT never blocks the next restart.

Pure functions over sockets; used at start-up on the main thread.
"""

from __future__ import annotations

import socket
import ssl

from kraftacl.server.config import Listener
from kraftacl.server.log_backend import ServeError


def tls_context(listener: Listener) -> ssl.SSLContext | None:
    """The server-side TLS context of an SSL listener (mutual TLS when client certificates are required)."""
    tls = listener.tls
    if tls is None:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(tls.certfile, tls.keyfile)
        if tls.cafile is not None:
            ctx.load_verify_locations(cafile=str(tls.cafile))
    except (OSError, ssl.SSLError) as exc:
        raise ServeError(f"listener {listener.name}: cannot load its certificate, key or CA file: {exc}") from exc
    ctx.verify_mode = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL}.get(
        tls.client_auth, ssl.CERT_NONE
    )
    return ctx


def bind(listener: Listener) -> socket.socket:
    """A bound (not yet listening) socket that no other process can bind or listen on; connections are refused
    until `listen`. `::` is a dual-stack listener (IPv4 clients arrive as ::ffff:a.b.c.d)."""
    family = socket.AF_INET6 if listener.ipv6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((listener.host, listener.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)  # exclusive until it listens
    except OSError as exc:
        sock.close()
        where = listener.url(listener.port).split("://")[1]
        raise ServeError(f"listener {listener.name}: cannot bind {where}: {exc.strerror}") from exc
    sock.setblocking(False)
    return sock


def bind_all(listeners: tuple[Listener, ...]) -> dict[str, socket.socket]:
    """Every listener bound, or none (ServeError naming the first that failed)."""
    bound: dict[str, socket.socket] = {}
    try:
        for listener in listeners:
            bound[listener.name] = bind(listener)
    except ServeError:
        for sock in bound.values():
            sock.close()
        raise
    return bound


def ready_to_listen(sock: socket.socket) -> None:
    """SO_REUSEADDR again just before listen (see the module docstring)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
