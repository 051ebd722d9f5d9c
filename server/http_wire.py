"""What serve's HTTP layer hands to handlers and takes back: `Request`, `Response`, `StreamedResponse`, and their
bytes on the wire (status line, headers, chunked framing).

`Request` is filled by one connection on the event loop thread (its head first, then its body) and read-only for
handlers; responses are immutable once returned. Pure functions otherwise.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from kraftacl.server.auth import Caller

_STATUS_LINES = {s.value: f"HTTP/1.1 {s.value} {s.phrase}\r\n".encode() for s in HTTPStatus}
_ENCODE = msgspec.json.Encoder()
CLOSE = (b"connection", b"close")
LINGER_S = 2.0  # after a refusal: how long the client's unread bytes are discarded before closing


@dataclass(slots=True)
class Request:
    """One request: its head (admitted before any body byte is read: `caller` and `route` are set then), then
    its body. `peer_host` is the client address in Kafka's form (Java's getHostAddress(): IPv4-mapped IPv6 is
    IPv4); `principal_from_tls` the client certificate's principal on mutual-TLS listeners."""

    method: str
    path: str
    query: str
    headers: dict[bytes, bytes]
    peer_host: str
    listener: str
    principal_from_tls: str | None
    body: bytes | bytearray = b""  # a bytearray past `server.http.GATHER_ABOVE`
    caller: Caller | None = None
    route: Any = None  # the api's Route (the http layer does not look inside)
    keep_alive: bool = True


@dataclass(slots=True)
class Response:
    """Status, body and content type; `headers` are extra (name, value) pairs. `upgrade` (a 101 answer): the
    protocol that takes the connection over once the 101 is sent (`server.frames`)."""

    status: int
    body: bytes
    content_type: bytes = b"application/json"
    headers: Sequence[tuple[bytes, bytes]] = ()  # a shared empty tuple by default: no list made per answer
    upgrade: Callable[[], Any] | None = None


@dataclass(slots=True)
class StreamedResponse:
    """A large answer produced in pieces (sent with chunked transfer encoding as the client reads it): the
    pieces' total is never held at once, and producing the next piece waits while the client does not read."""

    status: int
    pieces: AsyncIterator[bytes]
    content_type: bytes = b"application/json"
    on_close: Callable[[], None] | None = None  # called once the answer is done with, sent whole or not


Outcome = Response | StreamedResponse | Awaitable["Response | StreamedResponse"]
Dispatch = Callable[[Request], Outcome]


def error_body(status: int, code: str, message: str, field_name: str | None = None) -> Response:
    """A JSON error body (`{"error": {"code", "message", "field"?}}`) for failures the HTTP layer finds itself."""
    error: dict[str, str] = {"code": code, "message": message}
    if field_name is not None:
        error["field"] = field_name
    return Response(status, _ENCODE.encode({"error": error}))


def _head(status: int, content_type: bytes, extra: Sequence[tuple[bytes, bytes]], keep_alive: bool) -> list[bytes]:
    head = [
        _STATUS_LINES.get(status) or f"HTTP/1.1 {status} Unknown\r\n".encode(),
        b"content-type: ",
        content_type,
        b"\r\n",
    ]
    for name, value in extra:
        head += [name, b": ", value, b"\r\n"]
    if not keep_alive:
        head.append(b"connection: close\r\n")
    return head


def encode_response(response: Response, keep_alive: bool) -> bytes:
    """The response's bytes: status line, Content-Type, Content-Length, extra headers, body."""
    if keep_alive and not response.headers:  # every decision's answer: one precomputed head and one format
        start = _PLAIN_STARTS.get((response.status, response.content_type))
        if start is None:
            start = _plain_start(response.status, response.content_type)
        return b"%s%d\r\n\r\n%s" % (start, len(response.body), response.body)
    head = _head(response.status, response.content_type, response.headers, keep_alive)
    head += [b"content-length: ", str(len(response.body)).encode(), b"\r\n\r\n", response.body]
    return b"".join(head)


# (status, content type) -> the head of a keep-alive answer without extra headers, up to Content-Length's value: the
# statuses and content types are serve's own constants, so this stays small (bounded all the same)
_PLAIN_STARTS: dict[tuple[int, bytes], bytes] = {}
_MAX_PLAIN_STARTS = 256


def _plain_start(status: int, content_type: bytes) -> bytes:
    start = b"".join([*_head(status, content_type, [], True), b"content-length: "])
    if len(_PLAIN_STARTS) < _MAX_PLAIN_STARTS:
        _PLAIN_STARTS[(status, content_type)] = start
    return start


def encode_switching(response: Response) -> bytes:
    """A 101 Switching Protocols: its status line and headers, no body."""
    return b"".join([_STATUS_LINES[101], *(b"%s: %s\r\n" % pair for pair in response.headers), b"\r\n"])


def encode_stream_head(response: StreamedResponse, keep_alive: bool) -> bytes:
    """The head of a streamed response (chunked transfer encoding)."""
    return b"".join(
        [*_head(response.status, response.content_type, [], keep_alive), b"transfer-encoding: chunked\r\n\r\n"]
    )


def encode_chunk(piece: bytes) -> bytes:
    """One chunk of a chunked body (an empty piece is the last chunk)."""
    return b"%x\r\n%s\r\n" % (len(piece), piece)
