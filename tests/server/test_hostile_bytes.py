"""Adversarial, class 10 (bad bytes are bad input): invalid UTF-8 anywhere in a body is a 400 naming the field, on
every endpoint and in large (sliced) bodies too; random bytes and malformed framing (hypothesis over raw bytes)
never get a 5xx nor an ERROR or traceback in serve's log; a token file others may read gets a warning at start."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.raw_http import Raw, address, head, post
from tests.server.serve_process import ADMIN_TOKEN, ALICE_READ_ORDERS, BROKER_TOKEN, ServeProcess, base_properties

BAD = "\udcff"  # stands for the byte 0xFF in the JSON text below (json.dumps keeps it; the bytes are patched)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A controller serve with a short request timeout (the fuzzer leaves many requests unfinished)."""
    work: Path = tmp_path_factory.mktemp("bytes")
    with ServeProcess(work, base_properties(work, request_timeout_ms="1500")).start() as serve:
        yield serve


def _with_bad_byte(body: dict[str, Any]) -> bytes:
    text = json.dumps(body, ensure_ascii=False)
    return text.encode("utf-8", "surrogateescape")  # the lone surrogate becomes the invalid byte 0xFF


ACTION = {"operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}
ACL = ALICE_READ_ORDERS
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("/v1/authorize", {"principal": f"User:{BAD}", "client_address": "1.2.3.4", "actions": [ACTION]}, "$.principal"),
    ("/v1/authorize", {"principal": "User:a", "client_address": f"1{BAD}", "actions": [ACTION]}, "$.client_address"),
    (
        "/v1/authorize",
        {"principal": "User:a", "client_address": "1.2.3.4", "actions": [ACTION, {**ACTION, "resource_name": BAD}]},
        "$.actions[1].resource_name",
    ),
    (
        "/v1/authorize",
        {
            "principal": "User:a",
            "client_address": "1.2.3.4",
            "actions": [ACTION] * 1500 + [{**ACTION, "resource_name": BAD}],
        },
        "$.actions[1500].resource_name",
    ),
    (
        "/v1/authorize-by-resource-type",
        {"principal": f"User:{BAD}", "client_address": "1.2.3.4", "operation": "READ", "resource_type": "TOPIC"},
        "$.principal",
    ),
    (
        "/v1/authorized-operations",
        {"principal": "User:a", "client_address": "1.2.3.4", "resource_type": "TOPIC", "resource_name": BAD},
        "$.resource_name",
    ),
    ("/v1/acls/describe", {"filter": {"principal": f"User:{BAD}"}}, "$.filter.principal"),
    ("/v1/acls/create", {"acls": [{**ACL, "host": BAD}]}, "$.acls[0].host"),
    ("/v1/acls/delete", {"filters": [{"resource_name": BAD}]}, "$.filters[0].resource_name"),
    ("/v1/acls/import", {"acls": [ACL, ACL, {**ACL, "principal": f"User:{BAD}"}]}, "$.acls[2].principal"),
    (
        "/v1/acls/import",
        {"acls": [{**ACL, "resource_name": f"n{i}"} for i in range(1000)] + [{**ACL, "operation": BAD}]},
        "$.acls[1000].operation",
    ),
    (  # past GATHER_ABOVE: the body was gathered in one buffer as it arrived
        "/v1/acls/import",
        {"acls": [{**ACL, "resource_name": f"n{i}"} for i in range(12_000)] + [{**ACL, "operation": BAD}]},
        "$.acls[12000].operation",
    ),
    (
        "/v1/authorize",
        {
            "principal": "User:a",
            "client_address": "1.2.3.4",
            "actions": [ACTION] * 20_000 + [{**ACTION, "operation": BAD}],
        },
        "$.actions[20000].operation",
    ),
    ("/v1/acls/history", {"ids": [BAD]}, "$.ids[0]"),
    (
        "/v1/data/kafka/authz/allow",
        {
            "input": {
                "requestContext": {"principal": {"principalType": "User", "name": BAD}, "clientAddress": "/1.2.3.4"},
                "action": {"operation": "READ", "resourcePattern": {"resourceType": "TOPIC", "name": "t"}},
            }
        },
        "$.input.requestContext.principal.name",
    ),
]


