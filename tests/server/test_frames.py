"""Decision frames (`kraft-acl-frames/1`) against a real serve process: the upgrade is admitted like any request
head (401 without credentials, 400 without the Upgrade header), frames answer exactly what the HTTP endpoints
answer, pipelined frames are matched by id (a waiting one answered after a later one), and bad frames get one
answer naming what was wrong; over TCP and TLS."""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kraftacl.api.frames import FrameClient, UpgradeRefused, request_frame
from tests.server.raw_http import Raw, address, head, read_all, upgraded
from tests.server.serve_process import (
    ADMIN_TOKEN,
    ALICE_READ_ORDERS,
    ALICE_TOKEN,
    BROKER_TOKEN,
    ServeProcess,
    add_tls_listener,
    base_properties,
)

AUTHORIZE, BY_TYPE, OPERATIONS = 1, 2, 3
READ_ORDERS = {"operation": "READ", "resource_type": "TOPIC", "resource_name": "orders"}


@pytest.fixture(scope="module")
def framed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, ssl.SSLContext]]:
    """A controller+broker serve with one ACL, a PLAINTEXT and a TLS listener, request.timeout.ms 1 s."""
    work: Path = tmp_path_factory.mktemp("frames")
    props = base_properties(work, request_timeout_ms="1000", request_max_bytes="2097152")
    client_tls = add_tls_listener(props, work)
    with ServeProcess(work / "serve", props).start() as serve, serve.client(token=ADMIN_TOKEN) as admin:
        assert admin.post("/v1/acls/create", json={"acls": [ALICE_READ_ORDERS]}).status_code == 200
        yield serve, client_tls


def _frames(serve: ServeProcess, token: str | None = BROKER_TOKEN, tls: ssl.SSLContext | None = None) -> FrameClient:
    host, port = address(serve.url("TLS" if tls else "CLIENT"))
    return FrameClient(host, port, token, timeout=10.0, tls=tls)


def _json(body: dict[str, Any]) -> bytes:
    return msgspec.json.encode(body)


def _subject(**extra: Any) -> dict[str, Any]:
    return {"principal": "User:alice", "client_address": "10.0.0.1", **extra}


BODIES = [
    (AUTHORIZE, "/v1/authorize", _subject(actions=[READ_ORDERS])),
    (AUTHORIZE, "/v1/authorize", _subject(actions=[READ_ORDERS, {**READ_ORDERS, "resource_name": "other"}])),
    (AUTHORIZE, "/v1/authorize", _subject(actions=[READ_ORDERS], rules="all")),
    (AUTHORIZE, "/v1/authorize", _subject(actions=[READ_ORDERS], explain=True)),
    (AUTHORIZE, "/v1/authorize", _subject(actions=[{**READ_ORDERS, "operation": "WRITE"}])),
    (BY_TYPE, "/v1/authorize-by-resource-type", _subject(operation="READ", resource_type="TOPIC")),
    (OPERATIONS, "/v1/authorized-operations", _subject(resource_type="TOPIC", resource_name="orders")),
    (AUTHORIZE, "/v1/authorize", _subject(actions=[{**READ_ORDERS, "operation": "NOPE"}])),
    (AUTHORIZE, "/v1/authorize", {"principal": "User:alice"}),
]


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_frames_answer_what_http_answers(framed: tuple[ServeProcess, ssl.SSLContext], tls: bool) -> None:
    serve, client_tls = framed
    with serve.client(token=BROKER_TOKEN) as http, _frames(serve, tls=client_tls if tls else None) as frames:
        for kind, path, body in BODIES:
            expected = http.post(path, json=body)
            status, answer = frames.call(kind, _json(body))
            assert (status, msgspec.json.decode(answer)) == (expected.status_code, expected.json()), body


def test_upgrade_is_admitted_at_its_head(framed: tuple[ServeProcess, ssl.SSLContext]) -> None:
    serve, _ = framed
    for token, status in [(None, 401), ("not-a-token-0123456789", 401)]:
        with pytest.raises(UpgradeRefused) as refused:
            _frames(serve, token)
        assert refused.value.status == status
        assert b"UNAUTHENTICATED" in refused.value.head
    with Raw(serve.url("CLIENT")) as raw:  # no Upgrade header: an ordinary GET of the path
        raw.send(head("GET", "/v1/frames", BROKER_TOKEN))
        answer = raw.answer()
        assert (answer.status, answer.json()["error"]["field"]) == (400, "Upgrade")
    with Raw(serve.url("CLIENT")) as raw:
        raw.send(head("GET", "/v1/frames", BROKER_TOKEN, extra="Upgrade: websocket\r\nConnection: Upgrade\r\n"))
        assert raw.answer().status == 400
    with Raw(serve.url("CLIENT")) as raw:
        raw.send(head("POST", "/v1/frames", BROKER_TOKEN, length=0))
        answer = raw.answer()
        assert answer.status == 405


def test_a_caller_other_than_a_broker_asks_only_about_itself(framed: tuple[ServeProcess, ssl.SSLContext]) -> None:
    serve, _ = framed
    with _frames(serve, ALICE_TOKEN) as frames:
        assert frames.call(AUTHORIZE, _json(_subject(actions=[READ_ORDERS])))[0] == 200
        bob = {"principal": "User:bob", "client_address": "10.0.0.1", "actions": [READ_ORDERS]}
        status, answer = frames.call(AUTHORIZE, _json(bob))
        assert status == 403, answer


