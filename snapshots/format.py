"""The snapshot file format: a checksummed header, checksummed record chunks, and a footer that seals the file.

Writer and reader are single-threaded objects; a finished file is immutable.

Layout (all integers big-endian):

    header   magic b"KACLSNAP" | u16 format version | u32 header length | u32 CRC-32 of the JSON
             | JSON {end_offset, epoch, timestamp_ms, writer_schema[, log_id]}
    chunk*   u32 payload length | u32 record count | u32 CRC-32 of payload | payload
             (format 2: one columnar `AclSnapshotChunk` datum, see snapshots.columns; format 1, still
             read: one row-wise `RecordBatch` datum)
    footer   u32 0xFFFFFFFF | u64 record count | u32 chunk count | u32 CRC-32 of the chunk CRCs | b"KACLEND!"

A reader accepts a file only if the header, every chunk and the footer check out and nothing
follows the footer; anything else is a CorruptSnapshotError naming the byte position. The header
JSON is read strictly: no duplicate key, no NaN, integers in range (end offset int64, epoch
int32, timestamp -1..int64), `log_id` a Kafka Uuid text naming the log the snapshot was taken
from (absent in files written before log identities; readers that predate it ignore it).
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kraftacl.metadata_log import strict_json
from kraftacl.metadata_log.backends.file.dir_files import SNAPSHOT_MAGIC
from kraftacl.metadata_log.codec import BatchSchema, Codec
from kraftacl.metadata_log.errors import DecodeError
from kraftacl.metadata_log.records import AccessControlEntryRecord
from kraftacl.metadata_log.uuids import UUID_TEXT
from kraftacl.snapshots.columns import CHUNK_SCHEMA, AclColumns, columns_of, decode_chunk, encode_columns
from kraftacl.snapshots.errors import CorruptSnapshotError

MAGIC = SNAPSHOT_MAGIC
END_MAGIC = b"KACLEND!"
VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: row-wise chunks, as written before the columnar chunk
FOOTER_MARK = 0xFFFFFFFF
CHUNK_RECORDS = 10_000
_HEAD = struct.Struct(">8sHII")
_CHUNK = struct.Struct(">III")
_FOOTER = struct.Struct(">QII8s")
INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1
MAX_WRITER_SCHEMA = 1 << 20


@dataclass(frozen=True, slots=True)
class SnapshotHeader:
    """What a snapshot covers: records below `end_offset`, the last batch's epoch and timestamp."""

    end_offset: int
    epoch: int
    timestamp_ms: int
    writer_schema: str = CHUNK_SCHEMA.json_text
    log_id: str | None = None  # the log the snapshot belongs to (FileLog.log_id); None: written without one


def write_snapshot_file(fh: BinaryIO, header: SnapshotHeader, records: Iterable[AccessControlEntryRecord]) -> int:
    """Write a whole snapshot of records to an open binary file, CHUNK_RECORDS per chunk; returns the record
    count. The caller fsyncs. ValueError names a record that cannot be stored (not an
    AccessControlEntryRecord, a bad id, a code outside int32).
    """
    return write_snapshot_chunks(fh, header, record_chunks(records))


def record_chunks(records: Iterable[AccessControlEntryRecord]) -> Iterator[AclColumns]:
    """Records as columns, CHUNK_RECORDS at a time."""
    chunk: list[AccessControlEntryRecord] = []
    total = 0
    for record in records:
        chunk.append(record)
        if len(chunk) >= CHUNK_RECORDS:
            yield _columns(chunk, total)
            total += len(chunk)
            chunk = []
    if chunk:
        yield _columns(chunk, total)


def _columns(chunk: list[AccessControlEntryRecord], first: int) -> AclColumns:
    try:
        return columns_of(chunk)
    except ValueError as exc:
        raise ValueError(f"snapshot records {first}..{first + len(chunk) - 1}: {exc}") from exc


