"""The client of serve sends and reads only the contract's Structs: the endpoint's method and path, the body
encoded from its request Struct, GET query parameters from a query Struct, the answer decoded as its response
Struct, and one ServerError line for a refusal or an answer that is not the contract's. (Against a real serve:
tests/server/test_cli_server.py and test_shell_on_serve.py.)"""

from __future__ import annotations

import json

import httpx
import msgspec
import pytest

from kraftacl.api import endpoints as ep
from kraftacl.api.client import ServerClient, ServerError, ServerTarget
from kraftacl.api.wire import ActionIn, AuthorizeIn, AuthorizeOut
from kraftacl.authorizer.model.filters import ANY_FILTER


class Wait(msgspec.Struct, frozen=True):
    after: int
    wait_ms: int | None = None


def client(handler: httpx.MockTransport) -> ServerClient:
    made = ServerClient(ServerTarget("http://serve.test", token="t0ken"))
    made.http = httpx.Client(base_url="http://serve.test", headers=made.http.headers, transport=handler)
    return made


def test_a_call_is_the_endpoints_method_path_and_structs() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"results": ["ALLOWED"], "offset": 7, "unknown_later_field": 1})

    body = AuthorizeIn("User:alice", "10.0.0.1", [ActionIn("READ", "TOPIC", "orders")])
    out = client(httpx.MockTransport(answer)).call(ep.AUTHORIZE, body)
    assert out == AuthorizeOut(["ALLOWED"], 7)
    (request,) = seen
    assert (request.method, request.url.path) == ("POST", "/v1/authorize")
    assert request.headers["authorization"] == "Bearer t0ken"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content)["actions"] == [
        {"operation": "READ", "resource_type": "TOPIC", "resource_name": "orders", "pattern_type": "LITERAL",
         "ref_count": 1, "log_if_allowed": True, "log_if_denied": True}
    ]  # fmt: skip


def test_query_structs_become_parameters_without_the_unset_ones() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"count": 3, "offset": 9})

    made = client(httpx.MockTransport(answer))
    assert made.call(ep.ACL_COUNT, query=Wait(5)).count == 3
    assert made.call(ep.ACL_COUNT, query=Wait(5, 100)).offset == 9
    assert [dict(r.url.params) for r in seen] == [{"after": "5"}, {"after": "5", "wait_ms": "100"}]
    assert [r.content for r in seen] == [b"", b""]


def test_refusals_and_foreign_answers_are_one_server_error_line() -> None:
    refusal = {"error": {"code": "INVALID_REQUEST", "message": "not one of ...", "field": "$.actions[0].operation"}}
    made = client(httpx.MockTransport(lambda r: httpx.Response(400, json=refusal)))
    with pytest.raises(ServerError) as refused:
        made.call(ep.STATUS)
    assert str(refused.value) == (
        "http://serve.test/v1/status: HTTP 400 INVALID_REQUEST: not one of ... (field $.actions[0].operation)"
    )
    assert (refused.value.status, refused.value.code) == (400, "INVALID_REQUEST")
    made = client(httpx.MockTransport(lambda r: httpx.Response(502, text="bad gateway")))
    with pytest.raises(ServerError, match=r"/v1/status: HTTP 502 : bad gateway$"):
        made.call(ep.STATUS)
    made = client(httpx.MockTransport(lambda r: httpx.Response(200, json={"count": "three", "offset": 1})))
    with pytest.raises(ServerError, match=r"/v1/acls/count: serve's answer is not a CountOut: Expected `int`"):
        made.call(ep.ACL_COUNT)


def test_describe_asks_consistent_and_falls_back_on_a_serve_before_it() -> None:
    """`describe` asks `consistent` (every write acknowledged before it); a serve before API 1.6.0 refuses the field
    as unknown (400), and is asked again without it; `consistent=False` sends no such field at all."""
    asked: list[dict[str, object]] = []

    def older_serve(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        asked.append(body)
        if "consistent" in body:
            error = {"code": "INVALID_REQUEST", "message": "Object contains unknown field `consistent`", "field": "$"}
            return httpx.Response(400, json={"error": error})
        return httpx.Response(200, json={"acls": [], "offset": 4})

    made = client(httpx.MockTransport(older_serve))
    assert made.describe(ANY_FILTER) == []
    assert [("consistent" in body) for body in asked] == [True, False]
    assert made.describe(ANY_FILTER, consistent=False) == []
    assert "consistent" not in asked[-1] and "min_offset" not in asked[-1]
