"""The heavier authorize calls: a large batch (a body above `json_body.SLICED_ABOVE`), `explain` (each action's
rule and the deciding ACL's id), decisions written to the decision log, and a large batch asking for rule texts
(`rules`), each against one state read at the start, so that a broker's decision never waits behind them:

* a large batch without rules is decoded and decided as codes in slices of the event loop (`server.slices`);
* rules are found on the rules thread (`ServeState.rules`, one thread): finding the rule of one action walks every
  ACL that may apply to it, Python code that can take milliseconds per action and that the GIL's switch interval
  (1 ms in serve) interrupts whenever the event loop has a decision to answer; a call whose client left stops.

The handlers are called on the event loop thread; `_rules_work` runs on the rules thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Sequence
from contextlib import nullcontext

import msgspec

from kraftacl.api.wire import ActionIn, AuthorizeIn, AuthorizeOut, RuleOut
from kraftacl.authorizer.decision.audit import Rule
from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.errors import AuthorizerNotReadyError, InvalidActionError
from kraftacl.authorizer.index.acl_index import AclIndex
from kraftacl.authorizer.model.acls import AuthorizationResult
from kraftacl.authorizer.state.gc_pause import paused_gc
from kraftacl.server import json_body
from kraftacl.server.auth import Caller
from kraftacl.server.context import ServeState
from kraftacl.server.convert import action_of
from kraftacl.server.decision_inputs import RESULT_NAME, check_limits, context, decide_codes
from kraftacl.server.errors import BadRequest, NotReady
from kraftacl.server.http_wire import Request, Response
from kraftacl.server.read_your_writes import reached

_AUTHORIZE = msgspec.json.Decoder(AuthorizeIn)
_ACTIONS = msgspec.json.Decoder(list[ActionIn])
_ENCODE = msgspec.json.Encoder()
CODES_STEP = 256  # actions decided as codes per step on the loop (about 0.2 ms)
RULES_STEP = 16  # actions decided with their rules per step on the rules thread (between two looks at `stop`)
ENCODE_STEP = 512  # rules encoded per msgspec call
# PAUSED_GC: the collector is off while a batch's rules are found (at most explain.max.actions of them): the
# rules, results and candidate lists it makes would otherwise trigger collections of 3-40 ms each, on the rules
# thread but holding the GIL the event loop needs; they are acyclic and freed by reference counting.


async def authorize_large(state: ServeState, request: Request, caller: Caller) -> Response:
    """POST /v1/authorize with a large body: decoded and decided in slices."""
    async with state.lane.slicer() as slicer:
        body = await json_body.decode_sliced(request.body, _AUTHORIZE, "actions", _ACTIONS, slicer)
    trusted = check_limits(state, caller, body)
    await reached(state, body.min_offset)
    if body.explain or state.decision_log is not None or body.rules is not None:
        return await _with_rules(state, body, trusted)
    ctx = context(body.principal, body.client_address, body.listener, body.request, "Authorize")
    state.freeze.check(state.tailer)
    index, offset = state.authorizer.state()
    codes: list[int] = []
    started = time.perf_counter()
    async with state.lane.slicer() as slicer:
        for start in range(0, len(body.actions), CODES_STEP):
            chunk = body.actions[start : start + CODES_STEP]
            codes += decide_codes(state, index, ctx, chunk, base=start, timed=False)
            await slicer.pause()
        state.metrics.figures.observe(time.perf_counter() - started)
        return Response(200, _ENCODE.encode(AuthorizeOut([RESULT_NAME[code] for code in codes], offset)))


def answer(state: ServeState, body: AuthorizeIn, trusted: bool) -> Awaitable[Response]:
    """A call whose decisions need their rules (explain, or the decision log; the rule texts asked with them):
    decided on the rules thread."""
    return _with_rules(state, body, trusted)


def decide_logged(state: ServeState, ctx: RequestContext, action: Action) -> Awaitable[list[int]]:
    """One action decided with its rule on the rules thread, for the decision log (the OPA API); its codes."""
    index, offset = state.authorizer.state()

    def work() -> list[int]:
        results, codes, rules = decide_at(state, index, ctx, [action], False, "$.input.action")
        if state.decision_log is not None and rules is not None:
            state.decision_log.write(ctx, [action], results, rules, offset, True)
        return codes

    return asyncio.get_running_loop().run_in_executor(state.rules, work)


def decide_at(
    state: ServeState, index: AclIndex, ctx: RequestContext, actions: list[Action], with_rules: bool, field: str
) -> tuple[list[AuthorizationResult], list[int], list[Rule] | None]:
    """Kafka's authorize of `actions` against `index` (audited), with each rule when asked (explain, rule texts)
    or logged."""
    authz = state.authorizer
    try:
        return authz.authorize_at(index, ctx, actions, with_rules or state.decision_log is not None)
    except AuthorizerNotReadyError as exc:
        state.metrics.figures.not_ready += 1
        raise NotReady(str(exc)) from exc
    except InvalidActionError as exc:
        raise BadRequest(str(exc), field) from exc


async def _with_rules(state: ServeState, body: AuthorizeIn, trusted: bool) -> Response:
    """Decide with rules on the rules thread (a rule walks every ACL that may apply: up to milliseconds per
    action, Python code the GIL's switch interval interrupts) against one state; stopped if the client leaves."""
    ctx = context(body.principal, body.client_address, body.listener, body.request, "Authorize")
    loop = asyncio.get_running_loop()
    if body.explain and state.acl_ids.by_content is None:
        await loop.run_in_executor(state.rules, state.acl_ids.enable)
    state.freeze.check(state.tailer)
    index, offset = state.authorizer.state()
    stop = threading.Event()
    try:
        out, codes, seconds = await loop.run_in_executor(
            state.rules, _rules_work, state, ctx, index, offset, body, trusted, stop
        )
    except asyncio.CancelledError:
        stop.set()
        raise
    figures = state.metrics.figures
    figures.observe(seconds)
    figures.count_codes(codes)
    return Response(200, out)


def _rules_work(
    state: ServeState,
    ctx: RequestContext,
    index: AclIndex,
    offset: int,
    body: AuthorizeIn,
    trusted: bool,
    stop: threading.Event,
) -> tuple[bytes, list[int], float]:
    """On the rules thread: the decisions and rules of every action in steps, the decision log's lines, and
    the answer's bytes (encoded in steps too: no C call long enough to keep the GIL from the event loop)."""
    results: list[AuthorizationResult] = []
    codes: list[int] = []
    rules: list[Rule] = []
    with_rules = body.explain or body.rules is not None
    started = time.perf_counter()
    with paused_gc() if len(body.actions) > RULES_STEP else nullcontext():  # see PAUSED_GC
        for start in range(0, len(body.actions), RULES_STEP):
            if stop.is_set():
                raise asyncio.CancelledError
            chunk = body.actions[start : start + RULES_STEP]
            actions = [action_of(a, f"$.actions[{start + i}]") for i, a in enumerate(chunk)]
            chunk_results, chunk_codes, chunk_rules = decide_at(state, index, ctx, actions, with_rules, "$.actions")
            results += chunk_results
            codes += chunk_codes
            if chunk_rules is not None:
                rules += chunk_rules
                if state.decision_log is not None:
                    state.decision_log.write(ctx, actions, chunk_results, chunk_rules, offset, trusted)
    seconds = time.perf_counter() - started
    head = _ENCODE.encode(AuthorizeOut([r.name for r in results], offset))
    if not with_rules:
        return head, codes, seconds
    pieces = [head[:-1]]
    if body.explain:
        ids = state.acl_ids
        pieces += _array(b"rules", [RuleOut(r.kind, str(r), ids.id_of(r)) for r in rules])
    if body.rules is not None:
        every = body.rules == "all"
        texts = [
            str(r) if every or res is not AuthorizationResult.ALLOWED else None
            for r, res in zip(rules, results, strict=True)
        ]
        pieces += _array(b"rule_texts", texts)
    pieces.append(b"}")
    return b"".join(pieces), codes, seconds


def _array(key: bytes, items: Sequence[object]) -> list[bytes]:
    """`,"key":[...]` encoded ENCODE_STEP items per msgspec call (no C call long enough to keep the GIL)."""
    pieces = [b',"' + key + b'":[']
    for start in range(0, len(items), ENCODE_STEP):
        pieces += [b"," if start else b"", _ENCODE.encode(items[start : start + ENCODE_STEP])[1:-1]]
    pieces.append(b"]")
    return pieces