def write_snapshot_chunks(fh: BinaryIO, header: SnapshotHeader, chunks: Iterable[AclColumns]) -> int:
    """Write a whole snapshot, one chunk per AclColumns, to an open binary file; returns the record count.

    The caller fsyncs. ValueError names the records of a chunk that cannot be stored.
    """
    fields: dict[str, object] = {
        "end_offset": header.end_offset,
        "epoch": header.epoch,
        "timestamp_ms": header.timestamp_ms,
        "writer_schema": CHUNK_SCHEMA.json_text,
    }
    if header.log_id is not None:
        fields["log_id"] = header.log_id
    check_header(header)
    meta = json.dumps(fields, separators=(",", ":")).encode()
    fh.write(_HEAD.pack(MAGIC, VERSION, len(meta), zlib.crc32(meta)) + meta)
    total = count = 0
    crcs = bytearray()
    for chunk in chunks:
        try:
            payload = encode_columns(chunk)
        except ValueError as exc:
            raise ValueError(f"snapshot records {total}..{total + chunk.rows - 1}: {exc}") from exc
        crc = zlib.crc32(payload)
        fh.write(_CHUNK.pack(len(payload), chunk.rows, crc) + payload)
        crcs.extend(crc.to_bytes(4, "big"))
        total, count = total + chunk.rows, count + 1
    fh.write(FOOTER_MARK.to_bytes(4, "big") + _FOOTER.pack(total, count, zlib.crc32(crcs), END_MAGIC))
    return total


class SnapshotReader:
    """Validates and decodes one snapshot file; `records()` is all-or-nothing (it validates first)."""

    def __init__(self, path: Path, codec: Codec | None = None) -> None:
        self.path = path
        self.codec = codec or Codec()
        self._data = path.read_bytes()
        self.header = self._read_header()
        self._validated: list[tuple[int, int, bytes]] | None = None  # chunks, once checked

    def _corrupt(self, position: int, reason: str) -> CorruptSnapshotError:
        return CorruptSnapshotError(self.path, position, reason)

    def _read_header(self) -> SnapshotHeader:
        header, self.version = parse_header(self._data, self.path)
        return header

    def _chunks(self) -> Iterator[tuple[int, int, bytes]]:
        """(position, record count, payload) per chunk, after validating the whole file (once per reader)."""
        if self._validated is None:
            self._validated = self._validate_chunks()
        return iter(self._validated)

    def _validate_chunks(self) -> list[tuple[int, int, bytes]]:
        data, pos = self._data, _HEAD.size + _HEAD.unpack_from(self._data)[2]
        chunks: list[tuple[int, int, bytes]] = []
        crcs = bytearray()
        while True:
            if pos + 4 > len(data):
                raise self._corrupt(pos, "truncated: no footer")
            if int.from_bytes(data[pos : pos + 4], "big") == FOOTER_MARK:
                break
            if pos + _CHUNK.size > len(data):
                raise self._corrupt(pos, "truncated chunk header")
            length, count, crc = _CHUNK.unpack_from(data, pos)
            payload = data[pos + _CHUNK.size : pos + _CHUNK.size + length]
            if len(payload) != length:
                raise self._corrupt(pos, f"truncated chunk: {len(payload)} of {length} bytes")
            if zlib.crc32(payload) != crc:
                raise self._corrupt(pos, "chunk checksum mismatch")
            chunks.append((pos, count, payload))
            crcs.extend(crc.to_bytes(4, "big"))
            pos += _CHUNK.size + length
        footer = data[pos + 4 : pos + 4 + _FOOTER.size]
        if len(footer) != _FOOTER.size:
            raise self._corrupt(pos, "truncated footer")
        total, count, crc_of_crcs, end = _FOOTER.unpack(footer)
        if end != END_MAGIC or count != len(chunks) or crc_of_crcs != zlib.crc32(crcs):
            raise self._corrupt(pos, "footer does not match the chunks")
        if total != sum(c for _, c, _ in chunks):
            raise self._corrupt(pos, f"footer says {total} records, chunks hold {sum(c for _, c, _ in chunks)}")
        if pos + 4 + _FOOTER.size != len(data):
            raise self._corrupt(pos + 4 + _FOOTER.size, "bytes after the footer")
        return chunks

    def verify(self) -> int:
        """Validate everything, decoding every record; returns the record count."""
        return sum(1 for _ in self.records())

    def validate(self) -> int:
        """Validate header, every chunk checksum and the footer without decoding; returns the record count."""
        return sum(count for _, count, _ in self._chunks())

    def records(self) -> Iterator[AccessControlEntryRecord]:
        """Every record, after the whole file's framing has been validated."""
        if self.version == 1:
            yield from self._rows_v1()
            return
        for columns in self.columns():
            yield from columns.records()

    def columns(self) -> Iterator[AclColumns]:
        """Every chunk as columns (the fast path of a cold start), after the whole file's framing validated."""
        if self.version == 1:
            rows = list(self._rows_v1())
            if rows:
                yield columns_of(rows)
            return
        schema = self._writer_schema()
        number = 0
        for pos, count, payload in self._chunks():
            try:
                columns = decode_chunk(payload, schema)
            except ValueError as exc:
                raise self._corrupt(pos, f"records {number}..{number + count - 1}: {exc}") from exc
            if columns.rows != count:
                raise self._corrupt(pos, f"the chunk header says {count} records, its payload holds {columns.rows}")
            yield columns
            number += count

    def _writer_schema(self) -> BatchSchema:
        try:
            return BatchSchema.from_json(self.header.writer_schema)
        except ValueError as exc:
            raise self._corrupt(_HEAD.size, f"header writer_schema: {exc}") from exc

    def _rows_v1(self) -> Iterator[AccessControlEntryRecord]:
        """Format 1: each chunk is a row-wise RecordBatch datum."""
        schema = self._writer_schema()
        number = 0
        for pos, count, payload in self._chunks():
            try:
                decoded = self.codec.decode_records(
                    payload, base_offset=number, writer_schema=schema, expected_count=count, path=self.path
                )
            except DecodeError as exc:
                raise self._corrupt(pos, f"records {number}..{number + count - 1}: {exc.reason}") from exc
            for record in decoded:
                if not isinstance(record, AccessControlEntryRecord):
                    raise self._corrupt(pos, f"record {number}: a snapshot holds only AccessControlEntryRecords")
                yield record
                number += 1


