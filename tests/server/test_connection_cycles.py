"""A closed connection is freed by reference counting, not left to the cyclic collector (`server.http`,
_SPENT_PARSER): httptools' parser holds its protocol's bound callbacks, so a connection that kept its parser was a
reference cycle, and every gc.freeze() serve makes (each POST /v1/acls/import, each bulk publish) moved the
cycles of the connections closed since the last full collection to the permanent generation, where they stay for
the life of the process. In process, on a real uvloop loop over real sockets, with the collector off."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import uvloop

from kraftacl.server.config_listeners import Listener
from kraftacl.server.connections import Connections
from kraftacl.server.frames import FrameConnection
from kraftacl.server.http import HttpProtocol
from kraftacl.server.http_wire import Request, Response
from tests.server.test_http_protocol import LIMITS

UPGRADE = b"GET /v1/frames HTTP/1.1\r\nHost: s\r\nConnection: Upgrade\r\nUpgrade: kraft-acl-frames/1\r\n\r\n"


def _dispatch(request: Request) -> Response:
    if request.path == "/v1/frames":
        upgrade = Request("GET", "/v1/frames", "", {}, "127.0.0.1", "CLIENT", None)
        kinds: dict[int, Any] = {1: ("/v1/authorize", None, 1 << 20, "request.max.bytes")}
        return Response(101, b"", upgrade=lambda: FrameConnection(_dispatch, kinds, upgrade, trusted=False))
    return Response(200, b"{}")


def _admit(request: Request, probation: bool) -> Response | tuple[int, str]:
    return Response(401, b"{}") if request.path == "/refused" else (1 << 20, "request.max.bytes")


def _alive_after(requests: list[bytes]) -> int:
    """Connections (protocols) still alive after each client sent one of `requests`, read an answer and closed."""
    protocols: list[weakref.ref[HttpProtocol]] = []

    async def run() -> None:
        connections = Connections(LIMITS)
        listener = Listener("CLIENT", "127.0.0.1", 0, early_start=False)

        def made() -> HttpProtocol:
            protocol = HttpProtocol(
                _admit,
                _dispatch,
                listener,
                LIMITS,
                connections,
                lambda cert: None,
                frozenset(),
            )
            protocols.append(weakref.ref(protocol))
            return protocol

        server = await asyncio.get_running_loop().create_server(made, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        for request in requests:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            expected = b"101" if request == UPGRADE else b"401" if b"/refused" in request else b"200"
            assert head.split(b" ", 2)[1] == expected
            writer.close()
            await writer.wait_closed()
        for _ in range(50):
            await asyncio.sleep(0.01)
            if not any(ref() is not None for ref in protocols):
                break
        server.close()
        await server.wait_closed()

    gc.collect()
    gc.disable()
    try:
        uvloop.run(run())
        return sum(ref() is not None for ref in protocols)
    finally:
        gc.enable()


def test_a_closed_connection_is_freed_without_the_cyclic_collector() -> None:
    request = b"POST /v1/authorize HTTP/1.1\r\nHost: s\r\nContent-Length: 2\r\n\r\n{}"
    assert _alive_after([request] * 20) == 0


def test_an_upgraded_connections_http_protocol_is_freed_without_the_cyclic_collector() -> None:
    assert _alive_after([UPGRADE] * 20) == 0


def test_a_connection_refused_at_its_head_is_freed_without_the_cyclic_collector() -> None:
    assert _alive_after([b"GET /refused HTTP/1.1\r\nHost: s\r\n\r\n"] * 20) == 0
