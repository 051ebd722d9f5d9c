"""Shared plumbing of the log commands: open a log directory read-only, replay its ACL state at an offset,
render ACLs, and turn library errors into one CLI line.

Stateless helpers; each node they open belongs to the one command invocation that opened it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.table import Table

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.inputs.whatif import AclEntry, acl_to_json
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.image import Provenance
from kraftacl.authorizer.state.node import AclNode
from kraftacl.cli.errors import EXIT_FAILED, EXIT_INPUT, fail
from kraftacl.cli.output import Output
from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.errors import LogError, LogLockedError
from kraftacl.snapshots.errors import SnapshotError

LIBRARY_ERRORS = (LogError, SnapshotError, AuthorizerError, OSError)
STATE_AT_HELP = (
    "the state at offset N: every record with an offset below N applied (N is exclusive, like a "
    "snapshot's end offset; it must fall between two batches); default: the high-water mark"
)


TableOutput = Output  # one output enum for every command (kraftacl/cli/output.py); both old names stay importable


@contextmanager
def library_errors(code: int = EXIT_INPUT) -> Iterator[None]:
    """Turn a library error raised inside the block into `kraft-acl: error: <one line>` and an exit code.

    A locked log directory exits 1 (the command is fine, the moment is not); everything else `code`.
    """
    try:
        yield
    except LogLockedError as exc:
        fail(str(exc), EXIT_FAILED)
    except LIBRARY_ERRORS as exc:
        fail(str(exc), code)


def check_log_dir(log_dir: Path) -> None:
    """Fail with one line unless `log_dir` is an existing directory (a writer would create it silently)."""
    if not log_dir.exists():
        fail(f"log directory {log_dir} does not exist")
    if not log_dir.is_dir():
        fail(f"log directory {log_dir} is not a directory")


def check_offset(option: str, offset: int, high_watermark: int) -> None:
    """Fail unless 0 <= offset <= high-water mark (the state at the HWM is the newest there is)."""
    if offset < 0:
        fail(f"{option} {offset} is negative")
    if offset > high_watermark:
        fail(
            f"{option} {offset} is beyond the high-water mark {high_watermark} "
            f"(the log holds offsets below {high_watermark})"
        )


def check_batch_boundary(option: str, offset: int, backend: LogBackend) -> None:
    """Fail unless `offset` falls between two batches (a batch applies whole: no state exists inside one)."""
    if offset <= backend.log_start_offset() or offset >= backend.high_watermark():
        return  # the log's ends (below its start, the snapshot that replaced those records sets the state)
    holding = next(iter(backend.read(offset - 1)))  # the batch that holds offset - 1
    if holding.next_offset != offset:
        fail(
            f"{option} {offset} is inside the batch at offsets {holding.base_offset}..{holding.last_offset}: "
            f"its records apply together, so no state exists between them; use {holding.base_offset} "
            f"or {holding.next_offset}"
        )


def open_read_only(log_dir: Path) -> FileLog:
    """A read-only FileLog (no lock, so a writer may run); a missing or damaged log fails in one line."""
    check_log_dir(log_dir)
    with library_errors():
        return FileLog(log_dir, read_only=True)


@contextmanager
def replayed(
    log_dir: Path, to_offset: int | None, option: str = "--to-offset", config: AuthorizerConfig | None = None
) -> Iterator[AclNode]:
    """A started, read-only AclNode holding the ACL state at `to_offset` (default: the high-water mark).

    The newest valid snapshot at or below the offset is loaded, then the log tail is replayed.
    """
    backend = open_read_only(log_dir)
    node = AclNode(backend, snapshot_dir=log_dir, config=config)
    try:
        with library_errors():
            hwm = backend.high_watermark()
            if to_offset is not None:
                check_offset(option, to_offset, hwm)
                check_batch_boundary(option, to_offset, backend)
            target = hwm if to_offset is None else to_offset
            node.start(to_offset=target)
        reached = node.image.provenance.next_offset
        if reached != target:  # a snapshot whose header disagrees with its file name, or a short log
            fail(
                f"replay reached offset {reached}, not {target} (snapshot used: {node.loaded_snapshot}); "
                "check the snapshots with `kraft-acl snapshot list`"
            )
        yield node
    finally:
        node.close()


def provenance_json(provenance: Provenance) -> dict[str, int]:
    """The provenance as a JSON object."""
    return {
        "last_offset": provenance.last_offset,
        "epoch": provenance.epoch,
        "timestamp_ms": provenance.timestamp_ms,
    }


def sorted_acls(acls: Mapping[str, StandardAcl]) -> list[tuple[str, StandardAcl]]:
    """(id, ACL) pairs grouped by resource (type, name, pattern), then operation, principal, host, id."""
    return sorted(acls.items(), key=lambda item: (item[1].index_key(), item[0]))


def acl_json(acl_id: str, acl: StandardAcl) -> dict[str, Any]:
    """One ACL as JSON: its id plus the acls.json fields."""
    return {"id": acl_id, **acl_to_json(acl)}


ACL_COLUMNS = ("id", *AclEntry.model_fields)  # the acls.json fields, after the id
# Their headers, short enough for a narrow terminal: each names its acls.json field without "_type"/"resource_".
ACL_HEADERS = ("id", "resource", "name", "pattern", "principal", "host", "operation", "permission")


def acl_table(acls: Mapping[str, StandardAcl], title: str | None = None) -> Table:
    """A rich table of ACLs with their ids."""
    table = Table(*ACL_HEADERS, title=title, title_justify="left")
    for acl_id, acl in sorted_acls(acls):
        fields = acl_json(acl_id, acl)
        table.add_row(*(fields[c] for c in ACL_COLUMNS))
    return table
