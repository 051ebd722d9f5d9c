"""POST /v1/acls/import: many ACLs written as ONE atomic batch by this serve's controller (what
`kraft-acl import --server` calls), with duplicates skipped and counted as `kraft-acl import` counts them.

The caller needs ALTER on the cluster (or is a super user or broker), like CreateAcls, checked at the request's
head before any body byte is read; a broker-role serve answers 421. The body is decoded and its ACLs built in
slices of the event loop (`server.json_body`, `server.slices`), then imported on the writer thread, so
decisions keep being answered while a million ACLs are parsed and written. Its size limit is
`import.max.bytes` (not `request.max.bytes`). Stateless apart from the serve state it is given.
"""

from __future__ import annotations

import logging
import sys

import msgspec

from kraftacl.api.convert import acl_in
from kraftacl.api.import_wire import ImportIn, ImportOut
from kraftacl.api.wire import AclIn
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.controller import ImportResult, InvalidImportError
from kraftacl.authorizer.state.gc_pause import paused_gc
from kraftacl.authorizer.state.graveyard import bury
from kraftacl.server.admin import on_writer, writable
from kraftacl.server.auth import Caller
from kraftacl.server.context import ServeState
from kraftacl.server.convert import OPERATIONS, PATTERNS, PERMISSIONS, RESOURCE_TYPES, check_bytes, enum_of
from kraftacl.server.errors import BadRequest
from kraftacl.server.http_wire import Request, Response
from kraftacl.server.json_body import decode_sliced

log = logging.getLogger(__name__)
_IMPORT = msgspec.json.Decoder(ImportIn)
_ACLS = msgspec.json.Decoder(list[AclIn])
_ENCODE = msgspec.json.Encoder()
# Which field a message of Kafka's validateNewAcl is about (authorizer.state.controller.validate_new_acl's words).
_FIELD_OF_MESSAGE = (
    ("resourceType", "resource_type"),
    ("patternType", "pattern_type"),
    ("operation", "operation"),
    ("permissionType", "permission_type"),
    ("principal", "principal"),
)


def acl_of(a: AclIn, field: str) -> StandardAcl:
    """One ACL to import; every enum must name a member (a typo fails the import and names its field)."""
    return StandardAcl(
        enum_of(RESOURCE_TYPES, a.resource_type, f"{field}.resource_type"),
        check_bytes(a.resource_name, f"{field}.resource_name"),
        enum_of(PATTERNS, a.pattern_type, f"{field}.pattern_type", upper=False),
        sys.intern(check_bytes(a.principal, f"{field}.principal")),  # shared by many ACLs, kept by the node
        sys.intern(check_bytes(a.host, f"{field}.host")),
        enum_of(OPERATIONS, a.operation, f"{field}.operation"),
        enum_of(PERMISSIONS, a.permission_type, f"{field}.permission_type"),
    )


def _refused(exc: InvalidImportError) -> BadRequest:
    """The first ACL the controller refuses, as a 400 naming its element and field (and how many are refused)."""
    position, _, error = exc.invalid[0]
    message = error.message or error.name
    field = next((f for word, f in _FIELD_OF_MESSAGE if word in message), "resource_name")
    count = len(exc.invalid)
    return BadRequest(
        f"{message} ({count} of the ACLs are invalid; nothing was written)", f"$.acls[{position}].{field}"
    )


def _run(state: ServeState, acls: list[StandardAcl], dry_run: bool) -> ImportOut:
    """Validate and import (on the writer thread)."""
    state.node.defer_snapshots = True  # the policy's snapshot of the new state is taken after the answer
    try:
        with paused_gc(freeze=True):  # the new index stays: the generation-0 pass after would walk it (12 ms)
            result: ImportResult = state.node.controller.import_acls(acls, dry_run=dry_run)
    except InvalidImportError as exc:
        raise _refused(exc) from exc
    finally:
        state.node.defer_snapshots = False
    would_add = [acl_in(a) for _, a in result.added] if dry_run else None
    bury(result.added)  # freed in steps once the result goes (200k pairs at once: 13 ms)
    return ImportOut(
        read=len(acls),
        added=len(result.added),
        present=result.present,
        repeated=result.repeated,
        offset=state.node.image.provenance.last_offset,
        base_offset=result.base_offset,
        would_add=would_add,
    )


async def import_acls(state: ServeState, request: Request, caller: Caller) -> Response:
    """POST /v1/acls/import (who may was checked at the head, before the body was read)."""
    async with state.lane.slicer() as slicer:
        with paused_gc(freeze=True):  # the ACLs built here stay (in the index): no collection walks them
            body = await decode_sliced(request.body, _IMPORT, "acls", _ACLS, slicer)
            acls = [acl_of(a, f"$.acls[{i}]") async for i, a in slicer.each(enumerate(body.acls), 256)]
    bury(body)  # the decoded entries go in steps once this call's frame lets go of them, not in one free
    await writable(state)
    out = await on_writer(state, lambda: _run(state, acls, body.dry_run))
    state.writer.submit(_deferred_snapshot, state)  # after the answer, before the next write
    return Response(200, _ENCODE.encode(out))


def _deferred_snapshot(state: ServeState) -> None:
    """The snapshot the policy asked for during an import (on the writer thread); a failure is logged,
    the log already holds the import and the next policy snapshot tries again."""
    try:
        state.node.take_deferred_snapshot()
    except Exception:
        log.exception("the snapshot after an import failed")
