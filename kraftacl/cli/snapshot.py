"""`kraft-acl snapshot create|list|inspect|verify`: write, list and check ACL snapshot files.

Stateless; only `create` writes (as the log's one writer, so it waits up to --lock-timeout for another
writer's lock; or, with --server, through the running serve that writes the log). `list` and
`verify --log-dir` also say whether each snapshot belongs to the log, at
one of its batch boundaries (`snapshots.binding`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated

import msgspec
import typer
from rich.table import Table
from typer_injector import InjectingTyper

from kraftacl.api.client import ServerError
from kraftacl.api.wire import SnapshotOut
from kraftacl.authorizer.history.metadata_source import SourceFormat
from kraftacl.authorizer.state.image import AclsDelta, AclsImage, Provenance
from kraftacl.authorizer.state.node import AclNode
from kraftacl.cli.errors import fail
from kraftacl.cli.kafka_files import kafka_files
from kraftacl.cli.kafka_files_dump import inspect_kafka, verify_kafka
from kraftacl.cli.log_check import LockTimeout
from kraftacl.cli.log_state import LIBRARY_ERRORS, acl_json, acl_table, check_log_dir, library_errors, sorted_acls
from kraftacl.cli.options import Server, server_failed
from kraftacl.cli.output import Output, OutputOpt, print_table
from kraftacl.metadata_log.backends.file.check import scan_directory
from kraftacl.metadata_log.backends.file.dir_files import is_kafka_file
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.records import iso_time
from kraftacl.snapshots.binding import unusable
from kraftacl.snapshots.errors import CorruptSnapshotError, SnapshotError, SnapshotNameError
from kraftacl.snapshots.format import SnapshotReader
from kraftacl.snapshots.history import USABLE, ScanView, SnapshotRow, check_history
from kraftacl.snapshots.naming import SUFFIX, SnapshotId, parse_name

KRAFT_ACL_SNAPSHOT = SourceFormat.KRAFT_ACL_SNAPSHOT.value
snapshot_app = InjectingTyper(  # `create --server` takes the shared connection options (cli.options.Server)
    help="ACL snapshots: <20-digit end offset>-<10-digit epoch>.checkpoint files holding every ACL "
    "below the (exclusive) end offset.",
    no_args_is_help=True,
)
LogDir = Annotated[
    Path, typer.Option("--log-dir", metavar="DIR", help="the metadata log directory (segments, snapshots)")
]
SnapshotFile = Annotated[Path, typer.Argument(metavar="FILE", help="a .checkpoint snapshot file")]


class UnusableSnapshotError(SnapshotError):
    """A snapshot whose framing checks out but that cannot be used: its name disagrees with its header (a
    renamed or misplaced file) or its header's writer schema does not parse."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"unusable snapshot {path}: {reason}")
        self.reason = reason


def load_image(path: Path) -> tuple[SnapshotReader, AclsImage]:
    """Validate a snapshot completely (framing, records, image invariants, name vs header) and load it."""
    reader = SnapshotReader(path)
    h = reader.header
    try:
        named = parse_name(path)
    except SnapshotNameError:
        named = None  # a copy under another name is fine to read; only a wrong snapshot name is damage
    if named is not None and named != SnapshotId(h.end_offset, h.epoch):
        raise UnusableSnapshotError(
            path,
            f"the file name says end offset {named.end_offset}, epoch {named.epoch}, "
            f"but the header says end offset {h.end_offset}, epoch {h.epoch}",
        )
    delta = AclsDelta(AclsImage.empty())
    try:
        for number, record in enumerate(reader.records()):
            delta.replay(record, offset=number)  # ImageError names the record number
    except ValueError as exc:  # BatchSchema.from_json: the header's writer schema (CRC-checked) is invalid
        raise UnusableSnapshotError(path, str(exc)) from exc
    return reader, delta.apply(Provenance(h.end_offset - 1, h.epoch, h.timestamp_ms))


