"""Kafka's record batch v2 (magic 2) as KRaft writes it: the 61-byte header, the CRC-32C, the records.

Pure functions over immutable bytes; the `KafkaBatch` values are frozen and safe to share.

Header layout (spec §14.3, big-endian; the batch is `12 + batchLength` bytes):

    0 baseOffset int64 | 8 batchLength int32 | 12 partitionLeaderEpoch int32 | 16 magic int8 (2)
    17 crc uint32: CRC-32C of bytes [21, end) | 21 attributes int16 | 23 lastOffsetDelta int32
    27 baseTimestamp int64 | 35 maxTimestamp int64 | 43 producerId int64 | 51 producerEpoch int16
    53 baseSequence int32 | 57 recordsCount int32 | 61 records

Each record: `length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
keyLength varint | key | valueLength varint | value | headerCount varint` (zigzag varints). KRaft's
reader (`RecordsIterator`) also requires timestampDelta 0, no headers, data records without a key
and with a value, control records with both; so does this reader, and offsetDelta must be the
record's index (KRaft numbers records base + index).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c

from kraftacl.metadata_log.errors import CorruptLogError
from kraftacl.metadata_log.kafka_files.wire import WireError, WireReader

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
CRC_START = 21
MAGIC = 2
CONTROL_FLAG = 0x20
TRANSACTIONAL_FLAG = 0x10
Bytes = bytes | memoryview | mmap.mmap  # a file's bytes, read or memory-mapped
COMPRESSION = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True, slots=True)
class KafkaRecord:
    """One record of a batch: its offset, key (control records only) and value."""

    offset: int
    key: bytes | None
    value: bytes


@dataclass(frozen=True, slots=True)
class KafkaBatch:
    """One whole, CRC-checked record batch and where it sits in its file."""

    path: Path
    position: int
    size: int  # bytes in the file: 12 + batchLength
    base_offset: int
    last_offset: int
    epoch: int  # partitionLeaderEpoch
    crc: int
    attributes: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: tuple[KafkaRecord, ...]

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


@dataclass(frozen=True, slots=True)
class TornTail:
    """Bytes at the end of a file too short to be a whole batch: a write in progress or cut off."""

    path: Path
    position: int
    size: int


def read_batches(data: Bytes, path: Path, on_torn_tail: list[TornTail] | None = None) -> Iterator[KafkaBatch]:
    """Every batch of a segment or snapshot file's bytes, in file order.

    A batch whose bytes are damaged raises CorruptLogError naming the file and the batch's byte position.
    Trailing bytes too short for the batch they start are a torn tail: with `on_torn_tail` they are
    recorded there and reading stops, as Kafka's own file reader stops; without it they are damage.
    """
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < HEADER_SIZE:
            _torn(path, pos, end - pos, f"{end - pos} bytes, shorter than a batch header", on_torn_tail)
            return
        base, length, epoch, magic, crc, attributes, delta, base_ts, max_ts, pid, pepoch, bseq, count = (
            HEADER.unpack_from(data, pos)
        )
        size = LOG_OVERHEAD + length
        if length < HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptLogError(path, pos, f"batch length {length} is below the batch header's {HEADER_SIZE - 12}")
        if magic != MAGIC:
            raise CorruptLogError(path, pos, f"record batch magic {magic} (KRaft writes magic {MAGIC})")
        if pos + size > end:
            _torn(path, pos, end - pos, f"the batch needs {size} bytes, {end - pos} left", on_torn_tail)
            return
        actual = crc32c(data[pos + CRC_START : pos + size])
        if actual != crc:
            raise CorruptLogError(path, pos, f"batch CRC-32C mismatch: stored {crc:08x}, computed {actual:08x}")
        if attributes & 0x07:
            name = COMPRESSION[attributes & 7] if attributes & 7 < len(COMPRESSION) else str(attributes & 7)
            raise CorruptLogError(path, pos, f"compressed batch ({name}): KRaft writes metadata uncompressed")
        if count != delta + 1:
            raise CorruptLogError(path, pos, f"batch holds {count} records but spans {delta + 1} offsets")
        try:
            records = _records(data, pos + HEADER_SIZE, pos + size, base, count, bool(attributes & CONTROL_FLAG))
        except WireError as exc:
            raise CorruptLogError(path, exc.position, f"batch at byte {pos}: {exc.reason}") from exc
        yield KafkaBatch(
            path, pos, size, base, base + delta, epoch, crc, attributes, base_ts, max_ts, pid, pepoch, bseq, records
        )
        pos += size


def _torn(path: Path, pos: int, size: int, reason: str, sink: list[TornTail] | None) -> None:
    if sink is None:
        raise CorruptLogError(path, pos, f"truncated batch: {reason}")
    sink.append(TornTail(path, pos, size))


def _records(data: Bytes, start: int, end: int, base: int, count: int, control: bool) -> tuple[KafkaRecord, ...]:
    """The `count` records in data[start:end], checked as KRaft's RecordsIterator checks them."""
    reader = WireReader(data, start, end)
    out: list[KafkaRecord] = []
    for index in range(count):
        at = reader.pos
        length = reader.varint("record length")
        if length <= 0 or length > reader.remaining:
            raise WireError(at, f"record {index}: invalid record size {length} ({reader.remaining} bytes left)")
        body = WireReader(data, reader.pos, reader.pos + length)
        reader.pos += length
        body.int8("record attributes")
        if body.varlong("timestampDelta") != 0:
            raise WireError(at, f"record {index}: timestamp delta is not 0")
        if body.varint("offsetDelta") != index:
            raise WireError(at, f"record {index}: offset delta is not {index}")
        key_size = body.varint("keyLength")
        key = body.take(key_size, "key") if key_size >= 0 else None
        value_size = body.varint("valueLength")
        value = body.take(value_size, "value") if value_size >= 0 else None
        if body.varint("headerCount") != 0 or body.remaining:
            raise WireError(at, f"record {index}: headers or bytes after the value (KRaft records have none)")
        if not value:
            raise WireError(at, f"record {index}: missing or empty value")
        if control and not key:
            raise WireError(at, f"record {index}: a control record without a key")
        if not control and key is not None:
            raise WireError(at, f"record {index}: a data record with a key")
        out.append(KafkaRecord(base + index, key, value))
    if reader.remaining:
        raise WireError(reader.pos, f"{reader.remaining} bytes after the batch's {count} records")
    return tuple(out)
