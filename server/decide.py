"""The decision endpoints: authorize (a batch of actions for one request context), authorize by resource type,
authorized operations (KIP-430), and the OPA-compatible decision API.

The broker's hot path (a small body, no explain, no decision log) is answered synchronously on the event loop:
one msgspec decode, one compiled `decide_many`, the audit lines Kafka's logger wants, and the rule texts the
caller asks for (`rules`). Everything heavier (a body
above `json_body.SLICED_ABOVE`, explain, the decision log) goes to `server.explain`, which works in slices.
Handlers read the authorizer's state once (`state()`), so every answer comes from one batch boundary of the log,
and report that state's offset.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from kraftacl.api.wire import (
    AuthorizedOperationsIn,
    AuthorizedOperationsOut,
    AuthorizeIn,
    AuthorizeOut,
    ByResourceTypeIn,
    OpaIn,
    OpaOut,
    ResultOut,
)
from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.errors import AuthorizerNotReadyError, InvalidActionError
from kraftacl.authorizer.model.acls import AclOperation, PatternType, ResourceType
from kraftacl.authorizer.model.operations import SUPPORTED_OPERATIONS
from kraftacl.server import explain, json_body
from kraftacl.server.auth import Caller
from kraftacl.server.context import ServeState
from kraftacl.server.convert import OPERATIONS, PATTERNS, RESOURCE_TYPES, check_bytes, enum_of
from kraftacl.server.decision_inputs import (
    RESULT_NAME,
    check_limits,
    check_subject,
    context,
    decide_codes,
    parse_actions,
    rule_texts,
)
from kraftacl.server.errors import BadRequest, NotReady
from kraftacl.server.http_wire import Outcome, Request, Response
from kraftacl.server.read_your_writes import after_offset, applied, reached

_AUTHORIZE = msgspec.json.Decoder(AuthorizeIn)
_BY_TYPE = msgspec.json.Decoder(ByResourceTypeIn)
_OPERATIONS = msgspec.json.Decoder(AuthorizedOperationsIn)
_OPA = msgspec.json.Decoder(OpaIn)
_ENCODE = msgspec.json.Encoder()


def authorize(state: ServeState, request: Request, caller: Caller) -> Outcome:
    """POST /v1/authorize (with `min_offset`, once this serve has applied it)."""
    if len(request.body) > json_body.SLICED_ABOVE:
        return explain.authorize_large(state, request, caller)
    body = json_body.decode(_AUTHORIZE, request.body)
    trusted = check_limits(state, caller, body)
    if body.min_offset is None or applied(state, body.min_offset):
        return _decide(state, request, body, trusted)
    parse_actions(body.actions)  # a bad field is a 400 now, not after the wait
    return _decide_later(state, request, body, trusted)


async def _decide_later(state: ServeState, request: Request, body: AuthorizeIn, trusted: bool) -> Response:
    await reached(state, body.min_offset)
    outcome = _decide(state, request, body, trusted)
    return outcome if isinstance(outcome, Response) else await outcome


def _decide(state: ServeState, request: Request, body: AuthorizeIn, trusted: bool) -> Response | Awaitable[Response]:
    """The decisions of an authorize call, on the loop (the hot path) or with their rules (`server.explain`)."""
    if body.explain or state.decision_log is not None:
        return explain.answer(state, request, body, trusted)
    ctx = context(body.principal, body.client_address, body.listener, body.request, "Authorize")
    state.freeze.check(state.tailer)
    index, offset = state.authorizer.state()
    codes = decide_codes(state, index, ctx, body.actions, trusted=trusted)
    results = [RESULT_NAME[codes[0]]] if len(codes) == 1 else [RESULT_NAME[code] for code in codes]
    if body.rules is None:
        return Response(200, _ENCODE.encode(AuthorizeOut(results, offset)))
    texts = rule_texts(state, index, ctx, body.actions, codes, body.rules == "all")
    return Response(200, _ENCODE.encode(AuthorizeOut(results, offset, rule_texts=texts)))


def _after(
    state: ServeState, min_offset: int | None, answer: Callable[[], msgspec.Struct]
) -> Response | Awaitable[Response]:
    """The 200 answer, from a state that has applied `min_offset` (read-your-writes)."""
    return after_offset(state, min_offset, lambda: Response(200, _ENCODE.encode(answer())))


def by_resource_type(state: ServeState, request: Request, caller: Caller) -> Response | Awaitable[Response]:
    """POST /v1/authorize-by-resource-type."""
    body = json_body.decode(_BY_TYPE, request.body)
    check_subject(state, caller, body.principal)
    ctx = context(body.principal, body.client_address, body.listener, body.request, "AuthorizeByResourceType")
    op = enum_of(OPERATIONS, body.operation, "$.operation")
    rtype = enum_of(RESOURCE_TYPES, body.resource_type, "$.resource_type")
    return _after(state, body.min_offset, lambda: _by_type(state, ctx, op, rtype))


def _by_type(state: ServeState, ctx: RequestContext, op: AclOperation, rtype: ResourceType) -> ResultOut:
    state.freeze.check(state.tailer)
    authz = state.authorizer
    offset = authz.state()[1]
    try:
        result = authz.authorize_by_resource_type(ctx, op, rtype)
    except AuthorizerNotReadyError as exc:
        state.metrics.figures.not_ready += 1
        raise NotReady(str(exc)) from exc
    except InvalidActionError as exc:
        raise BadRequest(str(exc), "$.resource_type") from exc
    return ResultOut(result.name, offset)


def authorized_operations(state: ServeState, request: Request, caller: Caller) -> Response | Awaitable[Response]:
    """POST /v1/authorized-operations."""
    body = json_body.decode(_OPERATIONS, request.body)
    check_subject(state, caller, body.principal)
    ctx = context(body.principal, body.client_address, body.listener, "", "AuthorizedOperations")
    rtype = enum_of(RESOURCE_TYPES, body.resource_type, "$.resource_type")
    name = check_bytes(body.resource_name, "$.resource_name")
    return _after(state, body.min_offset, lambda: _operations(state, ctx, rtype, name))


def _operations(state: ServeState, ctx: RequestContext, rtype: ResourceType, name: str) -> AuthorizedOperationsOut:
    state.freeze.check(state.tailer)
    authz = state.authorizer
    offset = authz.state()[1]
    try:
        field = authz.authorized_operations(ctx, rtype, name)
    except AuthorizerNotReadyError as exc:
        raise NotReady(str(exc)) from exc
    except InvalidActionError as exc:
        raise BadRequest(str(exc), "$.resource_type") from exc
    names = [op.name for op in SUPPORTED_OPERATIONS.get(rtype, ()) if field & (1 << op)]
    return AuthorizedOperationsOut(field, sorted(names), offset)


def opa(state: ServeState, request: Request, caller: Caller) -> Outcome:
    """POST /v1/data/...: the OPA Kafka authorizer plugin's query, answered {"result": true|false} (brokers
    only, checked at the head).

    Accepts both the shape of the plugin's README (`clientAddress` "10.0.0.1", header under "data")
    and what its 1.5.x code sends ("/10.0.0.1", header under "name"). The plugin's
    authorizeByResourceType arrives as a PREFIXED pattern with the empty name.
    """
    body = json_body.decode(_OPA, request.body).input
    rc, action = body.requestContext, body.action
    principal = f"{rc.principal.principalType}:{rc.principal.name}"
    host = rc.clientAddress.rsplit("/", 1)[-1]  # InetAddress.toString(): "hostname/ip" or "/ip"
    fields = ("$.input.requestContext.principal.name", "$.input.requestContext.clientAddress")
    ctx = context(principal, host, rc.listenerName, _api_name(rc.header), "OpaDecision", fields)
    op = enum_of(OPERATIONS, action.operation, "$.input.action.operation")
    rtype = enum_of(RESOURCE_TYPES, action.resourcePattern.resourceType, "$.input.action.resourcePattern.resourceType")
    pattern = enum_of(PATTERNS, action.resourcePattern.patternType, "$.input.action.resourcePattern.patternType", False)
    name = check_bytes(action.resourcePattern.name, "$.input.action.resourcePattern.name")
    if pattern == PatternType.PREFIXED and name == "":
        return Response(200, _ENCODE.encode(OpaOut(_by_type(state, ctx, op, rtype).result == "ALLOWED")))
    act = Action(op, rtype, name, pattern, action.resourceReferenceCount, action.logIfAllowed, action.logIfDenied)
    state.freeze.check(state.tailer)
    if state.decision_log is not None:
        return _opa_logged(state, ctx, act)
    index, _ = state.authorizer.state()
    results, codes, _ = explain.decide_at(state, index, ctx, [act], False, "$.input.action")
    state.metrics.figures.count_codes(codes)
    return Response(200, _ENCODE.encode(OpaOut(results[0].name == "ALLOWED")))


async def _opa_logged(state: ServeState, ctx: RequestContext, act: Action) -> Response:
    codes = await explain.decide_logged(state, ctx, act)
    state.metrics.figures.count_codes(codes)
    return Response(200, _ENCODE.encode(OpaOut(RESULT_NAME[codes[0]] == "ALLOWED")))


def _api_name(header: dict[str, object] | None) -> str:
    """The request's API key as the audit line's `request` text (the plugin sends no API name)."""
    if not header:
        return ""
    data = header.get("data") or header.get("name")
    key = data.get("requestApiKey") if isinstance(data, dict) else None
    return f"ApiKey{key}" if isinstance(key, int) else ""
