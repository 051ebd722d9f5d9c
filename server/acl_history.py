"""POST /v1/acls/history: when each ACL id was added and removed, read from serve's metadata log (what
`kraft-acl shell --server` shows for `history`); handed to the reader process when there is one (`server.reader`),
which heavy.reads.process=auto starts for it once the log holds AUTO_MIN_ACLS offsets, however few ACLs are loaded.

Each call opens its own read-only reader of the log (the node's reader belongs to its tailer) and scans the log
once on serve's history thread: one call at a time, paced and niced as serve's other bulk threads
(`metadata_log.pace`), so decisions keep being answered meanwhile. On the event loop's default executor (as many
scans at once as it has threads, none paced), a caller allowed only DESCRIBE on the cluster, asking histories of a
78k-record log one after another over 8 connections, took a broker's one-action p50 from 0.2 to 5-6.5 ms and its
p99 from 3-5 to 33-117 ms on the 2-vCPU machine (one connection: p99 10-11 ms).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import msgspec

from kraftacl.api.wire import AclEventOut, HistoryIn, HistoryOut
from kraftacl.authorizer.history.acl_history import AclHistory, acl_history
from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.pace import pace_thread
from kraftacl.server.auth import Caller
from kraftacl.server.context import ServeState
from kraftacl.server.convert import acl_out
from kraftacl.server.errors import LogUnavailable
from kraftacl.server.http_wire import Request, Response, StreamedResponse
from kraftacl.server.json_body import decode
from kraftacl.server.log_backend import open_backend

_HISTORY = msgspec.json.Decoder(HistoryIn)
_ENCODE = msgspec.json.Encoder()
_SCANS = ThreadPoolExecutor(1, thread_name_prefix="kraft-acl-history", initializer=pace_thread)


async def history(state: ServeState, request: Request, caller: Caller) -> Response | StreamedResponse:
    """Every record naming the asked ids, per id in offset order (from the reader process when there is one)."""
    body = decode(_HISTORY, request.body)
    ids = list(dict.fromkeys(body.ids))
    if state.reader is not None:
        index, offset = state.authorizer.state()
        # the scan reads the whole log: its length, not the ACL count, says whether it belongs in the reader
        if (handed := await state.reader.answer(request, max(len(index), offset + 1), offset)) is not None:
            return handed
    try:
        found = await asyncio.get_running_loop().run_in_executor(_SCANS, lambda: _scan(state, ids))
    except LogError as exc:
        raise LogUnavailable(f"the metadata log cannot be read now: {exc}") from exc
    events = [
        AclEventOut(i, e.offset, e.epoch, e.timestamp_ms, None if e.acl is None else acl_out(i, e.acl))
        for i in ids
        for e in found.events[i]
    ]
    return Response(200, _ENCODE.encode(HistoryOut(found.log_start, found.end, events)))


def _scan(state: ServeState, ids: list[str]) -> AclHistory:
    backend = open_backend(state.config, write=False)
    try:
        return acl_history(backend, ids)
    finally:
        backend.close()
