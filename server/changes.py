"""`GET /v1/changes?after=N&wait_ms=W`, the change feed brokers' plugins keep polling so that they drop the decisions
they remember the moment serve publishes a state that changed ACLs (`kraftacl.server.change_feed` holds its state).

A long poll: the answer comes at once when the newest ACL-changing state's offset is not `after`, the caller knows
another `instance`, or `wait_ms` is 0, else after `wait_ms` as a heartbeat with the same shape; `held_us` says how long
it waited (the plugin dates its view from the poll's start plus that, not from the answer's arrival). Handlers run
on the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from urllib.parse import parse_qs

import msgspec

from kraftacl.api.wire import ChangesOut, ChangesQuery
from kraftacl.server.auth import Caller
from kraftacl.server.context import ServeState
from kraftacl.server.errors import BadRequest, Forbidden, NotReady
from kraftacl.server.http_wire import Request, Response

_ENCODE = msgspec.json.Encoder()


def changes(state: ServeState, request: Request, caller: Caller) -> Awaitable[Response]:
    """GET /v1/changes: broker principals and super users only; 503 before the initial load, and STALE_STATE after a
    freeze until the log was read again (as decisions: a heartbeat would keep the plugins' remembered decisions in
    use)."""
    if caller.principal not in state.trusted:
        raise Forbidden(f"{caller.principal} is not in broker.principals, so it may not follow the change feed")
    query = _query(request.query)
    if not state.authorizer.ready:
        raise NotReady("the ACLs are not loaded yet: the change feed starts with them")
    state.freeze.check(state.tailer)  # a serve that slept through ACL changes vouches for no remembered decision
    return _answer(state, query)


async def _answer(state: ServeState, query: ChangesQuery) -> Response:
    feed = state.changes
    started = time.monotonic_ns()
    await feed.wait(query.after, query.wait_ms / 1000, query.instance)
    held_us = (time.monotonic_ns() - started) // 1000
    state.freeze.check(state.tailer)  # frozen while the poll waited: 503 STALE_STATE, as decisions are answered
    out = ChangesOut(feed.instance, feed.acl_offset, feed.acl_applied_us, state.authorizer.state()[1], held_us)
    return Response(200, _ENCODE.encode(out))


def _query(query: str) -> ChangesQuery:
    """The query within `ChangesQuery`'s bounds, defaults as it has them; BadRequest naming the bad parameter."""
    try:
        params = parse_qs(query, keep_blank_values=True, strict_parsing=False, max_num_fields=16)
    except ValueError as exc:
        raise BadRequest(f"malformed query string: {exc}") from exc
    fields = ChangesQuery.__struct_fields__
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise BadRequest(f"unknown query parameter {unknown[0]!r} ({', '.join(fields)})", f"query.{unknown[0]}")
    for name, values in params.items():
        if len(values) > 1:
            raise BadRequest(f"{name} given {len(values)} times", f"query.{name}")
    try:
        parsed = msgspec.convert({k: v[0] for k, v in params.items()}, ChangesQuery, strict=False)
    except msgspec.ValidationError as exc:
        name = next((f for f in fields if f"`$.{f}`" in str(exc)), "")
        got = params.get(name, [""])[0][:40]
        raise BadRequest(f"query parameter {name}={got!r}: {str(exc).split(' - at ')[0]}", f"query.{name}") from exc
    return parsed
