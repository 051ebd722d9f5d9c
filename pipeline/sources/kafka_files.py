"""Apache Kafka's own KRaft metadata (a metadata.log.dir or `__cluster_metadata-0`) as a job's log, with Kafka's
offsets: segments decoded in Spark tasks (pipeline.sources.kafka_files_rows), the newest `.checkpoint` at or below
the state asked for as its base, then the log, honouring metadata transactions as `authorizer.history.kafka_state`
does.

A `KafkaLog` belongs to the job (driver thread) that loaded it; `for_states` returns views of it, cached.

The state at Kafka offset N applies every record below N (N between two batches). A record inside a
metadata transaction applies at its EndTransactionRecord, never if the transaction is aborted or unfinished:
for N inside a transaction begun at offset b, the state is the one at b (the "cut" of N).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kraftacl.metadata_log.kafka_files.batches import HEADER, HEADER_SIZE, LOG_OVERHEAD
from kraftacl.metadata_log.kafka_files.files import KafkaMetadataFiles, SnapshotFile
from kraftacl.metadata_log.kafka_files.messages import ControlRecord
from kraftacl.metadata_log.kafka_files.reader import decode_batch, file_batches
from kraftacl.pipeline.errors import PipelineError
from kraftacl.pipeline.sources.events import EVENT_DDL, EVENT_SCHEMA
from kraftacl.pipeline.sources.kafka_files_rows import (
    ABORT,
    ACL,
    BATCH,
    BEGIN,
    END,
    ERROR,
    KAFKA_DDL,
    SNAPSHOT_DDL,
    SPAN_DDL,
    snapshot_rows,
    span_rows,
)
from kraftacl.pipeline.sources.log_events import LogEvents

SPAN_BYTES = 16 << 20  # a task reads at most about this much of a segment
_NEVER = 1 << 62
_MARKER_NAMES = {BEGIN: "BeginTransactionRecord", END: "END_TRANSACTION_RECORD", ABORT: "ABORT_TRANSACTION_RECORD"}


@dataclass(frozen=True)
class Transactions:
    """The metadata transactions from a starting offset: (begin, close) spans whose records never apply
    (aborted, or unfinished: close = _NEVER), committed ones by begin -> end, and the first malformed marker."""

    dropped: tuple[tuple[int, int], ...] = ()
    committed: tuple[tuple[int, int], ...] = ()
    error: tuple[int, str] | None = None

    def open_at(self, offset: int) -> int | None:
        """The begin of the transaction still open in the state at `offset`, if any."""
        for begin, close in (*self.dropped, *self.committed):
            if begin < offset <= close:
                return begin
        return None


def resolve(markers: list[tuple[int, int]], start: int) -> Transactions:
    """Pair the markers at or after `start` as `MetadataBatchLoader` does; stop at the first malformed one."""
    dropped: list[tuple[int, int]] = []
    committed: list[tuple[int, int]] = []
    begun: int | None = None
    for offset, kind in markers:
        if offset < start:
            continue
        if kind == BEGIN and begun is not None:
            error = f"offset {offset}: BeginTransactionRecord inside the transaction begun at {begun}"
            return Transactions((*dropped, (begun, _NEVER)), tuple(committed), (offset, error))
        if kind != BEGIN and begun is None:
            error = f"offset {offset}: {_MARKER_NAMES[kind]} without a BeginTransactionRecord"
            return Transactions(tuple(dropped), tuple(committed), (offset, error))
        if kind == BEGIN:
            begun = offset
            continue
        assert begun is not None
        (committed if kind == END else dropped).append((begun, offset))
        begun = None
    if begun is not None:
        dropped.append((begun, _NEVER))
    return Transactions(tuple(dropped), tuple(committed))


def _without(batches: Iterator[pa.RecordBatch], begins: np.ndarray, closes: np.ndarray) -> Iterator[pa.RecordBatch]:
    """mapInArrow: event rows whose offset is inside no (begin, close) span (sorted, disjoint)."""
    for batch in batches:
        offsets = batch.column("offset").to_numpy()
        at = np.searchsorted(begins, offsets, side="right") - 1
        inside = (at >= 0) & (offsets < closes[np.maximum(at, 0)])
        yield batch.filter(pa.array(~inside))


@dataclass(kw_only=True)
class KafkaLog(LogEvents):
    """Kafka's files as loaded: every tagged row of the segments (cached), the markers, the snapshots.

    `events` holds the log's ACL rows as read; jobs use `for_states(...)`, whose events start at the base
    snapshot (its ACLs as adds at the offset below its end) and leave out records that never apply.
    """

    rows: DataFrame = field(repr=False)
    files: KafkaMetadataFiles
    markers: list[tuple[int, int]]
    base: SnapshotFile | None = None
    transactions: Transactions = field(default_factory=Transactions)
    _views: dict[int, KafkaLog] = field(default_factory=dict, repr=False)

    def batches(self) -> DataFrame:
        rows = self.rows.filter(F.col("kind") == BATCH)
        return rows.select("base", (F.col("offset") + 1).alias("next"), "epoch", "ts")

    def holding_batch(self, offset: int) -> tuple[int, int] | None:
        found = (
            self.rows.filter((F.col("kind") == BATCH) & (F.col("base") < offset) & (F.col("offset") >= offset))
            .select("base", "offset")
            .first()
        )
        return None if found is None else (int(found["base"]), int(found["offset"]))

    def cut(self, offset: int) -> int:
        """The offset whose records the state at `offset` applies (the begin of a transaction open there)."""
        error = self.transactions.error
        if error is not None and error[0] < offset:
            raise PipelineError(error[1])
        begin = self.transactions.open_at(offset)
        return offset if begin is None else begin

    def batch_before(self, offset: int) -> tuple[int, int] | None:
        if self.base is not None and offset == self.base.end_offset:
            return self.base.epoch, _snapshot_timestamp(self.base)
        return super().batch_before(offset)

    def for_states(self, *offsets: int) -> KafkaLog:
        """The view for states at `offsets`: based on the newest snapshot at or below the lowest of them."""
        lowest = min(offsets)
        base = max((s for s in self.files.snapshots if 0 < s.end_offset <= lowest), key=_order, default=None)
        start = base.end_offset if base is not None else 0
        if self.files.single_file and self.files.segments:
            start = max(start, self.log_start)  # one segment file: only its records, as kafka-metadata-shell
        if start < self.log_start and lowest > start:
            raise PipelineError(
                f"the log in {self.files.directory} starts at offset {self.log_start} and no snapshot ends between "
                f"{start} and {lowest}: the records below {self.log_start} are gone"
            )
        if start not in self._views:
            self._views[start] = self._view(base, start)
        return self._views[start]

    def _view(self, base: SnapshotFile | None, start: int) -> KafkaLog:
        transactions = resolve(self.markers, start)
        acls = self.rows.filter((F.col("kind") == ACL) & (F.col("offset") >= start)).select(*EVENT_SCHEMA.names)
        if transactions.dropped:
            begins, closes = (np.array(side, dtype=np.int64) for side in zip(*transactions.dropped, strict=True))
            acls = acls.mapInArrow(partial(_without, begins=begins, closes=closes), EVENT_DDL)
        if base is not None:
            spark = self.rows.sparkSession
            listed = spark.createDataFrame([(str(base.path), base.end_offset, base.epoch)], SNAPSHOT_DDL)
            held = listed.mapInArrow(snapshot_rows, KAFKA_DDL).persist(StorageLevel.MEMORY_AND_DISK)
            _raise_errors(held)
            acls = held.select(*EVENT_SCHEMA.names).unionByName(acls)
        events = acls.persist(StorageLevel.MEMORY_AND_DISK)  # a state takes several passes over it
        return replace(self, events=events, base=base, transactions=transactions, _views={})


def _order(snapshot: SnapshotFile) -> tuple[int, int]:
    return snapshot.end_offset, snapshot.epoch


def _snapshot_timestamp(file: SnapshotFile) -> int:
    """LastContainedLogTimestamp of the snapshot's header (its first batch only is read)."""
    header = decode_batch(next(iter(file_batches(file.path)))).entries[0][1]
    found = header.field("LastContainedLogTimestamp") if isinstance(header, ControlRecord) else None
    return -1 if found is None else found


