"""Apache Kafka's own KRaft files as rows for Spark: each task decodes a byte span of a `.log` segment (or a
whole `.checkpoint`) with the library's readers (`metadata_log.kafka_files`) into tagged rows.

Pure functions of their inputs; each Spark task calls them on its own spans. A span's damage does not fail
the task: it becomes one ERROR row carrying the library's message, which the driver raises as one line.

Row kinds (`kind` column, the other columns as in pipeline.sources.events):
    ACL    an ACL record: add (AccessControlEntryRecord, its fields) or remove (RemoveAccessControlEntryRecord)
    BATCH  one per batch (data or control): offset is the batch's last offset, base its first; epoch, ts
    BEGIN / END / ABORT   a metadata transaction marker at `offset`
    ERROR  the span could not be read; `id` holds the message
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.kafka_files.batches import KafkaBatch, read_batches
from kraftacl.metadata_log.kafka_files.files import SnapshotFile
from kraftacl.metadata_log.kafka_files.messages import TransactionMarker
from kraftacl.metadata_log.kafka_files.reader import decode_batch, read_snapshot
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from kraftacl.pipeline.sources.events import ACL_FIELDS, EVENT_DDL, EVENT_SCHEMA, ROWS_PER_BATCH

ACL, BATCH, BEGIN, END, ABORT, ERROR = range(6)
MARKERS = {"BEGIN": BEGIN, "END": END, "ABORT": ABORT}
KAFKA_DDL = f"{EVENT_DDL}, kind byte"
KAFKA_SCHEMA = EVENT_SCHEMA.append(pa.field("kind", pa.int8()))
SPAN_DDL = "path string, start long, end long"
SNAPSHOT_DDL = "path string, end_offset long, epoch int"
_NO_ACL: tuple[None, ...] = (None,) * 7


class _Rows:
    """Rows being gathered; `take` hands them over as one Arrow record batch of KAFKA_SCHEMA."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def add(
        self,
        offset: int,
        batch: KafkaBatch | None,
        kind: int,
        add: bool | None,
        id_: str | None,
        acl: tuple[Any, ...] = _NO_ACL,
        where: tuple[int, int, int] | None = None,
    ) -> None:
        base, epoch, ts = where or (batch.base_offset, batch.epoch, batch.max_timestamp)  # type: ignore[union-attr]
        self.rows.append((offset, base, epoch, ts, add, id_, *acl, kind))

    def take(self) -> pa.RecordBatch:
        columns: list[Any] = list(zip(*self.rows, strict=True)) if self.rows else [[] for _ in KAFKA_SCHEMA]
        self.rows = []
        return pa.RecordBatch.from_arrays(
            [pa.array(col, type=f.type) for col, f in zip(columns, KAFKA_SCHEMA, strict=True)], schema=KAFKA_SCHEMA
        )


def _fields(record: AccessControlEntryRecord) -> tuple[Any, ...]:
    return tuple(getattr(record, name) for name in ACL_FIELDS)


def _batch_rows(batch: KafkaBatch, rows: _Rows) -> None:
    """The batch's own row, then a row per ACL record or transaction marker (control batches hold neither)."""
    rows.add(batch.last_offset, batch, BATCH, None, None)
    if batch.is_control:
        return
    for offset, entry in decode_batch(batch).entries:
        if type(entry) is AccessControlEntryRecord:
            rows.add(offset, batch, ACL, True, entry.id, _fields(entry))
        elif type(entry) is RemoveAccessControlEntryRecord:
            rows.add(offset, batch, ACL, False, entry.id)
        elif isinstance(entry, TransactionMarker):
            rows.add(offset, batch, MARKERS[entry.kind], None, entry.name)


def _error(rows: _Rows, message: str) -> pa.RecordBatch:
    rows.rows = [(-1, -1, -1, -1, None, message, *_NO_ACL, ERROR)]
    return rows.take()


def span_rows(spans: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow over SPAN_DDL rows: the batches in bytes [start, end) of a segment, CRC-checked and decoded."""
    for arrow in spans:
        for span in arrow.to_pylist():
            yield from _span(Path(span["path"]), span["start"], span["end"])


def _span(path: Path, start: int, end: int) -> Iterator[pa.RecordBatch]:
    """The driver planned whole batches (pipeline.sources.kafka_files.plan_spans): a torn tail here is damage."""
    rows = _Rows()
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            view = memoryview(data)[start:end]
            try:
                for batch in read_batches(view, path):
                    _batch_rows(batch, rows)
                    if len(rows.rows) >= ROWS_PER_BATCH:
                        yield rows.take()
            finally:
                view.release()
    except LogError as exc:
        yield _error(rows, _shifted(exc, start))
        return
    except OSError as exc:
        yield _error(rows, f"{path}: cannot read: {exc}")
        return
    if rows.rows:
        yield rows.take()


def _shifted(exc: LogError, start: int) -> str:
    """The library's message, its byte position made relative to the file rather than to the span."""
    position, reason, path = getattr(exc, "position", None), getattr(exc, "reason", None), getattr(exc, "path", None)
    if position is None or reason is None:
        return str(exc)
    return f"corrupt log file {path} at byte position {position + start}: {reason}"


def snapshot_rows(files: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow over SNAPSHOT_DDL rows: a whole `.checkpoint`, its ACLs as adds at the offset below its end."""
    for arrow in files:
        for row in arrow.to_pylist():
            file = SnapshotFile(row["end_offset"], row["epoch"], Path(row["path"]))
            rows = _Rows()
            try:
                snapshot = read_snapshot(file)
            except LogError as exc:
                yield _error(rows, str(exc))
                continue
            where = (file.end_offset - 1, file.epoch, snapshot.last_contained_timestamp)
            for record in snapshot.acl_records():
                rows.add(file.end_offset - 1, None, ACL, True, record.id, _fields(record), where)
                if len(rows.rows) >= ROWS_PER_BATCH:
                    yield rows.take()
            if rows.rows:
                yield rows.take()
