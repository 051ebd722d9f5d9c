"""The on-disk framing of `FileLog` segments: the segment header and the CRC-checked batch frames.

Pure functions and immutable values over bytes and open files: safe from any thread as long as
each thread uses its own file object.

A segment file `<20-digit base offset>.log` is one header followed by frames, all big-endian:

    segment header                          batch frame (repeated)
    0   4  magic           b"KACS"          0   4  magic           b"KACB"
    4   1  format version  2 (1: no log id) 4   8  base offset     int64
    5   3  reserved        0                12  4  record count    int32, >= 1
    8   4  schema length   N                16  4  writer epoch    int32, >= 0
    12  4  crc32           over 0..11,      20  8  timestamp ms    int64
                           log id, schema   28  4  payload length  L, int32
    16 16  log id          (format 2 only)  32  4  crc32           over 0..31 and the payload
    32  N  writer schema   JSON (UTF-8)     36  L  payload         one Avro RecordBatch datum

The writer schema in the header is the self-contained `RecordBatch` schema every payload of the
segment was written with (as in Avro object container files); readers resolve it to their own.
The log id is the random identity the log got when it was created (`file_meta`): a segment of
another log is refused, never mixed in. Format-1 segments (written before log identities) are read.
A file whose first bytes are not the segment magic (Kafka's own `.log` segments, anything else) is
`foreign`: never a torn tail, never truncated or removed.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kraftacl.metadata_log.codec import BatchSchema, Codec
from kraftacl.metadata_log.records import RecordBatch

SEGMENT_MAGIC = b"KACS"
FORMAT_VERSION = 2
LEGACY_FORMAT_VERSION = 1  # no log id in the header
LOG_ID_BYTES = 16
INT64_MAX = (1 << 63) - 1
FRAME_MAGIC = b"KACB"
SEGMENT_HEADER = struct.Struct(">4sB3xII")
FRAME_HEADER = struct.Struct(">4sqiiqiI")
FRAME_HEADER_SIZE = FRAME_HEADER.size  # 36
MAX_SCHEMA_BYTES = 1 << 20
MAX_PAYLOAD_BYTES = (1 << 31) - 1


class FrameError(Exception):
    """A frame or header at `position` is not whole and valid; `torn` if it could be a cut-off write.

    `torn` is False when the bytes are intact (CRC matches) but break an invariant, e.g. a base
    offset out of sequence: that is corruption wherever it appears. `foreign` marks a segment file
    that is not kraft-acl's at all (its first bytes are not the segment magic).
    """

    def __init__(self, position: int, reason: str, *, torn: bool = True, foreign: bool = False) -> None:
        super().__init__(f"at byte position {position}: {reason}")
        self.position = position
        self.reason = reason
        self.torn = torn and not foreign
        self.foreign = foreign


@dataclass(frozen=True, slots=True)
class SegmentHeader:
    """A parsed segment header: writer schema, where the first frame starts, format and log id (None in format 1)."""

    schema_json: str
    data_start: int
    version: int
    log_id: bytes | None


@dataclass(frozen=True, slots=True)
class Frame:
    """One whole, CRC-checked batch frame read from a segment."""

    position: int
    base_offset: int
    record_count: int
    epoch: int
    timestamp_ms: int
    payload: bytes

    @property
    def size(self) -> int:
        """Bytes the frame takes in the file, header included."""
        return FRAME_HEADER_SIZE + len(self.payload)

    @property
    def next_offset(self) -> int:
        """The offset right after this batch."""
        return self.base_offset + self.record_count


def encode_segment_header(schema_json: str, log_id: bytes | None = None) -> bytes:
    """The header that opens a segment whose payloads are written with `schema_json` (format 2 with a log id)."""
    schema = schema_json.encode("utf-8")
    version = LEGACY_FORMAT_VERSION if log_id is None else FORMAT_VERSION
    ident = b"" if log_id is None else log_id
    if len(ident) not in (0, LOG_ID_BYTES):
        raise ValueError(f"a log id is {LOG_ID_BYTES} bytes, not {len(ident)}")
    fixed = SEGMENT_HEADER.pack(SEGMENT_MAGIC, version, len(schema), 0)[:12]
    crc = zlib.crc32(schema, zlib.crc32(ident, zlib.crc32(fixed)))
    return fixed + struct.pack(">I", crc) + ident + schema


def read_segment_header(f: BinaryIO) -> tuple[str, int]:
    """Read the header at the start of `f`; return (writer schema JSON, position of the first frame)."""
    header = read_segment_header_full(f)
    return header.schema_json, header.data_start


def read_segment_header_full(f: BinaryIO) -> SegmentHeader:
    """Read and check the header at the start of `f` (both formats); FrameError says what is wrong."""
    f.seek(0)
    fixed = f.read(SEGMENT_HEADER.size)
    if not SEGMENT_MAGIC.startswith(fixed[:4]):  # a cut-off header still starts with (part of) the magic
        reason = f"not a kraft-acl segment: it starts with {fixed[:8]!r}, not {SEGMENT_MAGIC!r}"
        raise FrameError(0, reason, foreign=True)
    if len(fixed) < SEGMENT_HEADER.size:
        raise FrameError(0, f"short segment header ({len(fixed)} of {SEGMENT_HEADER.size} bytes)")
    _, version, length, crc = SEGMENT_HEADER.unpack(fixed)
    if length > MAX_SCHEMA_BYTES:
        raise FrameError(0, f"implausible schema length {length} in the segment header")
    ident = f.read(LOG_ID_BYTES) if version == FORMAT_VERSION else b""
    schema = f.read(length)
    if len(schema) < length or len(ident) != (LOG_ID_BYTES if version == FORMAT_VERSION else 0):
        raise FrameError(0, f"short segment header (log id {len(ident)} bytes, schema {len(schema)} of {length})")
    computed = zlib.crc32(schema, zlib.crc32(ident, zlib.crc32(fixed[:12])))
    if computed != crc:
        raise FrameError(0, f"segment header CRC mismatch (stored {crc:#010x}, computed {computed:#010x})")
    if version not in (FORMAT_VERSION, LEGACY_FORMAT_VERSION):
        raise FrameError(0, f"unsupported segment format version {version}", torn=False)
    try:
        text = schema.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrameError(0, f"segment header schema is not UTF-8: {exc}", torn=False) from exc
    return SegmentHeader(text, SEGMENT_HEADER.size + len(ident) + length, version, ident or None)


def decode_frame(
    codec: Codec, frame: Frame, writer_schema: BatchSchema | None, path: Path | None = None
) -> RecordBatch:
    """The batch a frame carries, decoded lazily with its writer schema; DecodeError names base offset and file."""
    return codec.decode_batch(
        frame.payload,
        base_offset=frame.base_offset,
        epoch=frame.epoch,
        timestamp_ms=frame.timestamp_ms,
        writer_schema=writer_schema,
        expected_count=frame.record_count,
        path=path,
        lazy=True,
        size_bytes=FRAME_HEADER_SIZE + len(frame.payload),
    )


def encode_frame(base_offset: int, record_count: int, epoch: int, timestamp_ms: int, payload: bytes) -> bytes:
    """One frame: header (with the CRC over header and payload) followed by the payload."""
    return frame_head(base_offset, record_count, epoch, timestamp_ms, [payload]) + payload


def frame_head(base_offset: int, record_count: int, epoch: int, timestamp_ms: int, pieces: list[bytes]) -> bytes:
    """The header of the frame whose payload is `pieces` joined (its CRC over header and payload), without joining."""
    head = FRAME_HEADER.pack(FRAME_MAGIC, base_offset, record_count, epoch, timestamp_ms, sum(map(len, pieces)), 0)
    crc = zlib.crc32(head[:32])
    for piece in pieces:
        crc = zlib.crc32(piece, crc)
    return head[:32] + struct.pack(">I", crc)


def parse_frame_at(buf: bytes | memoryview, pos: int) -> Frame | None:
    """The whole, CRC-valid frame starting at `pos` of an in-memory buffer, or None (for resync)."""
    if len(buf) - pos < FRAME_HEADER_SIZE:
        return None
    magic, base, count, epoch, ts, length, crc = FRAME_HEADER.unpack_from(buf, pos)
    end = pos + FRAME_HEADER_SIZE + length
    if magic != FRAME_MAGIC or length < 0 or end > len(buf):
        return None
    payload = bytes(buf[pos + FRAME_HEADER_SIZE : end])
    if zlib.crc32(payload, zlib.crc32(buf[pos : pos + 32])) != crc:
        return None
    return Frame(pos, base, count, epoch, ts, payload)


def iter_frames(f: BinaryIO, start: int, end: int, expected_base: int) -> Iterator[Frame]:
    """Yield the frames of `f` in [start, end), each checked; raise FrameError at the first bad one.

    Checks per frame: whole header and payload before `end`, magic, CRC, then (torn=False) record
    count >= 1 and base offset == the previous frame's next offset (`expected_base` for the first).
    """
    f.seek(start)
    pos = start
    while pos < end:
        head = f.read(FRAME_HEADER_SIZE) if end - pos >= FRAME_HEADER_SIZE else b""
        if len(head) < FRAME_HEADER_SIZE:
            raise FrameError(pos, f"short batch header ({min(end - pos, FRAME_HEADER_SIZE)} of 36 bytes)")
        magic, base, count, epoch, ts, length, crc = FRAME_HEADER.unpack(head)
        if magic != FRAME_MAGIC:
            raise FrameError(pos, f"bad batch magic {magic!r} (expected {FRAME_MAGIC!r})")
        if length < 0 or pos + FRAME_HEADER_SIZE + length > end:
            have = end - pos - FRAME_HEADER_SIZE
            raise FrameError(pos, f"short batch payload ({have} of {length} bytes) for base offset {base}")
        payload = f.read(length)
        if len(payload) < length:
            raise FrameError(pos, f"short batch payload ({len(payload)} of {length} bytes) for base offset {base}")
        computed = zlib.crc32(payload, zlib.crc32(head[:32]))
        if computed != crc:
            raise FrameError(pos, f"batch CRC mismatch (stored {crc:#010x}, computed {computed:#010x})")
        if count < 1:
            raise FrameError(pos, f"batch at base offset {base} has record count {count}", torn=False)
        if epoch < 0:
            raise FrameError(pos, f"batch at base offset {base} has epoch {epoch}, not 0..2147483647", torn=False)
        if base > INT64_MAX - count:
            raise FrameError(pos, f"batch at base offset {base} with {count} records overflows int64", torn=False)
        if base != expected_base:
            raise FrameError(pos, f"batch has base offset {base} but offset {expected_base} was expected", torn=False)
        yield Frame(pos, base, count, epoch, ts, payload)
        pos += FRAME_HEADER_SIZE + length
        expected_base = base + count


def find_frame_after(f: BinaryIO, position: int) -> Frame | None:
    """The first whole, CRC-valid frame that starts after `position`, or None.

    Used to tell a torn tail (nothing valid follows the damage) from corruption in the middle of
    the log (a valid batch follows). Candidates are found by their magic; the CRC rules out magic
    bytes that happen to appear inside a payload.
    """
    f.seek(position + 1)
    buf = f.read()
    at = buf.find(FRAME_MAGIC)
    while at >= 0:
        frame = parse_frame_at(buf, at)
        if frame is not None:
            return Frame(
                position + 1 + at,
                frame.base_offset,
                frame.record_count,
                frame.epoch,
                frame.timestamp_ms,
                frame.payload,
            )
        at = buf.find(FRAME_MAGIC, at + 1)
    return None


def write_all(fd: int, data: bytes | list[bytes], position: int) -> None:
    """pwrite until every byte is written (a regular file may take a short write); a list: its pieces in turn."""
    for piece in [data] if isinstance(data, bytes) else data:
        view = memoryview(piece)
        while view:
            written = os.pwrite(fd, view, position)
            view = view[written:]
            position += written