def _raise_errors(rows: DataFrame) -> None:
    bad = rows.filter(F.col("kind") == ERROR).select("id").first()
    if bad is not None:
        raise PipelineError(str(bad["id"]))


def plan_spans(files: KafkaMetadataFiles, span_bytes: int = SPAN_BYTES) -> tuple[list[tuple[str, int, int]], int, int]:
    """(spans of whole batches, the log's first offset, the offset after its last whole batch), walking only
    batch headers (offsets and lengths; the tasks check CRCs and records). Gaps and overlaps between
    batches, and bytes too short for a batch anywhere but at the end of the newest segment, are refused."""
    spans: list[tuple[str, int, int]] = []
    first: int | None = None
    expected: int | None = None
    for number, (_, path) in enumerate(files.segments):
        newest = number + 1 == len(files.segments)
        if os.path.getsize(path) == 0:
            continue
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            pos, start, end = 0, 0, len(data)
            while pos < end:
                size = _batch_size(data, pos, path, newest)
                if size is None:
                    break  # a torn tail at the end of the newest segment: a broker is writing it
                header = HEADER.unpack_from(data, pos)
                base, delta = header[0], header[6]
                if expected is not None and base != expected:
                    what = "gap" if base > expected else "overlap"
                    raise PipelineError(
                        f"{path} byte {pos}: {what}: expected a batch at offset {expected}, found {base}"
                    )
                first = base if first is None else first
                expected = base + delta + 1
                pos += size
                if pos - start >= span_bytes:
                    spans.append((str(path), start, pos))
                    start = pos
            if pos > start:
                spans.append((str(path), start, pos))
    return spans, first or 0, expected or 0


