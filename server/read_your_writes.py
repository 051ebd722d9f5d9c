"""Read-your-writes: a decision or describe that names `min_offset` (the offset an ACL write answered) is answered
from a state holding that offset, waiting (bounded by min.offset.wait.max.ms) while this serve catches up; else 503
OFFSET_NOT_REACHED naming how far it got (at once when this serve cannot read its log: it diverged, or a poll begun
after the request arrived failed), or 400 once this serve has read the log's end after the request arrived and the
offset lies beyond it (no write can have answered it).

A serve applies the log some milliseconds after the controller acknowledged a write (docs/deployment.md has the
measured propagation); a client that must see its own write on any serve passes the offset instead of sleeping.

A broker-role serve that must wait asks its tailer to poll the log at once (once per request; concurrent asks
share one poll), rather than after metadata.log.poll.interval.ms: the write that answered `min_offset` is already
committed, so that poll finds it. Runs on the event loop; the wait is woken by the change feed
(`server.change_feed`) and re-checks every 50 ms.

A describe with `consistent` needs no offset: it waits for the end its log had when it arrived (`log_end_reached`),
so it sees every write acknowledged before it, whichever serve acknowledged it and whoever asked for it (a broker's
plugin describes for writes another plugin instance made: a KRaft controller's).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from kraftacl.server.context import ServeState
from kraftacl.server.errors import ApiFailure, BadRequest
from kraftacl.server.http_wire import Response

RECHECK_S = 0.05  # also notices a batch that changed no ACL (the change feed wakes only on changes)
END_RECHECK_S = 0.002  # how often a `consistent` call looks for a poll of the log begun after it arrived


class OffsetNotReached(ApiFailure):
    """503: this serve had not applied `min_offset` within min.offset.wait.max.ms."""

    status = 503
    code = "OFFSET_NOT_REACHED"


def applied(state: ServeState, min_offset: int | None) -> bool:
    """True when the answer need not wait: no `min_offset` asked, it is applied, or serve is still loading (the
    answer is then AUTHORIZER_NOT_READY)."""
    return min_offset is None or not state.authorizer.ready or state.authorizer.state()[1] >= min_offset


def after_offset(
    state: ServeState, min_offset: int | None, answer: Callable[[], Response]
) -> Response | Awaitable[Response]:
    """`answer()` now when `applied`; else once `min_offset` is applied."""
    if applied(state, min_offset):
        return answer()
    return _later(state, min_offset, answer)


async def _later(state: ServeState, min_offset: int | None, answer: Callable[[], Response]) -> Response:
    await reached(state, min_offset)
    return answer()


async def reached(
    state: ServeState, min_offset: int | None, arrived: float | None = None, field: str = "$.min_offset"
) -> None:
    """Return once `min_offset` is applied (at once when `applied`); 400 when it lies beyond the log's end, 503
    OFFSET_NOT_REACHED naming `field` min.offset.wait.max.ms after the call `arrived` (time.monotonic(); default
    now), or as soon as this serve cannot read its log (diverged, or a poll begun after the call failed)."""
    if min_offset is None or applied(state, min_offset):
        return
    arrived = time.monotonic() if arrived is None else arrived
    deadline = arrived + state.config.min_offset_wait_s
    feed = state.changes
    poked = False
    while state.authorizer.state()[1] < min_offset:
        tail = state.tailer.status() if state.tailer is not None else None
        if tail is not None and (tail.diverged is not None or (tail.last_error and tail.started_monotonic > arrived)):
            # it cannot get there now: the caller asks another serve at once (as a `consistent` call), rather than
            # waiting min.offset.wait.max.ms for it; a caller asking about itself held 3,200 such waits open (16
            # decision frames on each of 200 connections) and took a broker's one-action p99 from 1.3 to 121 ms
            # (the log's error, which names its files, is for the operator: /v1/status, the log)
            raise OffsetNotReached(
                f"this serve cannot read its metadata log now; it has applied it up to offset "
                f"{state.authorizer.state()[1]}, not min_offset {min_offset}: ask another serve",
                field,
            )
        if (
            tail is not None
            and tail.last_error is None
            and tail.started_monotonic > arrived
            and tail.high_watermark is not None
            and min_offset >= tail.high_watermark
        ):
            raise BadRequest(
                f"min_offset {min_offset} is beyond the end of the metadata log (its next offset is "
                f"{tail.high_watermark}): no ACL write answered it",
                "$.min_offset",
            )
        left = deadline - time.monotonic()
        if left <= 0:
            done = state.authorizer.state()[1]
            raise OffsetNotReached(
                f"this serve has applied the metadata log up to offset {done}, not yet min_offset {min_offset} "
                f"(waited {time.monotonic() - arrived:.1f} s, min.offset.wait.max.ms); ask again, or another serve",
                field,
            )
        if not poked and state.tailer is not None:
            state.tailer.poke()  # after the deadline's check: min.offset.wait.max.ms=0 never waits for a poll
            poked = True
        await feed.wait(feed.acl_offset, min(left, RECHECK_S))


async def log_end_reached(state: ServeState) -> None:
    """Return once this serve has applied its log up to the end the log had when the call arrived (a describe's
    `consistent`): the tailer is poked, a poll begun after the call arrived names that end, and the call then
    waits for it as for a `min_offset`. A tailer in a long poll of the Kafka topic begins its next poll when
    the poll ends (a commit, or metadata.log.poll.interval.ms). 503 OFFSET_NOT_REACHED at once when that poll
    failed (the log cannot be read now: the caller may take the state applied instead), else after
    min.offset.wait.max.ms."""
    if not state.authorizer.ready:
        return  # still loading: the call is refused AUTHORIZER_NOT_READY as any other
    arrived = time.monotonic()
    poked = False
    while True:
        tailer = state.tailer  # None for a moment after the load, before the tailer starts
        if tailer is not None:
            if not poked:
                tailer.poke()
                poked = True
            tail = tailer.status()
            if tail.started_monotonic > arrived:
                if tail.last_error is not None:
                    raise OffsetNotReached(
                        f"this serve cannot read its metadata log's end now: {tail.last_error}", "$.consistent"
                    )
                if tail.high_watermark is not None:
                    break
        waited = time.monotonic() - arrived
        if waited >= state.config.min_offset_wait_s:
            raise OffsetNotReached(
                f"this serve did not read its metadata log's end within {waited:.1f} s (min.offset.wait.max.ms); "
                "ask again, or another serve",
                "$.consistent",
            )
        await asyncio.sleep(END_RECHECK_S)
    await reached(state, tail.high_watermark - 1, arrived, "$.consistent")
