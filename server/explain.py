"""The heavier authorize calls: a large batch (a body above `json_body.SLICED_ABOVE`), `explain` (each action's
rule and the deciding ACL's id), decisions written to the decision log, and a large batch asking for rule texts
(`rules`), each against one state read at the start, so that a broker's decision never waits behind them:

* a large batch without rules is decoded and decided as codes in slices of the event loop (`server.slices`);
* rules of a call of at most INLINE_RULES actions (a broker's call with the decision log) are found at once on the
  loop, so it never queues behind an explain;
* a larger call is handed to the reader process when there is one (heavy.reads.process, `server.reader`);
* otherwise rules of a larger call are found on the rules thread (`ServeState.rules`, one thread): finding the rule of
  one action walks every ACL that may apply to it, Python code that can take from microseconds to 200 ms per action
  and that the GIL's switch interval (0.2 ms in serve) interrupts whenever the event loop has a decision to answer (on
  the loop, in slices, one such action was one stall of 200 ms); a call whose client left stops.

The handlers are called on the event loop thread; `_work_through` runs on the rules thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Iterator

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
from kraftacl.server.decision_inputs import RESULT_NAME, check_limits, context, decide_codes, self_audit_gate
from kraftacl.server.errors import BadRequest, NotReady
from kraftacl.server.http_wire import Request, Response
from kraftacl.server.read_your_writes import reached

_AUTHORIZE = msgspec.json.Decoder(AuthorizeIn)
_ACTIONS = msgspec.json.Decoder(list[ActionIn])
_ENCODE = msgspec.json.Encoder()
CODES_STEP = 256  # actions decided as codes per step on the loop (about 0.2 ms)
INLINE_RULES = 32  # a call of at most this many actions finds its rules at once on the loop
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
        return await _with_rules(state, request, body, trusted)
    ctx = context(body.principal, body.client_address, body.listener, body.request, "Authorize")
    state.freeze.check(state.tailer)
    index, offset = state.authorizer.state()
    codes: list[int] = []
    started = time.perf_counter()
    async with state.lane.slicer() as slicer:
        for start in range(0, len(body.actions), CODES_STEP):
            chunk = body.actions[start : start + CODES_STEP]
            codes += decide_codes(state, index, ctx, chunk, base=start, timed=False, trusted=trusted)
            await slicer.pause()
        state.metrics.figures.observe(time.perf_counter() - started)
        return Response(200, _ENCODE.encode(AuthorizeOut([RESULT_NAME[code] for code in codes], offset)))


def answer(state: ServeState, request: Request, body: AuthorizeIn, trusted: bool) -> Awaitable[Response]:
    """A call whose decisions need their rules (explain, or the decision log; the rule texts asked with them)."""
    return _with_rules(state, request, body, trusted)


async def decide_logged(state: ServeState, ctx: RequestContext, action: Action) -> list[int]:
    """One action decided with its rule, for the decision log (the OPA API), at once on the loop; its codes."""
    index, offset = state.authorizer.state()
    results, codes, rules = decide_at(state, index, ctx, [action], False, "$.input.action")
    if state.decision_log is not None and rules is not None:
        state.decision_log.write(ctx, [action], results, rules, offset, True)
    return codes


def decide_at(
    state: ServeState,
    index: AclIndex,
    ctx: RequestContext,
    actions: list[Action],
    with_rules: bool,
    field: str,
    trusted: bool = True,
) -> tuple[list[AuthorizationResult], list[int], list[Rule] | None]:
    """Kafka's authorize of `actions` against `index` (audited: for a caller asking about itself, not `trusted`,
    within the budget of audit lines such callers share), with each rule when asked (explain, rule texts) or
    logged."""
    authz = state.authorizer
    gate = None if trusted else self_audit_gate(state, ctx)
    try:
        return authz.authorize_at(index, ctx, actions, with_rules or state.decision_log is not None, gate)
    except AuthorizerNotReadyError as exc:
        state.metrics.figures.not_ready += 1
        raise NotReady(str(exc)) from exc
    except InvalidActionError as exc:
        raise BadRequest(str(exc), field) from exc


async def _with_rules(state: ServeState, request: Request, body: AuthorizeIn, trusted: bool) -> Response:
    """Decide with rules against one state: a call of at most INLINE_RULES actions at once on the loop (a broker's
    call with the decision log waits for nobody); a larger one by the reader process when there is one
    (`server.reader`), else on the rules thread, where the GIL's switch interval interrupts it whenever the loop has
    a decision to answer (a rule walks every ACL that may apply: one action can take 200 ms, which on the loop would
    be one stall); it stops when the client leaves."""
    # only a broker's or super user's call goes to the reader: the reader answers as its own broker principal, so a
    # caller asking about itself would have its audit lines written there without its budget (277,000 lines in 12 s
    # from four connections); such a call is at most self.query.max.actions long and runs on the rules thread here
    if state.reader is not None and trusted and len(body.actions) > INLINE_RULES:
        index, offset = state.authorizer.state()
        handed = await state.reader.answer(request, len(index), offset, whole=True)
        if isinstance(handed, Response):
            return handed
    ctx = context(body.principal, body.client_address, body.listener, body.request, "Authorize")
    loop = asyncio.get_running_loop()
    if body.explain and state.acl_ids.by_content is None:
        await loop.run_in_executor(state.rules, state.acl_ids.enable)
    state.freeze.check(state.tailer)
    index, offset = state.authorizer.state()
    work = _Rules(state, ctx, index, offset, body, trusted)
    if len(body.actions) <= INLINE_RULES:
        work.decide(0, len(body.actions))
        out = b"".join(work.pieces())
    else:
        stop = threading.Event()
        try:
            out = await loop.run_in_executor(state.rules, _work_through, work, stop)
        except asyncio.CancelledError:
            stop.set()
            raise
    figures = state.metrics.figures
    figures.observe(work.seconds)
    figures.count_codes(work.codes)
    return Response(200, out)


def _work_through(work: _Rules, stop: threading.Event) -> bytes:
    """On the rules thread: every action, RULES_STEP at a time (looking at `stop` between two steps), then the
    answer's bytes (encoded ENCODE_STEP rules per msgspec call: no C call long enough to keep the GIL)."""
    with paused_gc():  # see PAUSED_GC
        for start in range(0, len(work.body.actions), RULES_STEP):
            if stop.is_set():
                raise asyncio.CancelledError
            work.decide(start, start + RULES_STEP)
        out = b"".join(work.pieces())
        work.rules, work.results = [], []  # freed before the collector is back, not walked by it
    return out


