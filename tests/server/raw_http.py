"""Raw HTTP/1.1 over a socket for the adversarial serve tests: exact bytes out (heads without bodies, pipelined
requests, malformed framing), responses parsed with httptools as they arrive.

One `Raw` per socket, used by one test thread.
"""

from __future__ import annotations

import json
import socket
import ssl
from dataclasses import dataclass, field
from typing import Any

import httptools

from kraftacl.api.frames import upgrade_head


@dataclass
class Answer:
    """One parsed response."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class _Parsed:
    answers: list[Answer] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    body: list[bytes] = field(default_factory=list)
    parser: Any = None

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode().lower()] = value.decode()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.answers.append(Answer(self.parser.get_status_code(), self.headers, b"".join(self.body)))
        self.headers, self.body = {}, []


def address(url: str) -> tuple[str, int]:
    """(host, port) of an http(s)://host:port URL (IPv6 in brackets)."""
    hostport = url.split("://", 1)[1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    return host.strip("[]"), int(port)


def head(method: str, path: str, token: str | None = None, length: int | None = None, extra: str = "") -> bytes:
    """A request head (no body)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: serve"]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if extra:
        lines.append(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def post(path: str, body: bytes | dict[str, Any], token: str | None = None, extra: str = "") -> bytes:
    """A whole POST."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return head("POST", path, token, len(data), extra) + data


class Raw:
    """A client socket: send bytes, read whole responses, see when serve closes."""

    def __init__(
        self, url: str, timeout: float = 10.0, tls: ssl.SSLContext | None = None, source: str | None = None
    ) -> None:
        host, port = address(url)
        sock = socket.create_connection((host, port), timeout=timeout, source_address=source and (source, 0))
        self.sock: socket.socket = tls.wrap_socket(sock, server_hostname=host) if tls is not None else sock
        self.parsed = _Parsed()
        self.parsed.parser = httptools.HttpResponseParser(self.parsed)
        self.closed = False

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answers(self, count: int = 1) -> list[Answer]:
        """Read until `count` responses arrived (or serve closed: fewer)."""
        while len(self.parsed.answers) < count and not self.closed:
            self._read()
        out, self.parsed.answers = self.parsed.answers[:count], self.parsed.answers[count:]
        return out

    def answer(self) -> Answer:
        found = self.answers(1)
        assert found, "serve closed the connection without answering"
        return found[0]

    def until_closed(self) -> list[Answer]:
        """Every response until serve closes the connection."""
        while not self.closed:
            self._read()
        out, self.parsed.answers = self.parsed.answers, []
        return out

    def _read(self) -> None:
        try:
            chunk = self.sock.recv(1 << 16)
        except (ConnectionResetError, ssl.SSLError):
            chunk = b""
        if not chunk:
            self.closed = True
            return
        self.parsed.parser.feed_data(chunk)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_all(sock: socket.socket) -> bytes:
    """Everything `sock` receives until the peer closes."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def upgraded(url: str, token: str, rcvbuf: int | None = None, timeout: float = 30.0) -> socket.socket:
    """A connection upgraded to decision frames (`GET /v1/frames` answered 101); `rcvbuf` set before connecting
    (the receive window it offers)."""
    host, port = address(url)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(timeout)
    sock.connect((host, port))
    sock.sendall(upgrade_head(host, token))
    got = b""
    while not got.endswith(b"\r\n\r\n"):
        got += sock.recv(1)
    assert got.startswith(b"HTTP/1.1 101 "), got
    return sock