def _batch_size(data: mmap.mmap, pos: int, path: object, newest: bool) -> int | None:
    left = len(data) - pos
    size = LOG_OVERHEAD + int(HEADER.unpack_from(data, pos)[1]) if left >= HEADER_SIZE else None
    if size is not None and size < HEADER_SIZE:
        raise PipelineError(f"corrupt log file {path} at byte position {pos}: batch length {size - 12} is too short")
    if size is None or size > left:
        if newest:
            return None
        raise PipelineError(f"corrupt log file {path} at byte position {pos}: truncated batch ({left} bytes left)")
    return size


def load_kafka_files(spark: SparkSession, files: KafkaMetadataFiles) -> KafkaLog:
    """Decode the segments in Spark tasks (cached), raising the first damage found; markers to the driver."""
    spans, first, end = plan_spans(files)
    table = spark.createDataFrame(spans, SPAN_DDL).repartition(max(len(spans), 1))
    rows = table.mapInArrow(span_rows, KAFKA_DDL).persist(StorageLevel.MEMORY_AND_DISK)
    found = rows.filter(F.col("kind") >= BEGIN).select("offset", "kind", "id").orderBy("offset").collect()
    errors = [r["id"] for r in found if r["kind"] == ERROR]
    if errors:
        raise PipelineError(errors[0])
    markers = [(int(r["offset"]), int(r["kind"])) for r in found]
    high = max([end, *(s.end_offset for s in files.snapshots)])
    acls = rows.filter(F.col("kind") == ACL).select(*EVENT_SCHEMA.names)
    return KafkaLog(acls, high, first if files.segments else high, rows=rows, files=files, markers=markers)
