"""Decision frames' deadlines with frames in flight (`server.frames`, its docstring's rule), against a real serve
process over real sockets: a frame begun must be whole within request.timeout.ms of its first byte even while
another frame is being answered (its reserved request memory released when the connection closes), a client that
does not read its answers is aborted within request.timeout.ms even while a frame is being answered, and a frame
being answered keeps an otherwise idle connection open past connections.max.idle.ms, whose clock starts when the
answer is sent.

A frame "being answered" for as long as a test wants: an explain of more than 32 actions is handed to the reader
process (heavy.reads.process=on, `server.reader`), which the test stops (SIGSTOP) until the test is over.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kraftacl.api.frames import REQUEST, request_frame
from tests.server.raw_http import address, upgraded
from tests.server.serve_process import (
    ADMIN_TOKEN,
    ALICE_READ_ORDERS,
    BROKER_TOKEN,
    ServeProcess,
    base_properties,
    reader_pid,
)

AUTHORIZE = 1
SLOW = msgspec.json.encode(  # an explain of 42 actions: handed to the reader (more than explain.INLINE_RULES)
    {
        "principal": "User:alice",
        "client_address": "10.0.0.1",
        "explain": True,
        "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": f"t-{i}"} for i in range(42)],
    }
)
BOUND_S = 12.0  # request.timeout.ms is 1-2 s; connections.max.idle.ms 120 s on `slow`: generous, and far apart


def _serve(work: Path, idle_ms: str, request_ms: str = "1000", unsent_bytes: str = "1048576") -> ServeProcess:
    props = base_properties(
        work,
        heavy_reads_process="on",
        request_timeout_ms=request_ms,
        connections_max_idle_ms=idle_ms,
        connections_max_unsent_bytes=unsent_bytes,
    )
    return ServeProcess(work / "serve", props)


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, int]]:
    """serve with a reader, request.timeout.ms 2 s (time to see a reservation before it is released), idle
    connections kept 120 s, 4 KiB unsent answer bytes; its reader's pid."""
    work = tmp_path_factory.mktemp("frame-deadlines")
    with _serve(work, idle_ms="120000", request_ms="2000", unsent_bytes="4096").start() as serve:
        with serve.client(token=ADMIN_TOKEN) as admin:
            assert admin.post("/v1/acls/create", json={"acls": [ALICE_READ_ORDERS]}).status_code == 200
        yield serve, reader_pid(serve)


