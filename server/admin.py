"""The ACL management endpoints (create, delete: KIP-140), the small read-only ones (count, status), and the checks
the API makes at a request's head (`require_cluster`, `require_ready`, `require_writable`).

Callers other than brokers and super users are authorized the way Kafka authorizes its own admin APIs
(spec §12): DESCRIBE on the cluster to describe, ALTER on the cluster to create or delete. Writes run
on the writer thread (fsync or a Kafka transaction) so the event loop keeps deciding meanwhile; their bodies
are decoded on the loop in slices (`server.json_body`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import msgspec

from kraftacl.api.wire import (
    AclIn,
    ControllerOut,
    CountOut,
    CreateIn,
    CreateOut,
    CreateResultOut,
    DeleteIn,
    DeleteOut,
    DeleteResultOut,
    FilterIn,
    SnapshotOut,
    StatusOut,
)
from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.errors import AuthorizerNotReadyError
from kraftacl.authorizer.model.acls import (
    CLUSTER_NAME,
    AclOperation,
    AuthorizationResult,
    ResourceType,
)
from kraftacl.authorizer.state.controller import CreateResult
from kraftacl.metadata_log.errors import LogError
from kraftacl.server.auth import Caller
from kraftacl.server.context import ServeState
from kraftacl.server.convert import acl_of, acl_out, filter_of
from kraftacl.server.errors import BadRequest, Forbidden, LogUnavailable, NotController, NotReady
from kraftacl.server.http_wire import Request, Response
from kraftacl.server.json_body import decode_sliced
from kraftacl.snapshots.errors import SnapshotError
from kraftacl.snapshots.naming import parse_name

_CREATE = msgspec.json.Decoder(CreateIn)
_DELETE = msgspec.json.Decoder(DeleteIn)
_ACLS = msgspec.json.Decoder(list[AclIn])
_FILTERS = msgspec.json.Decoder(list[FilterIn])
_ENCODE = msgspec.json.Encoder()
MAX_DELETE_FILTERS = 10_000  # filters of one delete (Kafka's removal cap): each is a pass over every ACL
T = TypeVar("T")


def require_cluster(state: ServeState, caller: Caller, operation: AclOperation, request_name: str) -> None:
    """Brokers and super users pass; anyone else needs `operation` on CLUSTER kafka-cluster by the ACLs, decided
    (and audited, under `request_name`) from the caller's address in Kafka's form."""
    if caller.principal in state.trusted:
        return
    ctx = RequestContext(caller.principal, caller.host, "", request_name)
    action = Action(operation, ResourceType.CLUSTER, CLUSTER_NAME)
    try:
        result = state.authorizer.authorize(ctx, [action])[0]
    except AuthorizerNotReadyError as exc:
        raise NotReady(str(exc)) from exc
    if result is not AuthorizationResult.ALLOWED:
        raise Forbidden(
            f"{caller.principal} from {caller.host} is not allowed {operation.name} on the cluster",
            code="CLUSTER_AUTHORIZATION_FAILED",
        )


def require_ready(state: ServeState) -> None:
    """503 AUTHORIZER_NOT_READY until the initial load completed."""
    if not state.authorizer.ready:
        raise NotReady("the ACLs are not loaded yet (initial load in progress)")


async def create(state: ServeState, request: Request, caller: Caller) -> Response:
    """POST /v1/acls/create: KIP-140's per-entry results; all new ACLs in one atomic batch."""
    async with state.lane.slicer() as slicer:
        body = await decode_sliced(request.body, _CREATE, "acls", _ACLS, slicer)
        acls = [acl_of(a, f"$.acls[{i}]") async for i, a in slicer.each(enumerate(body.acls))]
    await writable(state)
    results = await on_writer(state, lambda: state.node.controller.create_acls(acls))
    out = [_create_out(r) for r in results]
    return Response(200, _ENCODE.encode(CreateOut(out, state.node.image.provenance.last_offset)))


async def delete(state: ServeState, request: Request, caller: Caller) -> Response:
    """POST /v1/acls/delete: per filter, every ACL it matched; each removed once, in one atomic batch. At most
    MAX_DELETE_FILTERS filters (each is a pass over every ACL on the writer thread); the answer is made in slices
    of the event loop (up to MAX_REPORTED_PER_DELETE ACL entries)."""
    async with state.lane.slicer() as slicer:
        body = await decode_sliced(request.body, _DELETE, "filters", _FILTERS, slicer)
        if len(body.filters) > MAX_DELETE_FILTERS:
            raise BadRequest(
                f"{len(body.filters)} filters; one delete takes at most {MAX_DELETE_FILTERS} (send several)",
                "$.filters",
            )
        filters = [filter_of(f) async for f in slicer.each(body.filters)]
    await writable(state)
    results = await on_writer(state, lambda: state.node.controller.delete_acls(filters))
    pieces: list[bytes] = []  # each filter's result encoded apart, in slices of the loop, then joined
    async with state.lane.slicer() as slicer:
        for r in results:
            acls = [acl_out(acl_id, acl) async for acl_id, acl in slicer.each(r.deleted, 256)]
            pieces.append(_ENCODE.encode(DeleteResultOut(r.error.code, r.error.name, acls, r.error.message)))
            await slicer.pause()
    frame = _ENCODE.encode(DeleteOut([], state.node.image.provenance.last_offset))  # {"results":[],"offset":N}
    head, tail = frame.split(b"[]", 1)
    return Response(200, head + b"[" + b",".join(pieces) + b"]" + tail)


