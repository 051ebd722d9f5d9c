"""Adversarial, class 10 (bad bytes are bad input): invalid UTF-8 anywhere in a body is a 400 naming the field, on
every endpoint and in large (sliced) bodies too; random bytes and malformed framing (hypothesis over raw bytes)
never get a 5xx nor an ERROR or traceback in serve's log; a token file others may read gets a warning at start."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftacl.server import explain, json_body
from kraftacl.server.errors import BadRequest
from kraftacl.server.slices import Lane
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


# Adversarial, class 4 (brokers are never starved): `server.json_body` decodes any body in work linear in its size.
# These run in-process and count work (bytes handed to msgspec, regex restarts), never wall time.


class _Counting:
    """An items decoder that counts what it is handed: each piece of a sliced body goes through `decode`."""

    def __init__(self, decoder: msgspec.json.Decoder[list[Any]]) -> None:
        self.decoder, self.calls, self.bytes = decoder, 0, 0

    def decode(self, data: bytes) -> list[Any]:
        self.calls += 1
        self.bytes += len(data)
        return self.decoder.decode(data)


def _sliced(body: bytes) -> tuple[Any, _Counting]:
    """`decode_sliced` of an authorize body: the decoded body or the BadRequest, and the counted items decoder."""
    items = _Counting(explain._ACTIONS)

    async def run() -> Any:
        async with Lane().slicer() as slicer:
            try:
                return await json_body.decode_sliced(
                    body, explain._AUTHORIZE, "actions", cast(msgspec.json.Decoder[list[Any]], items), slicer
                )
            except BadRequest as failure:
                return failure

    return asyncio.run(run()), items


def _first_action_malformed(size: int) -> bytes:
    prefix = b'{"principal":"User:alice","client_address":"10.0.0.1","actions":[{"operation" "READ"}'
    return prefix + b",{}" * ((size - len(prefix) - 2) // 3) + b"]}"


def _one_name(size: int, text: str = "},") -> bytes:
    name = text * (size // len(text))
    return json.dumps(
        {"principal": "User:alice", "client_address": "10.0.0.1", "actions": [{**ACTION, "resource_name": name}]}
    ).encode()


@pytest.mark.parametrize("size", [256 * 1024, 512 * 1024])
def test_a_malformed_first_action_is_found_without_trying_every_later_cut(size: int) -> None:
    failure, items = _sliced(_first_action_malformed(size))
    assert isinstance(failure, BadRequest)
    assert failure.message == "malformed JSON: expected ':' (byte 78)" and failure.field is None
    assert items.bytes <= 2 * json_body.PIECE + 4096, items.bytes  # the piece at the malformed action, not the body
    assert items.calls <= 2, items.calls


@pytest.mark.parametrize("size", [128 * 1024, 1024 * 1024])
def test_a_name_full_of_cuts_is_decoded_once_not_once_per_cut(size: int) -> None:
    body = _one_name(size)
    failure, items = _sliced(body)
    assert isinstance(failure, BadRequest)
    assert failure.message.startswith("Expected `str` of length <= 32767")
    assert failure.field == "$.actions[0].resource_name"
    assert items.calls <= 2, items.calls  # was one per `},` in the last 32 KiB (16,418 for 4 MiB)
    assert items.bytes <= len(body) + json_body.PIECE + 4096, items.bytes


def test_decoding_work_grows_linearly_with_cuts_inside_strings() -> None:
    """Valid actions whose names hold `},`, `]` and `\\"`: the same result as one msgspec call, and twice the body
    costs about twice the bytes decoded (every piece's first cut lands inside a string)."""
    work = []
    for count in (2_000, 4_000):
        names = ['"},{"a":[', "x},", '\\"}]', "},\\\\", "n"]
        actions = [{**ACTION, "resource_name": names[k % 5] + "},{" * 40} for k in range(count)]
        body = json.dumps({"principal": "User:a", "client_address": "1.2.3.4", "actions": actions}).encode()
        decoded, items = _sliced(body)
        assert decoded == explain._AUTHORIZE.decode(body)
        assert items.bytes <= 2 * len(body) + 2 * json_body.PIECE, (items.bytes, len(body))
        work.append(items.bytes)
    assert work[1] <= 2.5 * work[0], work


class _Tokens:
    """`json_body._TOKEN`, recording the text it searched and the spans it matched."""

    def __init__(self) -> None:
        self.texts: list[bytes] = []
        self.spans: list[tuple[int, int]] = []

    def finditer(self, body: bytes, pos: int, endpos: int) -> Iterator[re.Match[bytes]]:
        self.texts.append(bytes(body[:endpos]))
        for match in TOKEN.finditer(body, pos, endpos):
            self.spans.append(match.span())
            yield match

    def restarts(self) -> int:
        """The quotes no token covers: each was tried as a string's start and refused after reading on."""
        covered = bytearray(len(self.texts[0]))
        for start, end in self.spans:
            covered[start:end] = b"\x01" * (end - start)
        return sum(1 for at, byte in enumerate(self.texts[0]) if byte == ord('"') and not covered[at])


TOKEN = json_body._TOKEN


@pytest.mark.parametrize("sliced", [False, True], ids=["whole", "sliced"])
def test_the_field_of_a_bad_byte_after_escaped_quotes_is_found_in_one_pass(
    monkeypatch: pytest.MonkeyPatch, sliced: bool
) -> None:
    """A run of `\\"` before the bad byte: no quote is tried again as the start of a string (each such restart
    read on to the bad byte: O(n²) in one regex call; 60 KB held serve's loop 7.3 s)."""
    escapes = b'\\"' * 30_000
    if sliced:
        action = b'{"operation":"READ","resource_type":"TOPIC","resource_name":"'
        body = (
            b'{"principal":"User:a","client_address":"1.2.3.4","actions":['
            + (action + b't"},') * 1000
            + action
            + escapes
            + b'\xff"}]}'
        )
    else:
        body = b'{"principal":"User:' + escapes + b'\xff","client_address":"10.0.0.1","actions":[]}'
    tokens = _Tokens()
    monkeypatch.setattr(json_body, "_TOKEN", tokens)
    failure = _sliced(body)[0] if sliced else _decode_failure(body)
    assert isinstance(failure, BadRequest) and "UTF-8" in failure.message
    assert failure.field == ("$.actions[1000].resource_name" if sliced else "$.principal")
    assert len(tokens.texts) == 1 and tokens.texts[0].count(b'"') > 30_000
    assert tokens.restarts() == 0


async def _locate(body: bytes | bytearray) -> BadRequest:
    async with Lane().slicer() as slicer:
        return await json_body.utf8_failure_sliced(body, slicer)


def _decode_failure(body: bytes) -> BadRequest:
    """`decode`'s failure; one deferred (a body above UTF8_AT_ONCE) is located as the dispatcher does, in slices."""
    try:
        json_body.decode(explain._AUTHORIZE, body)
    except BadRequest as failure:
        return failure
    except json_body.Utf8Pending as pending:
        return asyncio.run(_locate(pending.body))
    raise AssertionError("decoded")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"ids": ["a:\xff"]}', "$.ids[0]"),  # a colon in the open string (was an IndexError: a 500)
        (b'{"ids": ["a", "],{\\"x\\":[\xff"]}', "$.ids[1]"),  # brackets in the open string
        (b'{"f": {"p": "x", "q": 1, "r": "\xff"}}', "$.f.r"),
        (b'{"f": {"p\xff": 1}}', "$.f"),  # in a key: the object
        (b'{"f": [1, 2, {"a": [3, "\xff"]}]}', "$.f[2].a[1]"),
        (b'{"f": [1, 2, 3], "g": "\\u00e9\xff"}', "$.g"),
    ],
)
def test_the_field_of_a_bad_byte_is_the_string_that_holds_it(body: bytes, field: str) -> None:
    with pytest.raises(BadRequest) as failure:
        json_body.decode(msgspec.json.Decoder(dict[str, Any]), body)
    assert failure.value.field == field and "UTF-8" in failure.value.message