@contextlib.contextmanager
def _reader_stopped(pid: int) -> Iterator[None]:
    """Frames handed to the reader stay in flight meanwhile."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _gauge(serve: ServeProcess, name: str, listener: str | None = None) -> float:
    families = text_string_to_metric_families(serve.metrics_text(ADMIN_TOKEN, "CONTROLLER"))
    samples = [s for f in families if f.name == name for s in f.samples]
    return sum(s.value for s in samples if listener is None or s.labels.get("listener") == listener)


def _until(done: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _upgraded(serve: ServeProcess, rcvbuf: int | None = None) -> socket.socket:
    return upgraded(serve.url("CLIENT"), BROKER_TOKEN, rcvbuf)


def _closed(sock: socket.socket, seconds: float) -> bool:
    """The connection ended (end of file or reset) within `seconds`, whatever answers came first."""
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except OSError:
        pass
    return True


def test_a_frame_begun_while_another_is_answered_must_still_be_whole_in_time(slow: tuple[ServeProcess, int]) -> None:
    """A frame declaring 12 MiB (reserved from the request memory), begun and never finished while another frame
    is being answered: the connection closes about request.timeout.ms after, and the 12 MiB are released."""
    serve, reader = slow
    assert _until(lambda: _gauge(serve, "kraft_acl_connections", "CLIENT") == 0, 5)
    assert _gauge(serve, "kraft_acl_request_bytes") == 0
    with _reader_stopped(reader), _upgraded(serve) as sock:
        partial = REQUEST.pack(5 + 12 * 2**20, 2, AUTHORIZE) + b'{"principal":'
        sock.sendall(request_frame(1, AUTHORIZE, SLOW) + partial)
        started = time.monotonic()
        assert _until(lambda: _gauge(serve, "kraft_acl_request_bytes") == 12 * 2**20, BOUND_S)
        assert _closed(sock, BOUND_S), "the partial frame's deadline was lost while a frame was being answered"
        assert time.monotonic() - started < BOUND_S
        assert _until(lambda: _gauge(serve, "kraft_acl_request_bytes") == 0, 5)
        assert _until(lambda: _gauge(serve, "kraft_acl_connections", "CLIENT") == 0, 5)


def test_a_client_not_reading_its_answers_is_aborted_while_a_frame_is_answered(
    slow: tuple[ServeProcess, int],
) -> None:
    """A client that stops reading while one of its frames is being answered: once serve holds more unsent answer
    bytes than connections.max.unsent.bytes it stops reading the connection, and aborts it request.timeout.ms after
    (not at connections.max.idle.ms, 120 s here, nor never)."""
    serve, reader = slow
    assert _until(lambda: _gauge(serve, "kraft_acl_connections", "CLIENT") == 0, 5)
    unknown = request_frame(0, 9, b"")  # 9 bytes, answered at once: a 400 of about 190 bytes naming the kinds
    with _reader_stopped(reader), _upgraded(serve, rcvbuf=4096) as sock:
        sock.sendall(request_frame(1, AUTHORIZE, SLOW))
        sock.setblocking(False)
        sent, last_progress = 0, time.monotonic()
        while time.monotonic() - last_progress < 1.0 and sent < 64 * 2**20:  # until serve stops reading
            try:
                sent += sock.send(unknown * 4096)
                last_progress = time.monotonic()
            except BlockingIOError:
                time.sleep(0.01)
            except OSError:
                break  # already aborted
        assert sent < 64 * 2**20, "serve never stopped reading a client that does not read its answers"
        stalled = time.monotonic()
        assert _until(lambda: _gauge(serve, "kraft_acl_connections", "CLIENT") == 0, BOUND_S), (
            "a client not reading its answers kept its connection while a frame was being answered"
        )
        assert time.monotonic() - stalled < BOUND_S
        sock.setblocking(True)
        assert _closed(sock, 5)


def test_a_frame_being_answered_keeps_the_connection_the_idle_clock_starts_after(tmp_path: Path) -> None:
    """connections.max.idle.ms 2 s: a frame answered after 4 s keeps the connection open meanwhile (it is not
    idle); once answered, the connection is idle and closes about 2 s later."""
    with _serve(tmp_path, idle_ms="2000").start() as serve:
        reader = reader_pid(serve)
        with _upgraded(serve) as sock:
            with _reader_stopped(reader):
                sock.sendall(request_frame(1, AUTHORIZE, SLOW))
                time.sleep(4)
                assert _gauge(serve, "kraft_acl_connections", "CLIENT") == 1
            data = b""
            while len(data) < 4 or len(data) < 4 + struct.unpack_from(">I", data)[0]:
                data += sock.recv(65536)
            assert struct.unpack_from(">IIH", data)[1:] == (1, 200)
            answered = time.monotonic()
            assert _closed(sock, BOUND_S)
            assert 1.0 < time.monotonic() - answered < BOUND_S


def test_an_http_request_begun_while_another_is_answered_must_still_be_whole_in_time(
    slow: tuple[ServeProcess, int],
) -> None:
    """The same rule over HTTP/1.1: a request pipelined behind one being answered (the head of a 12 MiB body,
    reserved, the body never sent) must be whole within request.timeout.ms of its first byte; before, its clock
    started only once the answer before it was sent, so a long answer let it hold the memory that long."""
    serve, reader = slow
    assert _until(lambda: _gauge(serve, "kraft_acl_connections", "CLIENT") == 0, 5)
    host, port = address(serve.url("CLIENT"))
    with _reader_stopped(reader), socket.create_connection((host, port), timeout=30) as sock:
        slow_request = (
            f"POST /v1/authorize HTTP/1.1\r\nHost: s\r\nAuthorization: Bearer {BROKER_TOKEN}\r\n"
            f"Content-Length: {len(SLOW)}\r\n\r\n"
        ).encode() + SLOW
        partial = (
            f"POST /v1/authorize HTTP/1.1\r\nHost: s\r\nAuthorization: Bearer {BROKER_TOKEN}\r\n"
            f"Content-Length: {12 * 2**20}\r\n\r\n"
        ).encode() + b'{"principal":'
        sock.sendall(slow_request + partial)
        started = time.monotonic()
        assert _until(lambda: _gauge(serve, "kraft_acl_request_bytes") >= 12 * 2**20, BOUND_S)
        assert _closed(sock, BOUND_S), "the request's deadline waited for the answer before it"
        assert time.monotonic() - started < BOUND_S
        assert _until(lambda: _gauge(serve, "kraft_acl_request_bytes") == 0, 5)
        assert _until(lambda: _gauge(serve, "kraft_acl_connections", "CLIENT") == 0, 5)
