"""The heavier authorize calls: a large batch (a body above `json_body.SLICED_ABOVE`), `explain` (each action's
rule and the deciding ACL's id), and decisions written to the decision log. They run in slices of the event loop
(`server.slices`) against one state read at the start, so a broker's decision never waits behind them for more
than a slice; an explained answer of many actions is streamed.

Called on the event loop thread; the content -> id map that explanations need is built on a worker thread the
first time (a Python loop, which gives the GIL back at the switch interval), not on the loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import msgspec

from kraftacl.api.wire import ActionIn, AuthorizeIn, AuthorizeOut, RuleOut
from kraftacl.authorizer.decision.audit import Rule
from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.errors import AuthorizerNotReadyError, InvalidActionError
from kraftacl.authorizer.index.acl_index import AclIndex
from kraftacl.authorizer.model.acls import AuthorizationResult
from kraftacl.server import json_body
from kraftacl.server.auth import Caller
from kraftacl.server.context import ServeState
from kraftacl.server.convert import action_of
from kraftacl.server.decision_inputs import RESULT_NAME, check_limits, context, decide_codes
from kraftacl.server.errors import BadRequest, NotReady
from kraftacl.server.http_wire import Request, Response, StreamedResponse

_AUTHORIZE = msgspec.json.Decoder(AuthorizeIn)
_ACTIONS = msgspec.json.Decoder(list[ActionIn])
_ENCODE = msgspec.json.Encoder()
CODES_STEP = 256  # actions decided as codes per step (about 0.2 ms)
RULES_STEP = 16  # actions explained per step (a rule walks the ACLs that apply)
STREAM_ABOVE = 256  # explained answers of more actions are streamed


async def authorize_large(state: ServeState, request: Request, caller: Caller) -> Response | StreamedResponse:
    """POST /v1/authorize with a large body: decoded and decided in slices."""
    async with state.lane.slicer() as slicer:
        body = await json_body.decode_sliced(request.body, _AUTHORIZE, "actions", _ACTIONS, slicer)
    trusted = check_limits(state, caller, body)
    if body.explain or state.decision_log is not None:
        return await _explained(state, body, trusted)
    ctx = context(body.principal, body.client_address, body.listener, body.request, "Authorize")
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


def answer(
    state: ServeState, body: AuthorizeIn, trusted: bool
) -> Response | asyncio.Future[Response | StreamedResponse]:
    """A small call with explain or a decision log: decided now without explain, else in slices."""
    if not body.explain:
        ctx = context(body.principal, body.client_address, body.listener, body.request, "Authorize")
        actions = [action_of(a, f"$.actions[{i}]") for i, a in enumerate(body.actions)]
        return Response(200, _ENCODE.encode(decide(state, ctx, actions, False, trusted)))
    return asyncio.ensure_future(_explained(state, body, trusted))


def decide(state: ServeState, ctx: RequestContext, actions: list[Action], explain: bool, trusted: bool) -> AuthorizeOut:
    """Decide a few actions against one state with their rules (explain, or the decision log); count, time, log."""
    index, offset = state.authorizer.state()
    started = time.perf_counter()
    results, rules = _decide(state, index, ctx, actions, explain, "$.actions")
    state.metrics.figures.observe(time.perf_counter() - started)
    if state.decision_log is not None and rules is not None:
        state.decision_log.write(ctx, actions, results, rules, offset, trusted)
    names = [r.name for r in results]
    if not explain or rules is None:
        return AuthorizeOut(names, offset)
    ids = state.acl_ids
    return AuthorizeOut(names, offset, [RuleOut(r.kind, str(r), ids.id_of(r)) for r in rules])


def _decide(
    state: ServeState, index: AclIndex, ctx: RequestContext, actions: list[Action], explain: bool, field: str
) -> tuple[list[AuthorizationResult], list[Rule] | None]:
    authz = state.authorizer
    try:
        results, codes, rules = authz.authorize_at(index, ctx, actions, explain or state.decision_log is not None)
    except AuthorizerNotReadyError as exc:
        state.metrics.figures.not_ready += 1
        raise NotReady(str(exc)) from exc
    except InvalidActionError as exc:
        raise BadRequest(str(exc), field) from exc
    state.metrics.figures.count_codes(codes)
    return results, rules


async def _explained(state: ServeState, body: AuthorizeIn, trusted: bool) -> Response | StreamedResponse:
    """Decide with rules in slices against one state; the rules (explain) are streamed after the results."""
    ctx = context(body.principal, body.client_address, body.listener, body.request, "Authorize")
    if body.explain and state.acl_ids.by_content is None:
        await asyncio.get_running_loop().run_in_executor(None, state.acl_ids.enable)
    index, offset = state.authorizer.state()
    results: list[AuthorizationResult] = []
    rules: list[Rule] = []
    started = time.perf_counter()
    async with state.lane.slicer() as slicer:
        for start in range(0, len(body.actions), RULES_STEP):
            actions = [
                action_of(a, f"$.actions[{start + i}]") for i, a in enumerate(body.actions[start : start + RULES_STEP])
            ]
            chunk_results, chunk_rules = _decide(state, index, ctx, actions, body.explain, "$.actions")
            results += chunk_results
            if chunk_rules is not None:
                rules += chunk_rules
                if state.decision_log is not None:
                    state.decision_log.write(ctx, actions, chunk_results, chunk_rules, offset, trusted)
            await slicer.pause()
        state.metrics.figures.observe(time.perf_counter() - started)
        head = _ENCODE.encode(AuthorizeOut([r.name for r in results], offset))
    if not body.explain:
        return Response(200, head)
    if len(rules) <= STREAM_ABOVE:
        ids = state.acl_ids
        out = AuthorizeOut([r.name for r in results], offset, [RuleOut(r.kind, str(r), ids.id_of(r)) for r in rules])
        return Response(200, _ENCODE.encode(out))
    return StreamedResponse(200, _rule_pieces(state, head, rules))


async def _rule_pieces(state: ServeState, head: bytes, rules: list[Rule]) -> AsyncIterator[bytes]:
    """`{"results": [...], "offset": N, "rules": [...]}`, the rules encoded a slice at a time."""
    yield head[:-1] + b',"rules":['
    ids = state.acl_ids
    position = 0
    while position < len(rules):
        first = position == 0
        async with state.lane.slicer() as slicer:
            batch: list[RuleOut] = []
            while position < len(rules) and not slicer.due():
                batch += [RuleOut(r.kind, str(r), ids.id_of(r)) for r in rules[position : position + 64]]
                position += 64
            encoded = _ENCODE.encode(batch)[1:-1]
        yield encoded if first else b"," + encoded
    yield b"]}"