async def writable(state: ServeState) -> None:
    """421 on a broker-role serve, 503 while loading, then `require_writable` once a controller election under way
    has settled (bounded by the election's session timeout)."""
    if state.config.controller:
        require_ready(state)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + state.config.log.election_session_timeout_ms / 1000
    while state.role.electing and loop.time() < deadline:
        await asyncio.sleep(0.02)
    require_writable(state)


def require_writable(state: ServeState) -> None:
    """421 NOT_CONTROLLER on a serve without the controller role, or a standby controller; 503 while a failed
    write is not recovered."""
    if not state.config.controller:
        raise NotController(
            "this serve has process.roles=broker and does not write the log; send ACL changes to the serve "
            "process with process.roles=controller (the one that owns the log), or use kraft-acl acls --server"
        )
    if not state.role.active:
        role = state.role.status()
        group = f" (Kafka consumer group {role.group} elects it)" if role is not None and role.group else ""
        raise NotController(
            f"this serve is a standby controller: another serve writes the metadata log now{group}; "
            "send ACL changes to the next serve"
        )
    health = state.write_health
    if not health.writable and state.write_recovery is not None:
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(health.since or 0))
        raise LogUnavailable(
            f"the metadata log cannot be written since {since}: {health.error}; nothing was changed (serve "
            "retries by itself and takes writes again once the cause is gone)"
        )


# The Kafka-backed log's errors by name (metadata_log.backends.kafka_topic, imported only with Kafka): fenced by a
# newer writer, or the writer role not (or no longer) held.
_NOT_WRITER = {"LogFencedError", "NotWriterError"}


async def on_writer(state: ServeState, work: Callable[[], T]) -> T:
    """Run a controller call on the writer thread; a log failure becomes 503 (or 421 when another writer took over)."""
    try:
        result = await asyncio.get_running_loop().run_in_executor(state.writer, work)
    except LogError as exc:
        if type(exc).__name__ in _NOT_WRITER:
            if type(exc).__name__ == "LogFencedError":
                state.role.on_fenced()
            raise NotController(f"another controller took over the metadata log; nothing was changed: {exc}") from exc
        state.write_health.failed(str(exc))
        if state.write_recovery is not None:
            state.write_recovery.start()
        raise LogUnavailable(f"the metadata log cannot be written now; nothing was changed: {exc}") from exc
    if state.write_recovery is None:
        state.write_health.recovered()  # a backend that recovers by itself (a Kafka topic) just wrote
    return result


def _create_out(r: CreateResult) -> CreateResultOut:
    return CreateResultOut(r.error.code, r.error.name, r.error.message, r.acl_id)


async def snapshot(state: ServeState, request: Request, caller: Caller) -> Response:
    """POST /v1/snapshots: write the current state as a snapshot now (on the writer thread, between two writes),
    as `kraft-acl snapshot create` does on a log with no serve; the operator's on-demand snapshot (ALTER on the
    cluster, checked at the head)."""
    node = state.node
    if not state.config.writes_snapshots or node.snapshots is None:
        raise NotController(
            "this serve does not write the log's snapshots (process.roles=broker on an embedded log: the controller "
            "serve owns the directory); ask the controller"
        )
    before = len(node.retention_deleted)

    def take() -> tuple[Path, int]:
        return node.take_snapshot(), len(node.image)

    try:
        path, acls = await asyncio.get_running_loop().run_in_executor(state.writer, take)
    except SnapshotError as exc:
        raise LogUnavailable(f"the snapshot could not be written; nothing was changed: {exc}") from exc
    made = parse_name(path)
    deleted = node.retention_deleted[before:]
    return Response(200, _ENCODE.encode(SnapshotOut(str(path), made.end_offset, made.epoch, acls, deleted)))


def count(state: ServeState, request: Request, caller: Caller) -> Response:
    """GET /v1/acls/count: KIP-801's AclCount."""
    index, offset = state.authorizer.state()
    return Response(200, _ENCODE.encode(CountOut(len(index), offset)))


def _controller_out(state: ServeState) -> ControllerOut | None:
    role = state.role.status()
    if role is None:
        return None
    return ControllerOut(role.active, role.epoch, role.group, role.since, role.elections)


def status(state: ServeState, request: Request, caller: Caller | None) -> Response:
    """GET /v1/status: ready (loaded and following its log), applied offset, high-water mark, lag, the tailer's
    last error, since when it fails, and a divergence; 503 unless ready (decisions go on from the last state)."""
    index, offset = state.authorizer.state()
    tail = state.tailer.status() if state.tailer is not None else None
    node = state.node
    ready = node.ready
    body = StatusOut(
        ready=ready,
        node_id=state.config.authorizer.node_id,
        roles=["broker", "controller"] if state.config.controller else ["broker"],
        listener=request.listener,
        last_applied_offset=offset,
        acl_count=len(index),
        high_watermark=tail.high_watermark if tail else None,
        lag=tail.lag if tail else None,
        last_error=tail.last_error if tail else state.start_error,
        snapshot=node.loaded_snapshot.name if node.loaded_snapshot is not None else None,
        following=tail.following if tail else False,
        diverged=tail.diverged if tail else None,
        failing_since=tail.since if tail else None,
        failures=tail.failures if tail else 0,
        writable=state.write_health.writable if state.config.controller else None,
        write_error=state.write_health.error,
        write_failing_since=state.write_health.since,
        controller=_controller_out(state),
    )
    return Response(200 if ready else 503, _ENCODE.encode(body))