@snapshot_app.command("create")
def create_command(
    log_dir: Annotated[
        Path | None,
        typer.Option("--log-dir", metavar="DIR", help="the metadata log directory (no serve may be writing it)"),
    ] = None,
    retain: Annotated[
        int, typer.Option("--retain", metavar="N", help="keep the newest N usable snapshots (0: all)")
    ] = 3,
    output: OutputOpt = Output.table,
    lock_timeout: LockTimeout = 5.0,
    server: Server = None,
) -> None:
    """Snapshot the ACL state at the high-water mark into the log directory; prints the new file's path.

    A log a running serve writes is snapshotted through that serve (`--server`: it writes the snapshot between
    two of its writes, into its snapshot directory, with its own retention; ALTER on the cluster), since the
    directory has one writer at a time.

    \b
    Example:
      kraft-acl snapshot create --log-dir data/meta --retain 3
      kraft-acl snapshot create --server http://127.0.0.1:9191 --token-file admin.token
    """
    if (log_dir is None) == (server is None):
        fail("give one of --log-dir DIR (a log no serve is writing) and --server URL (the serve writing it)")
    if server is not None:
        client = server.connect()
        try:
            made = client.create_snapshot()
        except ServerError as exc:
            server_failed(exc)
        finally:
            client.close()
        _report_created(made, output, f"retention: serve's metadata.log.snapshot.retain at {server.url}")
        return
    assert log_dir is not None
    check_log_dir(log_dir)
    if retain < 0:
        fail(f"--retain {retain} is negative")
    before = {p.name for p in log_dir.glob(f"*{SUFFIX}")}
    with library_errors():
        backend = FileLog(log_dir, lock_timeout_s=lock_timeout)  # the writer lock: no other writer appends meanwhile
    node = AclNode(backend, snapshot_dir=log_dir, retain_snapshots=retain)
    try:
        if backend.recovery is not None:
            print(f"kraft-acl: warning: {backend.recovery}", file=sys.stderr)
        with library_errors():
            node.start()
            image = node.image
            if image.provenance.next_offset == 0:
                fail(f"the log in {log_dir} is empty: there is nothing to snapshot")
            path = node.take_snapshot()
    finally:
        node.close()
    deleted = sorted(before - {p.name for p in log_dir.glob(f"*{SUFFIX}")})
    snap = parse_name(path)
    made = SnapshotOut(str(path), snap.end_offset, snap.epoch, len(image), deleted)
    _report_created(made, output, f"--retain {retain}")


def _report_created(made: SnapshotOut, output: Output, retention: str) -> None:
    """What `snapshot create` prints: the path (or the whole report as JSON), then what retention deleted."""
    if output.is_json:
        typer.echo(json.dumps(msgspec.structs.asdict(made)))
        return
    typer.echo(made.path)
    print(f"end offset {made.end_offset}, epoch {made.epoch}, {made.acls} ACL(s)", file=sys.stderr)
    for name in made.deleted:
        print(f"deleted by retention ({retention}): {name}", file=sys.stderr)


@dataclass(frozen=True, slots=True)
class SnapshotStatus:
    """One row of `snapshot list`: the file's own validity, then whether this log may use it."""

    file: str
    end_offset: int | None
    epoch: int | None
    size: int
    valid: bool
    records: int | None
    error: str | None
    usable: bool = False
    unusable: str | None = None  # "<problem>: <reason>" when valid but not usable on this log


KAFKA_SNAPSHOT = "not kraft-acl's: Apache Kafka's own KRaft snapshot (`snapshot inspect|verify` read it)"


def _status(path: Path, bound: SnapshotRow | None) -> SnapshotStatus:
    """Check one file completely; damage becomes the row's error, never an exception."""
    size = path.stat().st_size
    try:
        named = parse_name(path)
    except SnapshotNameError:
        return SnapshotStatus(path.name, None, None, size, False, None, "not a snapshot file name")
    row = SnapshotStatus(path.name, named.end_offset, named.epoch, size, False, None, None)
    if is_kafka_file(path):
        return replace(row, error=KAFKA_SNAPSHOT)
    try:
        _, image = load_image(path)
    except CorruptSnapshotError as exc:
        return replace(row, error=f"byte {exc.position}: {exc.reason}")
    except UnusableSnapshotError as exc:
        return replace(row, error=exc.reason)
    except LIBRARY_ERRORS as exc:  # ImageError (a duplicate id), OSError: each makes it unusable
        return replace(row, error=str(exc))
    row = replace(row, valid=True, records=len(image))
    if bound is None or bound.status == USABLE:
        return replace(row, usable=bound is not None)
    return replace(row, unusable=f"{bound.status}: {bound.reason}")


@snapshot_app.command("list")
def list_command(log_dir: LogDir, output: OutputOpt = Output.table) -> None:
    """Every snapshot file in the log directory, oldest first, each checked: valid and usable on this log, or
    what is damaged, or why this log cannot use it (another log's, inside a batch, wrong epoch, beyond the end).

    \b
    Example:
      kraft-acl snapshot list --log-dir data/meta
    """
    check_log_dir(log_dir)
    with library_errors():
        bound = {row.file: row for row in check_history(log_dir).snapshots}
        paths = [p for p in log_dir.iterdir() if p.name.endswith(SUFFIX) and p.is_file()]
        rows = sorted((_status(p, bound.get(p.name)) for p in paths), key=_order)
    if output.is_json:
        typer.echo(json.dumps([asdict(r) for r in rows]))
        return
    if not rows:
        typer.echo(f"no snapshots in {log_dir}")
        return
    table = Table("file", "end offset", "epoch", "size", "records", "status")
    for r in rows:
        table.add_row(r.file, _text(r.end_offset), _text(r.epoch), str(r.size), _text(r.records), _row_status(r))
    print_table(table)


