"""Adversarial, class 2 (authenticate at the head): credentials, authorization and the body limit are decided
when the request head is read, before any body byte: an unauthenticated or unauthorized caller gets its 401/403 at
once (no `100 Continue`), a Content-Length above the endpoint's limit gets 413 at the head, two Authorization
headers are a 400; over plain TCP and TLS. Also class 9 (pipelining is exact around `Connection: close`)."""

from __future__ import annotations

import contextlib
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.raw_http import Raw, head, post
from tests.server.serve_process import (
    ADMIN_TOKEN,
    ALICE_TOKEN,
    BROKER_TOKEN,
    ServeProcess,
    add_tls_listener,
    base_properties,
)

HUGE = 200 * 1024 * 1024  # announced, never sent


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, ssl.SSLContext]]:
    """A controller serve with a PLAINTEXT and a TLS listener (server certificate only: bearer tokens)."""
    work: Path = tmp_path_factory.mktemp("guarded")
    props = base_properties(work, import_max_bytes="65536", request_max_bytes="32768")
    client_tls = add_tls_listener(props, work)
    with ServeProcess(work, props).start() as serve:
        yield serve, client_tls


def _url(serve: ServeProcess, tls: bool) -> str:
    return serve.url("TLS" if tls else "CLIENT").replace("http://", "https://" if tls else "http://")


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
@pytest.mark.parametrize(
    ("token", "path", "status", "code"),
    [
        (None, "/v1/acls/import", 401, "UNAUTHENTICATED"),
        ("not-a-token-0123456789", "/v1/acls/import", 401, "UNAUTHENTICATED"),
        (ALICE_TOKEN, "/v1/acls/import", 403, "CLUSTER_AUTHORIZATION_FAILED"),
        (ALICE_TOKEN, "/v1/acls/create", 403, "CLUSTER_AUTHORIZATION_FAILED"),
        (ALICE_TOKEN, "/v1/acls/describe", 403, "CLUSTER_AUTHORIZATION_FAILED"),
        (ALICE_TOKEN, "/v1/data/kafka/authz/allow", 403, "AUTHORIZATION_FAILED"),
        (ADMIN_TOKEN, "/v1/acls/import", 413, "INVALID_REQUEST"),
        (ADMIN_TOKEN, "/v1/authorize", 413, "INVALID_REQUEST"),
        (None, "/no/such/endpoint", 404, "NOT_FOUND"),
    ],
)
def test_refused_at_the_head_before_any_body_byte(
    guarded: tuple[ServeProcess, ssl.SSLContext], tls: bool, token: str | None, path: str, status: int, code: str
) -> None:
    serve, client_tls = guarded
    with Raw(_url(serve, tls), tls=client_tls if tls else None) as raw:
        raw.send(head("POST", path, token, HUGE, "Expect: 100-continue"))  # the body never follows
        answers = raw.until_closed()
    assert [a.status for a in answers] == [status], answers  # no 100 Continue before it, nothing after it
    assert answers[0].json()["error"]["code"] == code
    if status == 413:
        assert answers[0].json()["error"]["field"] == "Content-Length"


def test_an_admitted_head_with_expect_gets_100_continue(guarded: tuple[ServeProcess, ssl.SSLContext]) -> None:
    serve, _ = guarded
    body = b'{"acls": [], "dry_run": true}'
    with Raw(serve.url("CLIENT")) as raw:
        raw.send(head("POST", "/v1/acls/import", ADMIN_TOKEN, len(body), "Expect: 100-continue"))
        raw.sock.settimeout(10)
        first = raw.sock.recv(64)
        assert first.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), first
        raw.parsed.parser.feed_data(first[len(b"HTTP/1.1 100 Continue\r\n\r\n") :])
        raw.send(body)
        assert raw.answer().status == 200


def test_a_body_on_an_endpoint_without_one_is_a_413_that_does_not_call_a_post_a_get(
    guarded: tuple[ServeProcess, ssl.SSLContext],
) -> None:
    """POST /v1/snapshots takes no body: a body is refused at the head, and the answer names no GET."""
    serve, _ = guarded
    with Raw(serve.url("CLIENT")) as raw:
        raw.send(post("/v1/snapshots", b"{}", ADMIN_TOKEN))
        answers = raw.until_closed()
    assert [a.status for a in answers] == [413]
    error = answers[0].json()["error"]
    assert error["field"] == "Content-Length"
    assert error["message"] == "the request body of /v1/snapshots exceeds the limit of an endpoint without a body (0)"


def test_two_authorization_headers_are_a_400(guarded: tuple[ServeProcess, ssl.SSLContext]) -> None:
    serve, _ = guarded
    with Raw(serve.url("CLIENT")) as raw:
        raw.send(head("GET", "/v1/acls/count", ADMIN_TOKEN, None, f"Authorization: Bearer {ALICE_TOKEN}"))
        answers = raw.until_closed()
    assert [a.status for a in answers] == [400]
    assert "two Authorization headers" in answers[0].json()["error"]["message"]


def test_a_refused_upload_is_answered_while_the_client_is_still_sending(
    guarded: tuple[ServeProcess, ssl.SSLContext],
) -> None:
    """The 401 arrives before the client finished (serve reads and drops the rest briefly, then closes)."""
    serve, _ = guarded
    with Raw(serve.url("CLIENT")) as raw:
        raw.send(head("POST", "/v1/acls/import", None, 10 * 1024 * 1024))
        raw.send(b"x" * 256 * 1024)  # part of the body, as a client streaming its upload would
        assert raw.answer().status == 401


