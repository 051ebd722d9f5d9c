"""A minimal keep-alive HTTP/1.1 client for the serve benchmark: pre-encoded POSTs on one socket, responses
read with httptools' parser, so the figures measure serve and the network rather than a client library.

One `KeepAlive` per thread or process.
"""

from __future__ import annotations

import socket

import httptools


class KeepAlive:
    """POSTs to one path over one TCP connection (TCP_NODELAY); `post` returns the status and body."""

    def __init__(self, host: str, port: int, path: str, token: str) -> None:
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nContent-Length: "
        ).encode()
        self.parser = httptools.HttpResponseParser(self)
        self.body: list[bytes] = []
        self.complete = False

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True

    def post(self, body: bytes) -> tuple[int, bytes]:
        """Send one request and read its whole response."""
        self.sock.sendall(self.head + str(len(body)).encode() + b"\r\n\r\n" + body)
        self.body, self.complete = [], False
        while not self.complete:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("serve closed the connection")
            self.parser.feed_data(chunk)
        status = self.parser.get_status_code()
        if status != 200:
            raise RuntimeError(f"serve answered {status}: {b''.join(self.body)[:200]!r}")
        return status, b"".join(self.body)

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()

    def __enter__(self) -> KeepAlive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
