"""The two endpoints that answer with every ACL: POST /v1/acls/describe (by filter, in Kafka's order) and GET
/v1/acls/image (every ACL with its id, what `kraft-acl shell --server` reads), streamed.

With a reader process (heavy.reads.process), both are handed to it (`server.reader`). Otherwise both read one
immutable index or image, so the answer is one state of the log however long it takes; the work
(filtering, ordering, encoding) runs in slices of the event loop (`server.slices`) so decisions keep being
answered, and the answer goes out in pieces as the client reads it (`StreamedResponse`): a 300k-ACL describe never
holds its 50 MB of JSON at once. Kafka's order is made by sorting runs of 1024 and merging them lazily.

Used on the event loop thread only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import heapq
from collections.abc import AsyncIterator, Iterator
from itertools import islice

import msgspec

from kraftacl.api.wire import AclOut, DescribeIn, DescribeOut, ImageOut
from kraftacl.authorizer.errors import InvalidFilterError
from kraftacl.authorizer.model.acls import StandardAcl, kafka_sort_key
from kraftacl.authorizer.state.gc_pause import GcPause
from kraftacl.server import json_body
from kraftacl.server.auth import Caller
from kraftacl.server.context import ServeState
from kraftacl.server.convert import acl_out, filter_of
from kraftacl.server.errors import BadRequest
from kraftacl.server.http_wire import Request, Response, StreamedResponse
from kraftacl.server.read_your_writes import log_end_reached, reached
from kraftacl.server.slices import Lane

_DESCRIBE = msgspec.json.Decoder(DescribeIn)
_ENCODE = msgspec.json.Encoder()
RUN = 1024  # ACLs sorted per slice; the runs are merged as the answer is written
PAUSE_LIMIT_S = 30.0  # longest a describe keeps the collector off
STEP = 64  # ACLs added to a piece between two looks at the clock; a piece is what one slice makes


async def describe(state: ServeState, request: Request, caller: Caller) -> Response | StreamedResponse:
    """Every ACL the filter matches, in Kafka's order, from one state (the filter is checked before the answer
    starts, so a bad one is a 400; with `min_offset`, once this serve has applied it).

    Each match gets one bytes key (`kafka_sort_key` plus its position): runs of keys are sorted a slice at a
    time and merged as the answer is written. Keys are bytes and the matches two lists; the collector is paused
    while the call holds them (`_pause_collector`)."""
    body = json_body.decode(_DESCRIBE, request.body) if request.body else DescribeIn()
    acl_filter = filter_of(body.filter)  # UNKNOWN fields are evaluated as Kafka's acls(filter) does (spec §9)
    await reached(state, body.min_offset)  # read-your-writes: a state holding that offset
    if body.consistent:
        await log_end_reached(state)  # every write acknowledged before the call, whoever wrote it
    index, offset = state.authorizer.state()
    if (
        state.reader is not None
        and (handed := await state.reader.answer(_relayed(request, body, offset), len(index), offset)) is not None
    ):
        return handed
    ids: list[str] = []
    acls: list[StandardAcl] = []
    runs: list[list[bytes]] = []
    pause = _pause_collector()
    try:
        async with state.lane.slicer() as slicer:
            run: list[bytes] = []
            try:
                async for acl_id, acl in slicer.each(index.by_id.items(), 128):
                    if acl_filter.matches_acl(acl):
                        run.append(kafka_sort_key(acl) + len(ids).to_bytes(4, "big"))
                        ids.append(acl_id)
                        acls.append(acl)
                        if len(run) >= RUN:
                            run.sort()
                            runs.append(run)
                            run = []
            except InvalidFilterError as exc:
                raise BadRequest(str(exc), "$.filter") from exc
            run.sort()
            runs.append(run)
    except BaseException:
        pause.end()
        raise
    ordered: Iterator[bytes] = heapq.merge(*runs) if len(runs) > 1 else iter(runs[0])
    positions = (int.from_bytes(key[-4:], "big") for key in ordered)
    pairs = ((ids[i], acls[i]) for i in positions)
    pieces = _pieces(state.lane, pairs, _ENCODE.encode(DescribeOut([], offset)))
    return StreamedResponse(200, pieces, on_close=pause.end)


def _relayed(request: Request, body: DescribeIn, offset: int) -> Request:
    """The request the reader process answers: a `consistent` call asks for this serve's `offset` instead (the
    log's end was read once already; the reader reading it again would cost it another poll of the log)."""
    if not body.consistent:
        return request
    relayed = msgspec.structs.replace(body, consistent=False, min_offset=offset if offset >= 0 else None)
    return dataclasses.replace(request, body=_ENCODE.encode(relayed))


def _pause_collector() -> GcPause:
    """The collector off while a describe holds its lists of every match (a generation-0 pass walking 300k of them
    took 18-25 ms, once per call, holding the event loop): handed to the streamed answer, which ends it when done,
    and ended after PAUSE_LIMIT_S whatever happens (a slow reader does not keep the collector off)."""
    pause = GcPause()
    asyncio.get_running_loop().call_later(PAUSE_LIMIT_S, pause.end)
    return pause


async def image(state: ServeState, request: Request, caller: Caller) -> Response | StreamedResponse:
    """GET /v1/acls/image: every ACL with its id from one image (one reference: ACLs and provenance agree)."""
    current = state.node.image
    p = current.provenance
    if state.reader is not None and (handed := await state.reader.answer(request, len(current.acls), p.last_offset)):
        return handed
    cfg = state.config.authorizer
    empty = ImageOut(
        [], p.last_offset, p.epoch, p.timestamp_ms, sorted(cfg.super_users), cfg.allow_everyone_if_no_acl_found
    )
    return StreamedResponse(200, _pieces(state.lane, iter(current.acls.items()), _ENCODE.encode(empty)))


async def _pieces(lane: Lane, pairs: Iterator[tuple[str, StandardAcl]], empty: bytes) -> AsyncIterator[bytes]:
    """The answer `empty` (its first field an empty list) with `pairs` filled in, piece by piece: each piece is
    made in one slice of the loop, and the next one only once the client has read enough."""
    head, _, tail = empty.partition(b"[]")
    yield head + b"["
    first = True
    more = True
    while more:
        async with lane.slicer() as slicer:
            batch: list[AclOut] = []
            while True:  # at least one step per slice: a slice used up before its first step ends nothing
                step = [acl_out(i, a) for i, a in islice(pairs, STEP)]
                batch += step
                more = len(step) == STEP
                if not more or slicer.due():
                    break
            encoded = _ENCODE.encode(batch)[1:-1]
        if batch:
            yield encoded if first else b"," + encoded
            first = False
    yield b"]" + tail
