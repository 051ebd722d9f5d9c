"""`log dump`, `snapshot inspect` and `snapshot verify` on Apache Kafka's own KRaft files, in the form of
kafka-dump-log's `--cluster-metadata-decoder` (Kafka's offsets, control batches shown, ACL records in full,
every other record by its type name and size).

Stateless; files are opened read-only (a running broker is fine) and closed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import typer

from kraftacl.authorizer.history.metadata_source import SourceFormat
from kraftacl.authorizer.state.image import image_from_snapshot
from kraftacl.cli.errors import fail
from kraftacl.cli.log_state import acl_json, acl_table, library_errors, sorted_acls
from kraftacl.cli.output import Output, print_table
from kraftacl.cli.record_json import record_payload
from kraftacl.metadata_log.kafka_files.batches import TornTail
from kraftacl.metadata_log.kafka_files.files import KafkaMetadataFiles
from kraftacl.metadata_log.kafka_files.messages import ControlRecord, OtherRecord, TransactionMarker
from kraftacl.metadata_log.kafka_files.reader import DecodedBatch, Entry, KafkaSnapshot, log_batches, read_snapshot
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord, iso_time

KAFKA_LOG, KAFKA_SNAPSHOT = SourceFormat.KAFKA_LOG.value, SourceFormat.KAFKA_SNAPSHOT.value


def entry_json(entry: Entry) -> dict[str, Any]:
    """An entry as kafka-dump-log shows its payload: `{"type", "version", "data"}` (control: its fields)."""
    if isinstance(entry, AccessControlEntryRecord | RemoveAccessControlEntryRecord):
        return record_payload(entry)
    if isinstance(entry, TransactionMarker):
        key = "name" if entry.kind == "BEGIN" else "reason"
        return {"type": entry.name, "version": 0, "data": {key: entry.text} if entry.kind != "END" else {}}
    if isinstance(entry, OtherRecord):
        return {"type": entry.name, "version": entry.version, "size": entry.size}
    return {"control": entry.name, "data": dict(entry.fields)}


def _line(offset: int, entry: Entry) -> str:
    body = json.dumps(entry_json(entry), separators=(",", ":"), ensure_ascii=False)
    if isinstance(entry, ControlRecord):
        return f"| offset: {offset} {entry.name} {json.dumps(dict(entry.fields), separators=(',', ':'))}"
    if isinstance(entry, OtherRecord):
        return f"| offset: {offset} payload: {body} (not decoded)"
    return f"| offset: {offset} payload: {body}"


def _batch_text(decoded: DecodedBatch) -> str:
    b = decoded.batch
    head = (
        f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {len(b.records)} epoch: {b.epoch} "
        f"isTransactional: {str(b.is_transactional).lower()} isControl: {str(b.is_control).lower()} "
        f"position: {b.position} CreateTime: {b.max_timestamp} size: {b.size} crc: {b.crc}"
    )
    return "\n".join([head, *(_line(o, e) for o, e in decoded.entries)])


def _batch_json(decoded: DecodedBatch) -> str:
    b = decoded.batch
    return json.dumps(
        {
            "baseOffset": b.base_offset,
            "lastOffset": b.last_offset,
            "count": len(b.records),
            "epoch": b.epoch,
            "isControl": b.is_control,
            "isTransactional": b.is_transactional,
            "position": b.position,
            "createTime": b.max_timestamp,
            "size": b.size,
            "crc": b.crc,
            "records": [{"offset": o, "payload": entry_json(e)} for o, e in decoded.entries],
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )


def dump_kafka(files: KafkaMetadataFiles, from_offset: int, output: Output) -> None:
    """Print a Kafka segment directory (from `from_offset`) or one `.checkpoint`, batch by batch."""
    render: Callable[[DecodedBatch], str] = _batch_json if output.is_json else _batch_text
    if not files.segments and files.snapshots:
        print(f"kraft-acl: reading {KAFKA_SNAPSHOT}: {files.named}", file=sys.stderr)
        snap = _snapshot(files)
        for decoded in snap.batches:
            typer.echo(render(decoded))
        return
    print(f"kraft-acl: reading {KAFKA_LOG}: {files.directory}", file=sys.stderr)
    torn: list[TornTail] = []
    with library_errors():  # damage: the batches before it were printed; one line names file and byte
        for decoded in log_batches(files, from_offset, torn):
            typer.echo(render(decoded))
    for t in torn:
        print(f"kraft-acl: note: {t.path}: {t.size} bytes at byte {t.position} are not a whole batch", file=sys.stderr)


def _snapshot(files: KafkaMetadataFiles) -> KafkaSnapshot:
    if not files.snapshots:
        fail(f"{files.named}: a Kafka snapshot must be named <20-digit end offset>-<10-digit epoch>.checkpoint")
    with library_errors():
        return read_snapshot(files.snapshots[0])


def inspect_kafka(files: KafkaMetadataFiles, output: Output) -> None:
    """A Kafka `.checkpoint`'s id, header timestamp, record counts and ACLs."""
    snap = _snapshot(files)
    with library_errors():
        acls = image_from_snapshot(snap.acl_records())
    f = snap.file
    if output.is_json:
        typer.echo(
            json.dumps(
                {
                    "file": str(f.path),
                    "format": KAFKA_SNAPSHOT,
                    "end_offset": f.end_offset,
                    "epoch": f.epoch,
                    "timestamp_ms": snap.last_contained_timestamp,
                    "metadata_records": snap.record_count,
                    "records": len(acls),
                    "acls": [acl_json(i, a) for i, a in sorted_acls(acls)],
                }
            )
        )
        return
    typer.echo(f"File: {f.path}")
    typer.echo(f"Format: {KAFKA_SNAPSHOT}")
    typer.echo(f"End offset: {f.end_offset} (holds every record below offset {f.end_offset})")
    typer.echo(f"Epoch: {f.epoch}")
    ts = snap.last_contained_timestamp
    typer.echo(f"Timestamp: {ts} ({iso_time(ts)}, the header's LastContainedLogTimestamp)")
    typer.echo(f"Metadata records: {snap.record_count}")
    typer.echo(f"Records: {len(acls)} ACL(s)")
    if len(acls):
        print_table(acl_table(acls))


def verify_kafka(files: KafkaMetadataFiles, output: Output = Output.table) -> None:
    """Check every batch CRC, the header and footer and every record of a Kafka `.checkpoint`."""
    snap = _snapshot(files)
    with library_errors():
        acls = image_from_snapshot(snap.acl_records())
    f = snap.file
    if output.is_json:
        result: dict[str, object] = {"ok": True, "file": str(f.path), "format": KAFKA_SNAPSHOT, "records": len(acls)}
        result |= {"end_offset": f.end_offset, "epoch": f.epoch, "metadata_records": snap.record_count}
        typer.echo(json.dumps(result | {"batches": len(snap.batches)}))
        return
    typer.echo(
        f"OK: {len(acls)} records (end offset {f.end_offset}, epoch {f.epoch}; {KAFKA_SNAPSHOT}, "
        f"{snap.record_count} metadata records, {len(snap.batches)} batches)"
    )
