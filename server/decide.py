"""The decision endpoints: authorize (a batch of actions for one request context), authorize by resource type,
authorized operations (KIP-430), and the OPA-compatible decision API.

Handlers run on the event loop thread; each reads the authorizer's state once (`state()`), so every
answer comes from one batch boundary of the log, and reports that state's offset.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import msgspec

from kraftacl.api.wire import (
    MAX_STRING_BYTES,
    ActionIn,
    AuthorizedOperationsIn,
    AuthorizedOperationsOut,
    AuthorizeIn,
    AuthorizeOut,
    ByResourceTypeIn,
    OpaIn,
    OpaOut,
    ResultOut,
    RuleOut,
)
from kraftacl.authorizer.decision.audit import AUDIT_LOGGER, TRACE, audit_level
from kraftacl.authorizer.decision.standard import (
    BY_ACL_ALLOW,
    BY_ACL_DENY,
    RESULT_OF,
    RULE_KIND_OF,
    Action,
    RequestContext,
)
from kraftacl.authorizer.errors import AuthorizerNotReadyError, InvalidActionError
from kraftacl.authorizer.index.acl_index import AclIndex
from kraftacl.authorizer.model.acls import AclOperation, AuthorizationResult, PatternType, ResourceType
from kraftacl.authorizer.model.hosts import java_host_address
from kraftacl.authorizer.model.operations import SUPPORTED_OPERATIONS
from kraftacl.server.auth import Caller
from kraftacl.server.context import ServeState
from kraftacl.server.convert import OPERATIONS, PATTERNS, RESOURCE_TYPES, action_of, check_bytes, enum_of
from kraftacl.server.errors import BadRequest, Forbidden, NotReady
from kraftacl.server.http import Request, Response
from kraftacl.server.read_your_writes import after_offset

_AUTHORIZE = msgspec.json.Decoder(AuthorizeIn)
_BY_TYPE = msgspec.json.Decoder(ByResourceTypeIn)
_OPERATIONS = msgspec.json.Decoder(AuthorizedOperationsIn)
_OPA = msgspec.json.Decoder(OpaIn)
_ENCODE = msgspec.json.Encoder()
ALLOWED = AuthorizationResult.ALLOWED
OP_CODES = {name: int(op) for name, op in OPERATIONS.items()}  # plain ints: the compiled decision loop's input
TYPE_CODES = {name: int(rtype) for name, rtype in RESOURCE_TYPES.items()}
RESULT_NAME = tuple(result.name for result in RESULT_OF)
BY_ACL = frozenset((BY_ACL_DENY, BY_ACL_ALLOW))


def check_subject(state: ServeState, caller: Caller, principal: str) -> None:
    """Brokers (and super users) ask on behalf of anyone; every other caller only about itself."""
    if caller.principal == principal or caller.principal in state.trusted:
        return
    raise Forbidden(
        f"{caller.principal} may ask decisions only about itself; callers that ask on behalf of others "
        "are listed in broker.principals",
        "$.principal",
    )


def _context(principal: str, client_address: str, listener: str, request: str) -> RequestContext:
    check_bytes(principal, "$.principal")
    return RequestContext(principal, java_host_address(client_address), listener, request)


def authorize(state: ServeState, request: Request, caller: Caller) -> Response | Awaitable[Response]:
    """POST /v1/authorize (with `min_offset`, once this serve has applied it)."""
    body = _AUTHORIZE.decode(request.body)
    check_subject(state, caller, body.principal)
    if len(body.actions) > state.config.request_max_actions:
        raise BadRequest(f"more than request.max.actions ({state.config.request_max_actions}) actions", "$.actions")
    ctx = _context(body.principal, body.client_address, body.listener, body.request)
    if body.explain or state.decision_log is not None:
        actions = [action_of(a, f"$.actions[{i}]") for i, a in enumerate(body.actions)]
        return _after(state, body.min_offset, lambda: decide(state, ctx, actions, body.explain, body.rules))
    if body.min_offset is not None:
        parse_actions(body.actions)  # a bad field is a 400 now, not after the wait
    return _after(state, body.min_offset, lambda: _decide_fast(state, ctx, body.actions, body.rules))


def _after(
    state: ServeState, min_offset: int | None, answer: Callable[[], msgspec.Struct]
) -> Response | Awaitable[Response]:
    """The 200 answer, from a state that has applied `min_offset` (read-your-writes)."""
    return after_offset(state, min_offset, lambda: Response(200, _ENCODE.encode(answer())))


def _decide_fast(
    state: ServeState, ctx: RequestContext, actions: list[ActionIn], rules: str | None = None
) -> AuthorizeOut:
    """The hot path: enum names looked up once per action, decisions as codes, audit lines only where the
    audit logger wants them (denials at INFO), no Action objects otherwise; the rule texts a caller asks for
    (`rules`: "denied" or "all") are looked up only for those actions."""
    ops, rtypes, names = parse_actions(actions)
    state.freeze.check(state.tailer)
    authz = state.authorizer
    index, offset = authz.state()
    started = time.perf_counter()
    try:
        codes = authz.decide_codes(index, ctx, ops, rtypes, names)
    except AuthorizerNotReadyError as exc:
        state.metrics.figures.not_ready += 1
        raise NotReady(str(exc)) from exc
    figures = state.metrics.figures
    figures.observe(time.perf_counter() - started)
    figures.count_codes(codes)
    results = [RESULT_NAME[code] for code in codes]
    if AUDIT_LOGGER.isEnabledFor(TRACE):
        for i, a in enumerate(actions):
            allowed = RESULT_OF[codes[i]] is ALLOWED
            if AUDIT_LOGGER.isEnabledFor(audit_level(allowed, a.log_if_allowed, a.log_if_denied)):
                authz.maybe_audit(index, ctx, action_of(a, f"$.actions[{i}]"), RESULT_OF[codes[i]])
    if rules is None:
        return AuthorizeOut(results, offset)
    return AuthorizeOut(results, offset, rule_texts=_rule_texts(state, index, ctx, actions, codes, rules == "all"))


def _rule_texts(
    state: ServeState, index: AclIndex, ctx: RequestContext, actions: list[ActionIn], codes: list[int], every: bool
) -> list[str | None]:
    """The audit rule of each denied action (of every action when `every`), None for the others; the matching ACL is
    looked up only for the actions an ACL decided (a default or a super user is a constant)."""
    authz = state.authorizer
    texts: list[str | None] = []
    for i, (a, code) in enumerate(zip(actions, codes, strict=True)):
        if not every and RESULT_OF[code] is ALLOWED:
            texts.append(None)
        elif code in BY_ACL:
            texts.append(authz.rule_text(index, ctx, action_of(a, f"$.actions[{i}]"), code))
        else:
            texts.append(RULE_KIND_OF[code])
    return texts


def decide(
    state: ServeState, ctx: RequestContext, actions: list[Action], explain: bool, rules_asked: str | None = None
) -> AuthorizeOut:
    """Decide every action against one state with its rule (for `explain`, the decision log or `rules_asked`);
    count, time and log the decisions."""
    state.freeze.check(state.tailer)
    authz = state.authorizer
    index, offset = authz.state()
    log = state.decision_log
    started = time.perf_counter()
    try:
        results, codes, rules = authz.authorize_at(index, ctx, actions, explain or log is not None or bool(rules_asked))
    except AuthorizerNotReadyError as exc:
        state.metrics.figures.not_ready += 1
        raise NotReady(str(exc)) from exc
    except InvalidActionError as exc:
        raise BadRequest(str(exc), "$.actions") from exc
    figures = state.metrics.figures
    figures.observe(time.perf_counter() - started)
    figures.count_codes(codes)
    if log is not None and rules is not None:
        log.write(ctx, actions, results, rules, offset)
    names = [r.name for r in results]
    texts: list[str | None] | None = None
    if rules_asked is not None and rules is not None:
        every = rules_asked == "all"
        texts = [
            str(rule) if every or result is not ALLOWED else None for rule, result in zip(rules, results, strict=True)
        ]
    if not explain or rules is None:
        return AuthorizeOut(names, offset, rule_texts=texts)
    ids = state.acl_ids
    return AuthorizeOut(names, offset, [RuleOut(r.kind, str(r), ids.id_of(r)) for r in rules], texts)


def parse_actions(actions: list[ActionIn]) -> tuple[list[int], list[int], list[str]]:
    """Operation and resource type codes and names of LITERAL actions; BadRequest naming the first bad field.

    The common request (upper-case names, LITERAL patterns, short names) is parsed by list comprehensions
    and checked once for the whole list; anything else goes through `_parse_each`."""
    ops = [OP_CODES.get(a.operation) for a in actions]
    rtypes = [TYPE_CODES.get(a.resource_type) for a in actions]
    names = [a.resource_name for a in actions]
    if (
        None in ops
        or None in rtypes
        or (names and max(map(len, names)) > MAX_STRING_BYTES // 4)
        or any(a.pattern_type != "LITERAL" for a in actions)
    ):
        return _parse_each(actions)
    return ops, rtypes, names  # type: ignore[return-value]  # no None left, checked above


def _parse_each(actions: list[ActionIn]) -> tuple[list[int], list[int], list[str]]:
    """`parse_actions` one action at a time, with Kafka's case rules and a BadRequest naming the first bad field."""
    ops: list[int] = []
    rtypes: list[int] = []
    names: list[str] = []
    get_op, get_type = OPERATIONS.get, RESOURCE_TYPES.get
    for a in actions:
        op = get_op(a.operation) or get_op(a.operation.upper())
        rtype = get_type(a.resource_type) or get_type(a.resource_type.upper())
        if op is None or rtype is None or a.pattern_type != "LITERAL" or len(a.resource_name) > MAX_STRING_BYTES // 4:
            action_of(a, f"$.actions[{len(ops)}]")  # raises BadRequest naming the field, or passes
            if a.pattern_type != "LITERAL":
                raise BadRequest(f"Only literal resources are supported. Got: {a.pattern_type}", "$.actions")
        ops.append(op)  # type: ignore[arg-type]
        rtypes.append(rtype)  # type: ignore[arg-type]
        names.append(a.resource_name)
    return ops, rtypes, names


