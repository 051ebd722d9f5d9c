"""Decision frames (`kraft-acl-frames/1`): the lean transport for the broker's hot path, its wire layout, and a
blocking client of it.

A connection is upgraded once (`GET /v1/frames`, `Connection: Upgrade`, `Upgrade: kraft-acl-frames/1`, the usual
credentials) and then carries frames both ways; all integers are big-endian:

* request: `length:u32 | id:u32 | kind:u8 | body` (length = 5 + len(body));
* answer: `length:u32 | id:u32 | status:u16 | body` (length = 6 + len(body)).

`kind` names a decision endpoint (`KINDS`), `body` is that endpoint's JSON body (request and answer), `status`
the HTTP status it would have answered, `id` the client's, echoed (answers may come out of order). Immutable
values; a `FrameClient` is one connection, for one thread.
"""

from __future__ import annotations

import socket
import ssl
import struct
from typing import Any

from kraftacl.api import endpoints as ep

PROTOCOL = "kraft-acl-frames/1"
PATH = "/v1/frames"
KINDS: dict[int, ep.Endpoint[Any, Any]] = {1: ep.AUTHORIZE, 2: ep.BY_RESOURCE_TYPE, 3: ep.AUTHORIZED_OPERATIONS}
KIND_OF_PATH = {endpoint.path: kind for kind, endpoint in KINDS.items()}
REQUEST = struct.Struct(">IIB")  # length, id, kind
ANSWER = struct.Struct(">IIH")  # length, id, status
SWITCHING = b"HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: " + PROTOCOL.encode() + b"\r\n\r\n"


def request_frame(frame_id: int, kind: int, body: bytes) -> bytes:
    """One request frame."""
    return REQUEST.pack(5 + len(body), frame_id, kind) + body


def answer_frame(frame_id: int, status: int, body: bytes) -> bytes:
    """One answer frame."""
    return ANSWER.pack(6 + len(body), frame_id, status) + body


def upgrade_head(host: str, token: str | None) -> bytes:
    """The HTTP request that turns a new connection into a framed one."""
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"GET {PATH} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: {PROTOCOL}\r\n{auth}\r\n").encode()


class UpgradeRefused(Exception):
    """serve answered the upgrade with an ordinary HTTP answer (`status`, `head` with its body)."""

    def __init__(self, status: int, head: bytes) -> None:
        super().__init__(f"serve refused the upgrade to {PROTOCOL}: HTTP {status}: {head[:300]!r}")
        self.status = status
        self.head = head


class FrameClient:
    """One framed connection (TCP_NODELAY): `call` sends one request and reads its answer."""

    def __init__(
        self, host: str, port: int, token: str | None, timeout: float = 30.0, tls: ssl.SSLContext | None = None
    ) -> None:
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock: socket.socket = sock if tls is None else tls.wrap_socket(sock, server_hostname=host)
        self.sock.sendall(upgrade_head(host, token))
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self._more()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        if status != 101:
            self.sock.settimeout(1.0)
            try:
                while True:
                    chunk = self.sock.recv(65536)
                    if not chunk:
                        break
                    self.buffer += chunk
            except OSError:
                pass
            self.sock.close()
            raise UpgradeRefused(status, head + b"\r\n\r\n" + self.buffer)
        self.next_id = 1

    def _more(self) -> None:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("serve closed the connection")
        self.buffer += chunk

    def send(self, kind: int, body: bytes) -> int:
        """Send one request frame; its id."""
        frame_id, self.next_id = self.next_id, self.next_id + 1
        self.sock.sendall(request_frame(frame_id, kind, body))
        return frame_id

    def receive(self) -> tuple[int, int, bytes]:
        """The next answer frame: (id, status, body)."""
        while len(self.buffer) < 4:
            self._more()
        length = struct.unpack_from(">I", self.buffer)[0]
        while len(self.buffer) < 4 + length:
            self._more()
        _, frame_id, status = ANSWER.unpack_from(self.buffer)
        body, self.buffer = self.buffer[ANSWER.size : 4 + length], self.buffer[4 + length :]
        return frame_id, status, body

    def call(self, kind: int, body: bytes) -> tuple[int, bytes]:
        """One request and its answer: (status, body)."""
        frame_id = self.send(kind, body)
        answer_id, status, answer = self.receive()
        if answer_id != frame_id:
            raise ConnectionError(f"answer frame {answer_id} for request frame {frame_id}")
        return status, answer

    def close(self) -> None:
        """Close the connection."""
        self.sock.close()

    def __enter__(self) -> FrameClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
