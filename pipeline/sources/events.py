"""The log as rows for Spark: one row per record (offset, its batch, and the ACL an add creates), decoded
inside Spark tasks by this project's own readers (the file log's segment spans, the Kafka backend's messages).

Pure functions of their inputs; each Spark task calls them on its own data. Decoding goes through the codec's
entry point `codec.acl_rows` (the v1 payload straight to tuples, the replay's fast path; for any other writer
schema, the records the codec resolves); rows leave as Arrow record batches.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Iterator
from itertools import repeat
from pathlib import Path
from typing import Any

import pyarrow as pa

from kraftacl.metadata_log.backends.file.segment import ReadSpan, read_spans
from kraftacl.metadata_log.backends.kafka_topic.message import SCHEMA_HEADER, decode_message
from kraftacl.metadata_log.codec import DEFAULT_CODEC, BatchSchema, RowTables, acl_rows
from kraftacl.metadata_log.records import AccessControlEntryRecord, RecordBatch

ACL_FIELDS = tuple(f.name for f in dataclasses.fields(AccessControlEntryRecord))[1:]  # the fields after its id
EVENT_SCHEMA = pa.schema(
    [
        ("offset", pa.int64()),
        ("base", pa.int64()),
        ("epoch", pa.int32()),
        ("ts", pa.int64()),
        ("add", pa.bool_()),
        ("id", pa.string()),
        ("resource_type", pa.int32()),
        ("resource_name", pa.string()),
        ("pattern_type", pa.int32()),
        ("principal", pa.string()),
        ("host", pa.string()),
        ("operation", pa.int32()),
        ("permission_type", pa.int32()),
    ]
)
EVENT_DDL = (
    "offset long, base long, epoch int, ts long, add boolean, id string, resource_type int, resource_name string, "
    "pattern_type int, principal string, host string, operation int, permission_type int"
)
SPAN_DDL = "path string, schema string, start long, base long, end long"
_PLAIN_ROWS = RowTables(tuple, int, int, int, int, sys.intern)  # codes stay ints: what the Arrow columns hold
_NO_ACL = (None,) * 7
ROWS_PER_BATCH = 1 << 16


class _Columns:
    """Event columns being filled from batches; `take` hands them over as one Arrow record batch."""

    def __init__(self) -> None:
        self.cols: list[list[Any]] = [[] for _ in EVENT_SCHEMA]

    def __len__(self) -> int:
        return len(self.cols[0])

    def add(self, batch: RecordBatch, below: int) -> None:
        ids, rows = acl_rows(batch.records, _PLAIN_ROWS)
        keep = max(0, min(len(rows), below - batch.base_offset))
        if keep <= 0:
            return
        ids, rows = ids[:keep], rows[:keep]
        offset, base, epoch, ts, add, id_, *acl = self.cols
        offset.extend(range(batch.base_offset, batch.base_offset + keep))
        base.extend(repeat(batch.base_offset, keep))
        epoch.extend(repeat(batch.epoch, keep))
        ts.extend(repeat(batch.timestamp_ms, keep))
        add.extend([row is not None for row in rows])
        id_.extend(ids)
        filled = [_NO_ACL if row is None else row for row in rows]
        for column, values in zip(acl, zip(*filled, strict=True), strict=True):
            column.extend(values)

    def take(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_arrays(
            [pa.array(col, type=field.type) for col, field in zip(self.cols, EVENT_SCHEMA, strict=True)],
            schema=EVENT_SCHEMA,
        )
        self.cols = [[] for _ in EVENT_SCHEMA]
        return batch


def to_arrow(batches: Iterable[RecordBatch], below: int) -> Iterator[pa.RecordBatch]:
    """Event rows of `batches` (records below offset `below` only), in Arrow batches of about ROWS_PER_BATCH."""
    columns = _Columns()
    for batch in batches:
        if batch.base_offset >= below:
            break
        columns.add(batch, below)
        if len(columns) >= ROWS_PER_BATCH:
            yield columns.take()
    if len(columns):
        yield columns.take()


def span_rows(spans: Iterator[pa.RecordBatch], below: int) -> Iterator[pa.RecordBatch]:
    """mapInArrow over SPAN_DDL rows: each span of a file-log segment read with the file log's own reader."""
    for arrow in spans:
        for span in arrow.to_pylist():
            read = ReadSpan(
                Path(span["path"]), BatchSchema.from_json(span["schema"]), span["start"], span["base"], span["end"]
            )
            yield from to_arrow(read_spans([read], span["base"], DEFAULT_CODEC), below)


def kafka_rows(messages: Iterator[pa.RecordBatch], topic: str, below: int) -> Iterator[pa.RecordBatch]:
    """mapInArrow over Spark's Kafka rows (value, headers, offset): each message decoded as the Kafka backend does."""

    def batches() -> Iterator[RecordBatch]:
        for arrow in messages:
            for message in arrow.to_pylist():
                headers = {h["key"]: h["value"] for h in message["headers"] or ()}
                where = f"{topic} Kafka offset {message['offset']}"
                yield decode_message(message["value"], headers.get(SCHEMA_HEADER), DEFAULT_CODEC, where)

    yield from to_arrow(batches(), below)