def test_pipelined_requests_up_to_connection_close_are_answered_in_order_and_nothing_after_runs(
    guarded: tuple[ServeProcess, ssl.SSLContext],
) -> None:
    serve, _ = guarded
    acl = {
        "resource_type": "TOPIC",
        "resource_name": "after-close",
        "pattern_type": "LITERAL",
        "principal": "User:mallory",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    filter_ = {"filter": {"resource_name": "after-close"}}
    requests = (
        post("/v1/acls/describe", filter_, ADMIN_TOKEN)  # answered asynchronously: the rest wait behind it
        + head("GET", "/v1/acls/count", ADMIN_TOKEN)
        + head("GET", "/v1/status", ADMIN_TOKEN, None, "Connection: close")
        + post("/v1/acls/create", {"acls": [acl]}, ADMIN_TOKEN)  # after the close: must not run
        + head("GET", "/v1/acls/count", ADMIN_TOKEN)
    )
    with Raw(serve.url("CLIENT")) as raw:
        raw.send(requests)
        answers = raw.until_closed()
    assert [a.status for a in answers] == [200, 200, 200]
    assert "acls" in answers[0].json() and "count" in answers[1].json() and "ready" in answers[2].json()
    assert answers[2].headers.get("connection") == "close"
    time.sleep(0.2)
    with serve.client(token=ADMIN_TOKEN) as admin:
        assert admin.post("/v1/acls/describe", json=filter_).json()["acls"] == []


def test_pipelined_requests_are_answered_in_order_with_a_small_in_flight_bound(tmp_path: Path) -> None:
    props = base_properties(tmp_path, max_in_flight_requests_per_connection="2")
    with ServeProcess(tmp_path, props).start() as serve, Raw(serve.url("CLIENT")) as raw:
        body = {
            "principal": "User:alice",
            "client_address": "10.0.0.1",
            "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}],
        }
        raw.send(
            b"".join(
                post("/v1/authorize", body, BROKER_TOKEN) + head("GET", "/v1/acls/count", ADMIN_TOKEN)
                for _ in range(200)
            )
        )
        answers = raw.answers(400)
    assert [("results" in a.json(), "count" in a.json()) for a in answers] == [(True, False), (False, True)] * 200


def test_a_head_line_that_never_ends_is_refused_after_its_first_64_kib(
    guarded: tuple[ServeProcess, ssl.SSLContext],
) -> None:
    """An unauthenticated header value (or name) that never ends is refused with 431 once the head passes 64 KiB
    (and a slice), not parsed for megabytes: the parser grows an unfinished header line by concatenation, which
    froze the event loop answering brokers for 16.7 s at 16 MiB. A broker is answered in time meanwhile."""
    serve, _ = guarded
    for start in (b"X-Big: ", b"X-"):
        with Raw(serve.url("CLIENT")) as raw:
            raw.send(b"GET /v1/status HTTP/1.1\r\nHost: serve\r\n" + start)
            with contextlib.suppress(OSError):  # serve may close before all of it is sent
                for _ in range(4):
                    raw.send(b"a" * 65536)  # 256 KiB of one line that never ends, then nothing more
            answers = raw.until_closed()  # answered now: before, it waited for the line's end
        assert [a.status for a in answers] == [431], answers
        with Raw(serve.url("CLIENT")) as broker:
            broker.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
            assert broker.answer().status == 200


def test_100_continue_follows_the_answers_of_the_requests_before_it(
    guarded: tuple[ServeProcess, ssl.SSLContext],
) -> None:
    """A `100 Continue` belongs to its request's answer: pipelined behind a request answered asynchronously, it
    comes after that request's answer, not before it."""
    serve, _ = guarded
    filter_ = {"filter": {"resource_name": "continue-order"}}
    body = b'{"acls": [], "dry_run": true}'
    with Raw(serve.url("CLIENT")) as raw:
        raw.send(
            post("/v1/acls/describe", filter_, ADMIN_TOKEN)  # answered on a worker: still running at the next head
            + head("POST", "/v1/acls/import", ADMIN_TOKEN, len(body), "Expect: 100-continue")
        )
        raw.sock.settimeout(10)
        received = b""
        while b"HTTP/1.1 100 Continue" not in received:
            chunk = raw.sock.recv(65536)
            assert chunk, received
            received += chunk
        assert received.index(b"HTTP/1.1 200 ") < received.index(b"HTTP/1.1 100 Continue"), received
        raw.send(body)
        rest = received.split(b"HTTP/1.1 100 Continue\r\n\r\n", 1)
        raw.parsed.parser.feed_data(rest[0])
        raw.parsed.parser.feed_data(rest[1])
        statuses = [a.status for a in raw.answers(2)]
    assert statuses == [200, 200]


def test_an_upgrade_serve_did_not_agree_to_is_ignored(guarded: tuple[ServeProcess, ssl.SSLContext]) -> None:
    """`curl --http2` asks for h2c: serve answers over HTTP/1.1 and the connection goes on (no stray 400)."""
    serve, _ = guarded
    upgrade = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA"
    with Raw(serve.url("CLIENT")) as raw:
        raw.send(head("GET", "/v1/status", ADMIN_TOKEN, None, upgrade) + head("GET", "/v1/acls/count", ADMIN_TOKEN))
        answers = raw.answers(2)
        assert [a.status for a in answers] == [200, 200], answers
        raw.send(head("GET", "/v1/status", ADMIN_TOKEN, None, "Connection: close"))
        assert [a.status for a in raw.until_closed()] == [200]
