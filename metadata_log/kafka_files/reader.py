"""Read Kafka's KRaft metadata files: a log's segments in offset order and a `.checkpoint` snapshot, each
batch decoded into ACL records, transaction markers, skipped records and control records.

Read-only and stateless: each call opens (memory-maps) the files it reads and closes them; the values
returned are frozen. Damage raises CorruptLogError naming the file and the batch's byte position.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kraftacl.metadata_log.errors import CorruptLogError
from kraftacl.metadata_log.kafka_files.batches import KafkaBatch, TornTail, read_batches
from kraftacl.metadata_log.kafka_files.files import KafkaMetadataFiles, SnapshotFile
from kraftacl.metadata_log.kafka_files.messages import (
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    ControlRecord,
    MetadataEntry,
    OtherRecord,
    decode_control,
    decode_metadata,
)
from kraftacl.metadata_log.kafka_files.wire import WireError
from kraftacl.metadata_log.records import AccessControlEntryRecord

Entry = MetadataEntry | ControlRecord


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """A batch and its records decoded: (offset, entry) in offset order."""

    batch: KafkaBatch
    entries: tuple[tuple[int, Entry], ...]


def decode_batch(batch: KafkaBatch) -> DecodedBatch:
    """Decode every record of a batch; CorruptLogError names the file, the batch position and the offset."""
    entries: list[tuple[int, Entry]] = []
    for record in batch.records:
        try:
            if batch.is_control:
                assert record.key is not None  # read_batches checked it
                entries.append((record.offset, decode_control(record.key, record.value)))
            else:
                entries.append((record.offset, decode_metadata(record.value)))
        except WireError as exc:
            raise CorruptLogError(
                batch.path, batch.position, f"record at offset {record.offset}: {exc.reason}"
            ) from exc
    return DecodedBatch(batch, tuple(entries))


def file_batches(path: Path, torn: list[TornTail] | None = None) -> Iterator[KafkaBatch]:
    """The batches of one file, memory-mapped (see `read_batches` for `torn`)."""
    with path.open("rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            yield from read_batches(data, path, torn)


def log_batches(
    files: KafkaMetadataFiles, from_offset: int = 0, torn: list[TornTail] | None = None
) -> Iterator[DecodedBatch]:
    """The log's batches from the one holding `from_offset`, across segments, offsets checked contiguous.

    A torn tail is tolerated (and recorded in `torn`) only at the end of the newest segment, where a
    running broker may be writing; anywhere else it is damage.
    """
    segments = files.segments
    expected: int | None = None
    for number, (_, path) in enumerate(segments):
        if number + 1 < len(segments) and segments[number + 1][0] <= from_offset:
            continue  # every offset of this segment is below from_offset
        for batch in file_batches(path, torn if number + 1 == len(segments) else None):
            if expected is not None and batch.base_offset != expected:
                what = "gap" if batch.base_offset > expected else "overlap"
                raise CorruptLogError(
                    path, batch.position, f"{what}: expected a batch at offset {expected}, found {batch.base_offset}"
                )
            expected = batch.next_offset
            if batch.last_offset >= from_offset:
                yield decode_batch(batch)


@dataclass(frozen=True, slots=True)
class KafkaSnapshot:
    """A whole `.checkpoint`: its id, the header's last contained log timestamp, and its batches."""

    file: SnapshotFile
    last_contained_timestamp: int
    batches: tuple[DecodedBatch, ...]

    def acl_records(self) -> Iterator[AccessControlEntryRecord]:
        """Every ACL the snapshot holds (other record types skipped)."""
        for decoded in self.batches:
            for _, entry in decoded.entries:
                if type(entry) is AccessControlEntryRecord:
                    yield entry

    @property
    def record_count(self) -> int:
        """Data records of every type (what kafka-dump-log counts)."""
        return sum(len(d.entries) for d in self.batches if not d.batch.is_control)


def read_snapshot(file: SnapshotFile) -> KafkaSnapshot:
    """Read and check a whole snapshot: a SnapshotHeader control batch first, a SnapshotFooter last, every
    CRC, and only records a snapshot may hold (no removals, no transaction markers)."""
    path = file.path
    batches = tuple(decode_batch(b) for b in file_batches(path))
    if not batches or not batches[0].batch.is_control:
        raise CorruptLogError(path, 0, "the first batch is not a control batch with a SnapshotHeader")
    first = batches[0].entries[0][1]
    if not isinstance(first, ControlRecord) or first.type != SNAPSHOT_HEADER:
        name = getattr(first, "name", first)
        raise CorruptLogError(path, 0, f"the first control record is {name}, not SnapshotHeader")
    last = batches[-1]
    if not last.batch.is_control or not any(
        isinstance(e, ControlRecord) and e.type == SNAPSHOT_FOOTER for _, e in last.entries
    ):
        raise CorruptLogError(path, last.batch.position, "no SnapshotFooter: the snapshot is incomplete")
    expected = 0
    for decoded in batches:  # internal offsets run on from 0 (the base offsets are outside the CRC)
        if decoded.batch.base_offset != expected:
            raise CorruptLogError(
                path, decoded.batch.position, f"batch at offset {decoded.batch.base_offset}, expected {expected}"
            )
        expected = decoded.batch.next_offset
    for decoded in batches[1:-1]:
        for offset, entry in decoded.entries:
            if not decoded.batch.is_control and not isinstance(entry, AccessControlEntryRecord | OtherRecord):
                raise CorruptLogError(
                    path, decoded.batch.position, f"record {offset}: a snapshot cannot hold {type(entry).__name__}"
                )
    timestamp = first.field("LastContainedLogTimestamp")
    return KafkaSnapshot(file, -1 if timestamp is None else timestamp, batches)
