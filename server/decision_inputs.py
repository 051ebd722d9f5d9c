"""From an API request to the authorizer's inputs: who may ask about whom and how many actions at once, the
request context in Kafka's form, the actions as the compiled decision loop's codes, and Kafka's audit lines and
the rule texts a caller asks for, for decisions made as codes.

Pure functions over the serve state they are given; used on the event loop thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from kraftacl.api.wire import MAX_STRING_BYTES, ActionIn, AuthorizeIn
from kraftacl.authorizer.decision.audit import AUDIT_LOGGER, audit_level
from kraftacl.authorizer.decision.standard import (
    BY_ACL_ALLOW,
    BY_ACL_DENY,
    RESULT_OF,
    RULE_KIND_OF,
    Action,
    RequestContext,
)
from kraftacl.authorizer.errors import AuthorizerNotReadyError
from kraftacl.authorizer.index.acl_index import AclIndex
from kraftacl.authorizer.model.acls import AuthorizationResult
from kraftacl.authorizer.model.hosts import ip_host_address
from kraftacl.server.auth import Caller
from kraftacl.server.context import ServeState
from kraftacl.server.convert import OPERATIONS, RESOURCE_TYPES, action_of, check_bytes
from kraftacl.server.decision_log import SelfQueryBudget
from kraftacl.server.errors import BadRequest, Forbidden, NotReady

OP_CODES = {name: int(op) for name, op in OPERATIONS.items()}  # plain ints: the compiled decision loop's input
TYPE_CODES = {name: int(rtype) for name, rtype in RESOURCE_TYPES.items()}
RESULT_NAME = tuple(result.name for result in RESULT_OF)
DENIED_CODES = tuple(code for code, result in enumerate(RESULT_OF) if result.name == "DENIED")
ALLOWED = AuthorizationResult.ALLOWED
BY_ACL = frozenset((BY_ACL_DENY, BY_ACL_ALLOW))
AUDIT_LINE_BYTES = 1024  # a self-query's audit line takes one line of its budget per this many characters of names


def check_subject(state: ServeState, caller: Caller, principal: str) -> bool:
    """Brokers (and super users) ask on behalf of anyone; every other caller only about itself. True for a
    trusted caller (its batches may be larger; its decisions are logged without the self-query budget)."""
    if caller.principal in state.trusted:
        return True
    if caller.principal == principal:
        return False
    raise Forbidden(
        f"{caller.principal} may ask decisions only about itself; callers that ask on behalf of others "
        "are listed in broker.principals",
        "$.principal",
    )


def context(
    principal: str,
    client_address: str,
    listener: str,
    request: str,
    endpoint: str,
    fields: tuple[str, str] = ("$.principal", "$.client_address"),
) -> RequestContext:
    """The request context in Kafka's form: the host as Java's getHostAddress() prints it (BadRequest where
    `client_address` is not an IP address), and a request name (the caller's, else the endpoint's) for the audit
    log; `fields` name the two inputs in errors."""
    if len(principal) > MAX_STRING_BYTES // 4:  # check_bytes's own first test, without the call for a short name
        check_bytes(principal, fields[0])
    host = ip_host_address(client_address)
    if host is None:
        raise BadRequest(f"{client_address[:100]!r} is not an IP address (the client's address)", fields[1])
    return RequestContext(principal, host, listener, request or endpoint)


def check_limits(state: ServeState, caller: Caller, body: AuthorizeIn) -> bool:
    """Who may ask about whom, and how many actions at once; True for a trusted caller."""
    trusted = check_subject(state, caller, body.principal)
    limits = state.config.limits
    limit, key = (limits.request_max_actions, "request.max.actions")
    if not trusted and limits.self_query_max_actions < limit:
        limit, key = limits.self_query_max_actions, "self.query.max.actions"
    if body.explain and limits.explain_max_actions < limit:
        limit, key = limits.explain_max_actions, "explain.max.actions"
    if len(body.actions) > limit:
        raise BadRequest(f"more than {key} ({limit}) actions in one call", "$.actions")
    return trusted


def decide_codes(
    state: ServeState,
    index: AclIndex,
    ctx: RequestContext,
    actions: list[ActionIn],
    base: int = 0,
    timed: bool = True,
    trusted: bool = True,
) -> list[int]:
    """The BY_* codes of `actions` (the call's actions from number `base` on) against `index` (one state for a
    whole call), counted (and `timed`: one call in the latency histogram) in the metrics, with Kafka's audit lines
    where its logger wants them (denials at INFO, allowed decisions at DEBUG): for a caller asking about itself (not
    `trusted`), at most decision.log.self.query.rate of them per second (`audit`)."""
    ops, rtypes, names = parse_actions(actions, base)
    authz = state.authorizer
    started = time.perf_counter()
    try:
        codes = authz.decide_codes(index, ctx, ops, rtypes, names)
    except AuthorizerNotReadyError as exc:
        state.metrics.figures.not_ready += 1
        raise NotReady(str(exc)) from exc
    figures = state.metrics.figures
    if timed:
        figures.observe(time.perf_counter() - started)
    figures.count_codes(codes)
    # one level check where the logger wants neither (a logger that logs DEBUG logs INFO)
    if AUDIT_LOGGER.isEnabledFor(logging.INFO) and (
        AUDIT_LOGGER.isEnabledFor(logging.DEBUG) or any(code in codes for code in DENIED_CODES)
    ):
        audit(state, index, ctx, actions, codes, base, trusted)
    return codes


def audit(
    state: ServeState,
    index: AclIndex,
    ctx: RequestContext,
    actions: list[ActionIn],
    codes: list[int],
    base: int = 0,
    trusted: bool = True,
) -> None:
    """Kafka's audit line for every decided action its logger wants (the rule is looked up only for those). A
    caller asking about itself (not `trusted`) has a budget of decision.log.self.query.rate lines per second over
    all such callers (the rest are counted in kraft_acl_audit_lines_skipped_total): each line is formatted on the
    event loop (about 25 us), and one caller without any ACL asking 1000 denied actions per call, one call at a
    time, took a broker's one-action p99 to 19-28 ms (16 connections: 125 ms; over decision frames 360-530 ms)."""
    authz = state.authorizer
    wanted = [
        i
        for i, a in enumerate(actions)
        if AUDIT_LOGGER.isEnabledFor(audit_level(RESULT_OF[codes[i]] is ALLOWED, a.log_if_allowed, a.log_if_denied))
    ]
    if not trusted and wanted:
        budget, request = _self_audit_budget(state), len(ctx.request)
        if request < AUDIT_LINE_BYTES and all(len(actions[i].resource_name) < AUDIT_LINE_BYTES for i in wanted):
            granted = budget.take(len(wanted))  # the usual call: short names, a line each
            kept = wanted[:granted]
        else:
            kept = [i for i in wanted if budget.take_line(line_cost(len(actions[i].resource_name) + request))]
        state.metrics.figures.audit_skipped += len(wanted) - len(kept)
        wanted = kept
    for i in wanted:
        authz.maybe_audit(index, ctx, action_of(actions[i], f"$.actions[{base + i}]"), RESULT_OF[codes[i]])