def _row_status(r: SnapshotStatus) -> str:
    if r.usable:
        return "valid"
    if r.valid:
        return f"UNUSABLE ({r.unusable})"
    return f"DAMAGED: {r.error}" if r.end_offset is not None and r.error != KAFKA_SNAPSHOT else str(r.error)


def _order(status: SnapshotStatus) -> tuple[int, int, str]:
    """Oldest first; files that are not snapshots first of all."""
    if status.end_offset is None or status.epoch is None:
        return (-1, -1, status.file)
    return (status.end_offset, status.epoch, status.file)


def _text(value: int | None) -> str:
    return "-" if value is None else str(value)


def _open(path: Path) -> tuple[SnapshotReader, AclsImage]:
    if not path.is_file():
        fail(f"{path}: no such snapshot file")
    with library_errors():
        return load_image(path)


@snapshot_app.command("inspect")
def inspect_command(file: SnapshotFile, output: OutputOpt = Output.table) -> None:
    """A snapshot's header fields, record count and ACLs (kraft-acl's, or an Apache Kafka `.checkpoint`).

    \b
    Example:
      kraft-acl snapshot inspect data/meta/00000000000000000120-0000000003.checkpoint -o json
    """
    kafka = kafka_files(file) if file.is_file() else None
    if kafka is not None:
        inspect_kafka(kafka, output)
        return
    reader, image = _open(file)
    h = reader.header
    if output.is_json:
        typer.echo(
            json.dumps(
                {
                    "file": str(file),
                    "end_offset": h.end_offset,
                    "epoch": h.epoch,
                    "timestamp_ms": h.timestamp_ms,
                    "records": len(image),
                    "acls": [acl_json(i, a) for i, a in sorted_acls(image.acls)],
                }
            )
        )
        return
    typer.echo(f"File: {file}")
    typer.echo(f"End offset: {h.end_offset} (holds every ACL below offset {h.end_offset})")
    typer.echo(f"Epoch: {h.epoch}")
    typer.echo(f"Timestamp: {h.timestamp_ms} ({iso_time(h.timestamp_ms)})")
    typer.echo(f"Records: {len(image)}")
    if len(image):
        print_table(acl_table(image.acls))


@snapshot_app.command("verify")
def verify_command(
    file: SnapshotFile,
    log_dir: Annotated[
        Path | None,
        typer.Option("--log-dir", metavar="DIR", help="also check that this log may use it (its log, a batch end)"),
    ] = None,
    output: OutputOpt = Output.table,
) -> None:
    """Check every byte of a snapshot: `OK: N records` (exit 0), or one line naming the damage (exit 2); with
    --log-dir, also that the snapshot belongs to that log at one of its batch boundaries with the right epoch.
    With -o json, the result as one object: {"ok": true, "file", "format", "records", "end_offset", "epoch", ...}
    (the damage stays one error line on stderr).

    An Apache Kafka `.checkpoint` is checked batch by batch (CRC-32C, SnapshotHeader, SnapshotFooter).

    \b
    Example:
      kraft-acl snapshot verify data/meta/00000000000000000120-0000000003.checkpoint --log-dir data/meta
      kraft-acl snapshot verify data/meta/00000000000000000120-0000000003.checkpoint -o json
    """
    kafka = kafka_files(file) if file.is_file() else None
    if kafka is not None:
        if log_dir is not None:
            fail(f"{file} is Apache Kafka's own snapshot; --log-dir checks a kraft-acl snapshot against its log")
        verify_kafka(kafka, output)
        return
    reader, image = _open(file)
    h = reader.header
    if log_dir is not None:
        check_log_dir(log_dir)
        with library_errors():
            problem = unusable(h, ScanView(scan_directory(log_dir)))
        if problem is not None:
            fail(f"snapshot {file} cannot be used on the log in {log_dir} ({problem.problem}): {problem.reason}")
    if output.is_json:
        result: dict[str, object] = {"ok": True, "file": str(file), "format": KRAFT_ACL_SNAPSHOT, "records": len(image)}
        result |= {"end_offset": h.end_offset, "epoch": h.epoch, "timestamp_ms": h.timestamp_ms}
        typer.echo(json.dumps(result | {"log_dir": None if log_dir is None else str(log_dir)}))
        return
    where = "" if log_dir is None else f", usable on the log in {log_dir}"
    typer.echo(f"OK: {len(image)} records (end offset {h.end_offset}, epoch {h.epoch}){where}")