def by_resource_type(state: ServeState, request: Request, caller: Caller) -> Response | Awaitable[Response]:
    """POST /v1/authorize-by-resource-type."""
    body = _BY_TYPE.decode(request.body)
    check_subject(state, caller, body.principal)
    ctx = _context(body.principal, body.client_address, body.listener, body.request)
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
    body = _OPERATIONS.decode(request.body)
    check_subject(state, caller, body.principal)
    ctx = _context(body.principal, body.client_address, body.listener, "")
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


def opa(state: ServeState, request: Request, caller: Caller) -> Response:
    """POST /v1/data/...: the OPA Kafka authorizer plugin's query, answered {"result": true|false}.

    Accepts both the shape of the plugin's README (`clientAddress` "10.0.0.1", header under "data")
    and what its 1.5.x code sends ("/10.0.0.1", header under "name"). The plugin's
    authorizeByResourceType arrives as a PREFIXED pattern with the empty name.
    """
    if caller.principal not in state.trusted:
        raise Forbidden(f"{caller.principal} is not in broker.principals, so it may not use the OPA API")
    body = _OPA.decode(request.body).input
    rc, action = body.requestContext, body.action
    principal = f"{rc.principal.principalType}:{rc.principal.name}"
    host = rc.clientAddress.rsplit("/", 1)[-1]  # InetAddress.toString(): "hostname/ip" or "/ip"
    ctx = _context(principal, host, rc.listenerName, _api_name(rc.header))
    op = enum_of(OPERATIONS, action.operation, "$.input.action.operation")
    rtype = enum_of(RESOURCE_TYPES, action.resourcePattern.resourceType, "$.input.action.resourcePattern.resourceType")
    pattern = enum_of(PATTERNS, action.resourcePattern.patternType, "$.input.action.resourcePattern.patternType", False)
    name = check_bytes(action.resourcePattern.name, "$.input.action.resourcePattern.name")
    if pattern == PatternType.PREFIXED and name == "":
        allowed = _by_type(state, ctx, op, rtype).result == "ALLOWED"
    else:
        act = Action(op, rtype, name, pattern, action.resourceReferenceCount, action.logIfAllowed, action.logIfDenied)
        allowed = decide(state, ctx, [act], False).results[0] == "ALLOWED"
    return Response(200, _ENCODE.encode(OpaOut(allowed)))


def _api_name(header: dict[str, object] | None) -> str:
    """The request's API key as the audit line's `request` text (the plugin sends no API name)."""
    if not header:
        return ""
    data = header.get("data") or header.get("name")
    key = data.get("requestApiKey") if isinstance(data, dict) else None
    return f"ApiKey{key}" if isinstance(key, int) else ""