class _Rules:
    """One call's decisions with their rules, found a range of actions at a time, and its answer's bytes in pieces
    (ENCODE_STEP rules per msgspec call); used by one thread at a time (the loop for a small call, the rules thread
    for a large one; the loop reads `codes` and `seconds` once that is done)."""

    def __init__(
        self, state: ServeState, ctx: RequestContext, index: AclIndex, offset: int, body: AuthorizeIn, trusted: bool
    ) -> None:
        self.state, self.ctx, self.index, self.offset = state, ctx, index, offset
        self.body, self.trusted = body, trusted
        self.with_rules = body.explain or body.rules is not None
        self.results: list[AuthorizationResult] = []
        self.codes: list[int] = []
        self.rules: list[Rule] = []
        self.seconds = 0.0

    def decide(self, start: int, end: int) -> None:
        """The actions [start, end): decisions, rules, decision log lines."""
        began = time.perf_counter()
        actions = [action_of(a, f"$.actions[{start + i}]") for i, a in enumerate(self.body.actions[start:end])]
        results, codes, rules = decide_at(
            self.state, self.index, self.ctx, actions, self.with_rules, "$.actions", self.trusted
        )
        self.results += results
        self.codes += codes
        if rules is not None:
            self.rules += rules
            log = self.state.decision_log
            if log is not None:
                log.write(self.ctx, actions, results, rules, self.offset, self.trusted)
        self.seconds += time.perf_counter() - began

    def pieces(self) -> Iterator[bytes]:
        """The answer's bytes: results and offset, then `rules` and `rule_texts` when asked."""
        head = _ENCODE.encode(AuthorizeOut([r.name for r in self.results], self.offset))
        if not self.with_rules:
            yield head
            return
        yield head[:-1]
        body, rules = self.body, self.rules
        if body.explain:
            ids = self.state.acl_ids
            yield b',"rules":['
            for start in range(0, len(rules), ENCODE_STEP):
                step = [RuleOut(r.kind, str(r), ids.id_of(r)) for r in rules[start : start + ENCODE_STEP]]
                yield (b"," if start else b"") + _ENCODE.encode(step)[1:-1]
            yield b"]"
        if body.rules is not None:
            every = body.rules == "all"
            yield b',"rule_texts":['
            for start in range(0, len(rules), ENCODE_STEP):
                pairs = zip(rules[start : start + ENCODE_STEP], self.results[start : start + ENCODE_STEP], strict=True)
                texts = [str(r) if every or res is not AuthorizationResult.ALLOWED else None for r, res in pairs]
                yield (b"," if start else b"") + _ENCODE.encode(texts)[1:-1]
            yield b"]"
        yield b"}"