def test_pipelined_frames_are_matched_by_id(framed: tuple[ServeProcess, ssl.SSLContext]) -> None:
    serve, _ = framed
    with _frames(serve) as frames:
        allowed = _json(_subject(actions=[READ_ORDERS]))
        denied = _json(_subject(actions=[{**READ_ORDERS, "resource_name": "secret"}]))
        sent = {}
        for i in range(200):
            body = allowed if i % 3 else denied
            sent[frames.send(AUTHORIZE, body)] = "ALLOWED" if i % 3 else "DENIED"
        answers = [frames.receive() for _ in sent]
        assert {frame_id for frame_id, _, _ in answers} == set(sent)
        for frame_id, status, body in answers:
            assert status == 200
            assert msgspec.json.decode(body)["results"] == [sent[frame_id]]


def test_a_waiting_frame_does_not_hold_back_later_ones(framed: tuple[ServeProcess, ssl.SSLContext]) -> None:
    """A frame with `min_offset` past serve's state waits; a later frame is answered first; the waiting one is
    answered once an ACL write reaches that offset. The write is sent at once: serve answers a `min_offset` that a
    poll begun after the frame arrived found beyond the log's end with a 400 (no write answered it), so a write
    sent only after the later frame's answer came back, on a loaded host more than 50 ms later, raced that poll."""
    serve, _ = framed
    acl = {**ALICE_READ_ORDERS, "resource_name": f"waiting-{time.monotonic_ns()}"}
    with serve.client(token=BROKER_TOKEN) as http, serve.client(token=ADMIN_TOKEN) as admin, _frames(serve) as frames:
        offset = http.post("/v1/authorize", json=_subject(actions=[READ_ORDERS])).json()["offset"]
        waiting = frames.send(AUTHORIZE, _json(_subject(actions=[READ_ORDERS], min_offset=offset + 1)))
        later = frames.send(AUTHORIZE, _json(_subject(actions=[READ_ORDERS])))
        assert admin.post("/v1/acls/create", json={"acls": [acl]}).status_code == 200
        assert frames.receive()[0] == later
        frame_id, status, body = frames.receive()
        assert (frame_id, status) == (waiting, 200)
        assert msgspec.json.decode(body)["offset"] > offset


def test_bad_frames_are_named(framed: tuple[ServeProcess, ssl.SSLContext]) -> None:
    serve, _ = framed
    with _frames(serve) as frames:
        status, body = frames.call(9, _json(_subject(actions=[READ_ORDERS])))
        assert (status, msgspec.json.decode(body)["error"]["field"]) == (400, "kind")
        status, body = frames.call(AUTHORIZE, b'{"principal": "User:\xff", "actions": []}')
        assert (status, msgspec.json.decode(body)["error"]["field"]) == (400, "$.principal")
        status, body = frames.call(AUTHORIZE, b"{not json")
        assert status == 400 and b"malformed JSON" in body
        status, body = frames.call(BY_TYPE, _json({"principal": 1}))
        assert status == 400
        assert frames.call(AUTHORIZE, _json(_subject(actions=[READ_ORDERS])))[0] == 200  # still usable


@pytest.mark.parametrize(
    ("frame", "status", "field"),
    [
        (struct.pack(">IIB", 3, 7, 1), 400, "length"),  # shorter than its own header
        (struct.pack(">IIB", 5 + 10_000_000, 7, 1), 413, "length"),  # above every decision body limit
        (request_frame(7, BY_TYPE, b" " * 1_100_000)[:100_000], 413, "length"),  # above the small endpoints' limit
    ],
    ids=["short", "huge", "over-endpoint-limit"],
)
def test_an_unreadable_frame_is_answered_and_closes(
    framed: tuple[ServeProcess, ssl.SSLContext], frame: bytes, status: int, field: str
) -> None:
    serve, _ = framed
    with _upgraded(serve) as sock:
        sock.sendall(frame)
        answer = read_all(sock)
    length, frame_id, got = struct.unpack_from(">IIH", answer)
    assert (frame_id, got) == (7, status)
    assert msgspec.json.decode(answer[10 : 4 + length])["error"]["field"] == field


def test_a_frame_not_whole_in_time_closes_the_connection(framed: tuple[ServeProcess, ssl.SSLContext]) -> None:
    """request.timeout.ms (1 s here) applies from a frame's first byte; an idle upgraded connection stays."""
    serve, _ = framed
    body = _json(_subject(actions=[READ_ORDERS]))
    with _upgraded(serve) as sock, _upgraded(serve) as idle:
        sock.sendall(request_frame(1, AUTHORIZE, body)[:-5])
        started = time.monotonic()
        assert read_all(sock) == b""  # closed, no answer
        assert time.monotonic() - started < 8
        idle.sendall(request_frame(2, AUTHORIZE, body))
        assert struct.unpack_from(">IIH", _read_frame(idle))[1:] == (2, 200)


def test_a_frame_trickled_byte_by_byte_is_not_given_more_time(framed: tuple[ServeProcess, ssl.SSLContext]) -> None:
    """The deadline runs from a frame's first byte: bytes trickling in do not extend it."""
    serve, _ = framed
    frame = request_frame(1, AUTHORIZE, _json(_subject(actions=[READ_ORDERS])))
    with _upgraded(serve) as sock:
        started = time.monotonic()
        with pytest.raises(OSError):
            for byte in frame[:-1]:
                sock.sendall(bytes([byte]))
                time.sleep(0.3)  # a byte well within request.timeout.ms (1 s) of the one before
            raise AssertionError("serve read the whole trickle without closing the connection")
        assert time.monotonic() - started < 8


def _upgraded(serve: ServeProcess) -> socket.socket:
    return upgraded(serve.url("CLIENT"), BROKER_TOKEN, timeout=10)


def _read_frame(sock: socket.socket) -> bytes:
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack_from(">I", data)[0]:
        data += sock.recv(65536)
    return data