DUPLICATE_KEYS = b"{" + b'"principal":"a",' * 60_000 + b'"client_address":"\xff"}'  # 1 MiB, 120,000 tokens


def test_a_large_body_with_invalid_utf8_is_located_in_slices() -> None:
    """A body of 60,000 repeated keys then a bad byte (any token holder's, on the 1 MiB endpoints): locating the
    field walks 120,000 tokens, 70-150 ms in one step before; now the decoder defers it and the walk pauses every
    PATH_STEP tokens, with the same field named."""
    from kraftacl.api.wire import ByResourceTypeIn

    with pytest.raises(json_body.Utf8Pending):
        json_body.decode(msgspec.json.Decoder(ByResourceTypeIn), DUPLICATE_KEYS)
    pauses = 0

    class Counting:
        async def pause(self) -> None:
            nonlocal pauses
            pauses += 1

    failure = asyncio.run(json_body.utf8_failure_sliced(DUPLICATE_KEYS, cast(Any, Counting())))
    assert failure.field == "$.client_address" and "UTF-8" in failure.message
    assert pauses >= 120_000 // json_body.PATH_STEP - 1, pauses
    small = b'{"principal":"a","client_address":"\xff"}'  # at once below UTF8_AT_ONCE, as before
    with pytest.raises(BadRequest) as at_once:
        json_body.decode(msgspec.json.Decoder(ByResourceTypeIn), small)
    assert at_once.value.field == "$.client_address"


def test_a_large_body_with_invalid_utf8_is_a_400_naming_the_field_over_the_network(target: ServeProcess) -> None:
    with Raw(target.url("CLIENT")) as raw:
        raw.send(post("/v1/authorize-by-resource-type", DUPLICATE_KEYS, BROKER_TOKEN))
        answer = raw.answer()
    assert answer.status == 400 and answer.json()["error"]["field"] == "$.client_address", answer.body