def read_snapshot_header(path: Path) -> SnapshotHeader:
    """Only the header of a snapshot file (checked, CRC included), without reading its chunks."""
    with open(path, "rb") as f:
        head = f.read(_HEAD.size)
        length = _HEAD.unpack(head)[2] if len(head) == _HEAD.size and head[:8] == MAGIC else 0
        data = head + f.read(min(length, MAX_WRITER_SCHEMA * 2))
    return parse_header(data, path)[0]


def parse_header(data: bytes, path: Path) -> tuple[SnapshotHeader, int]:
    """(header, format version) from the first bytes of a snapshot file; CorruptSnapshotError names the byte."""
    if len(data) < _HEAD.size:
        raise CorruptSnapshotError(path, 0, f"file is {len(data)} bytes, shorter than a header")
    magic, version, length, crc = _HEAD.unpack_from(data)
    if magic != MAGIC:
        raise CorruptSnapshotError(path, 0, f"bad magic {magic!r} (not a kraft-acl snapshot)")
    if version not in READABLE_VERSIONS:
        reason = f"unsupported format version {version} (this reader reads {READABLE_VERSIONS})"
        raise CorruptSnapshotError(path, 8, reason)
    meta = data[_HEAD.size : _HEAD.size + length]
    if len(meta) != length or zlib.crc32(meta) != crc:
        raise CorruptSnapshotError(path, _HEAD.size, "header checksum mismatch")
    try:
        fields = strict_json.loads(meta)
        if not isinstance(fields, dict):
            raise ValueError("the header is not a JSON object")
        header = SnapshotHeader(
            fields["end_offset"], fields["epoch"], fields["timestamp_ms"], fields["writer_schema"], fields.get("log_id")
        )
        check_header(header)
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptSnapshotError(path, _HEAD.size, f"header field: {_describe(exc)}") from exc
    return header, version


def check_header(header: SnapshotHeader) -> None:
    """ValueError unless every header field is within Kafka's limits: end offset int64, epoch int32,
    timestamp -1..int64, a writer schema of at most 1 MiB, a log id that is a Kafka Uuid text (or None)."""
    for name, value, low, high in (
        ("end_offset", header.end_offset, 0, INT64_MAX),
        ("epoch", header.epoch, 0, INT32_MAX),
        ("timestamp_ms", header.timestamp_ms, -1, INT64_MAX),
    ):
        if type(value) is not int or not low <= value <= high:
            raise ValueError(f"{name} = {value!r} is not an integer in {low}..{high}")
    if type(header.writer_schema) is not str or len(header.writer_schema) > MAX_WRITER_SCHEMA:
        raise ValueError(f"writer_schema is not a string of at most {MAX_WRITER_SCHEMA} characters")
    if header.log_id is not None and (type(header.log_id) is not str or UUID_TEXT.fullmatch(header.log_id) is None):
        raise ValueError(f"log_id = {header.log_id!r} is not a Kafka Uuid text")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing {exc}"
    return str(exc)


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in `path` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