@pytest.mark.parametrize(("path", "body", "field"), CASES, ids=[f"{c[0]}:{c[2]}" for c in CASES])
def test_invalid_utf8_is_a_400_naming_the_field(
    target: ServeProcess, path: str, body: dict[str, Any], field: str
) -> None:
    data = _with_bad_byte(body)
    assert b"\xff" in data
    token = BROKER_TOKEN if path.startswith(("/v1/authorize", "/v1/data")) else ADMIN_TOKEN
    with Raw(target.url("CLIENT")) as raw:
        raw.send(post(path, data, token))
        answer = raw.answer()
    assert answer.status == 400, answer.body
    assert answer.json()["error"]["field"] == field, answer.json()
    assert "UTF-8" in answer.json()["error"]["message"]


def _exchange(url: str, data: bytes) -> list[int]:
    """Send `data`, close our side, collect every status serve answers before it closes."""
    host, port = address(url)
    with socket.create_connection((host, port), timeout=10) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # serve refused and closed while we were sending
        raw = Raw.__new__(Raw)
        raw.sock, raw.closed = sock, False
        from tests.server.raw_http import _Parsed

        raw.parsed = _Parsed()
        import httptools

        raw.parsed.parser = httptools.HttpResponseParser(raw.parsed)
        try:
            answers = raw.until_closed()
        except (httptools.HttpParserError, OSError):
            return [0]
    return [a.status for a in answers]


PATHS = ["/v1/authorize", "/v1/acls/create", "/v1/acls/import", "/v1/acls/describe", "/v1/status", "/v1/x"]
bodies = st.one_of(
    st.binary(max_size=300),
    st.builds(
        lambda valid, at, junk: valid[:at] + junk + valid[at:],
        st.sampled_from([json.dumps(b).encode() for _, b, _ in CASES[:3]] + [json.dumps({"acls": [ACL]}).encode()]),
        st.integers(0, 80),
        st.binary(min_size=1, max_size=4).filter(lambda b: not _is_utf8(b)),
    ),
)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=300, suppress_health_check=list(HealthCheck), database=None)
@given(
    path=st.sampled_from(PATHS),
    token=st.sampled_from([None, ADMIN_TOKEN, BROKER_TOKEN]),
    body=bodies,
    framing=st.sampled_from(["length", "short-length", "chunked", "bad-chunked", "garbage-head", "two-requests"]),
)
def test_random_bytes_and_broken_framing_never_get_a_5xx(
    target: ServeProcess, path: str, token: str | None, body: bytes, framing: str
) -> None:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    if framing == "length":
        data = post(path, body, token)
    elif framing == "short-length":
        data = head("POST", path, token, len(body) + 5) + body
    elif framing == "chunked":
        data = f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Transfer-Encoding: chunked\r\n\r\n".encode()
        data += b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    elif framing == "bad-chunked":
        data = f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Transfer-Encoding: chunked\r\n\r\nzz\r\n".encode() + body
    elif framing == "garbage-head":
        data = body + b"\r\n\r\n" + post(path, body, token)
    else:
        data = post(path, body, token) + post("/v1/acls/count", b"", token)
    statuses = _exchange(target.url("CLIENT"), data)
    assert all(status < 500 for status in statuses), (statuses, data[:300])
    assert target.proc is not None and target.proc.poll() is None, target.output()


def test_serve_logged_no_error_under_the_fuzzing(target: ServeProcess) -> None:
    errors = [line for line in target.stderr if " ERROR " in line or "Traceback" in line]
    assert errors == [], "\n".join(target.stderr[-80:])


def test_a_token_file_others_may_read_gets_a_warning(tmp_path: Path) -> None:
    props = base_properties(tmp_path)
    Path(props["auth.token.file"]).chmod(0o644)
    with ServeProcess(tmp_path, props).start() as serve:
        pass
    warnings = [line for line in serve.stderr if "auth.token.file" in line and "readable by group or others" in line]
    assert len(warnings) == 1 and "(mode 0o644)" in warnings[0] and "chmod 600" in warnings[0]