def _self_audit_budget(state: ServeState) -> SelfQueryBudget:
    if state.self_audit is None:
        state.self_audit = SelfQueryBudget(state.config.self_query_rate)
    return state.self_audit


def line_cost(name_chars: int) -> int:
    """What one audit line of a caller asking about itself takes from its budget: one line per AUDIT_LINE_BYTES of the
    names it writes (its resource and request names), so that the budget bounds bytes as well as lines: counted one
    line each, lines of two 32,767-character names wrote 65 MB a second to stderr (1000 a second), and with stderr
    not read 10,000 of them waited in the log queue, 650 MB of serve."""
    return 1 + name_chars // AUDIT_LINE_BYTES


def self_audit_gate(state: ServeState, ctx: RequestContext) -> Callable[[Action], bool]:
    """For `StandardAuthorizer.authorize_at` (explain, rule texts, the decision log) deciding for a caller asking
    about itself: an audit line's share of the budget `audit` takes from (`line_cost`), or False (the line is
    counted, not written)."""
    budget = _self_audit_budget(state)
    figures = state.metrics.figures
    request = len(ctx.request)

    def may_audit(action: Action) -> bool:
        if budget.take_line(line_cost(len(action.resource_name) + request)):
            return True
        figures.audit_skipped += 1
        return False

    return may_audit


def rule_texts(
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


def parse_actions(actions: list[ActionIn], base: int = 0) -> tuple[list[int], list[int], list[str]]:
    """Operation and resource type codes and names of LITERAL actions; BadRequest naming the first bad field.

    The common request (upper-case names, LITERAL patterns, short names) is parsed by list comprehensions
    and checked once for the whole list (a single action, a broker's usual call, without the comprehensions);
    anything else goes through `_parse_each`."""
    if len(actions) == 1:
        a = actions[0]
        op, rtype, name = OP_CODES.get(a.operation), TYPE_CODES.get(a.resource_type), a.resource_name
        if op is None or rtype is None or len(name) > MAX_STRING_BYTES // 4 or a.pattern_type != "LITERAL":
            return _parse_each(actions, base)
        return [op], [rtype], [name]
    ops = [OP_CODES.get(a.operation) for a in actions]
    rtypes = [TYPE_CODES.get(a.resource_type) for a in actions]
    names = [a.resource_name for a in actions]
    if (
        None in ops
        or None in rtypes
        or (names and max(map(len, names)) > MAX_STRING_BYTES // 4)
        or any(a.pattern_type != "LITERAL" for a in actions)
    ):
        return _parse_each(actions, base)
    return ops, rtypes, names  # type: ignore[return-value]  # no None left, checked above


def _parse_each(actions: list[ActionIn], base: int) -> tuple[list[int], list[int], list[str]]:
    """`parse_actions` one action at a time, with Kafka's case rules and a BadRequest naming the first bad field."""
    ops: list[int] = []
    rtypes: list[int] = []
    names: list[str] = []
    get_op, get_type = OPERATIONS.get, RESOURCE_TYPES.get
    for a in actions:
        op = get_op(a.operation) or get_op(a.operation.upper())
        rtype = get_type(a.resource_type) or get_type(a.resource_type.upper())
        if op is None or rtype is None or a.pattern_type != "LITERAL" or len(a.resource_name) > MAX_STRING_BYTES // 4:
            action_of(a, f"$.actions[{base + len(ops)}]")  # raises BadRequest naming the field, or passes
            if a.pattern_type != "LITERAL":
                raise BadRequest(f"Only literal resources are supported. Got: {a.pattern_type}", "$.actions")
        ops.append(op)  # type: ignore[arg-type]
        rtypes.append(rtype)  # type: ignore[arg-type]
        names.append(a.resource_name)
    return ops, rtypes, names
