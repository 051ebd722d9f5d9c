"""The on-disk framing of `FileLog` segments: the segment header and the CRC-checked batch frames.

Pure functions and immutable values over bytes and open files: safe from any thread as long as
each thread uses its own file object.

A segment file `<20-digit base offset>.log` is one header followed by frames, all big-endian:

    segment header                          batch frame (repeated)
    0   4  magic           b"KACS"          0   4  magic           b"KACB"
    4   1  format version  1                4   8  base offset     int64
    5   3  reserved        0                12  4  record count    int32, >= 1
    8   4  schema length   N                16  4  writer epoch    int32
    12  4  crc32           over 0..11       20  8  timestamp ms    int64
                           and the schema   28  4  payload length  L, int32
    16  N  writer schema   JSON (UTF-8)     32  4  crc32           over 0..31 and the payload
                                            36  L  payload         one Avro RecordBatch datum

The writer schema in the header is the self-contained `RecordBatch` schema every payload of the
segment was written with (as in Avro object container files); readers resolve it to their own.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from metadata_log.codec import BatchSchema, Codec
from metadata_log.records import RecordBatch

SEGMENT_MAGIC = b"KACS"
FORMAT_VERSION = 1
FRAME_MAGIC = b"KACB"
SEGMENT_HEADER = struct.Struct(">4sB3xII")
FRAME_HEADER = struct.Struct(">4sqiiqiI")
FRAME_HEADER_SIZE = FRAME_HEADER.size  # 36
MAX_SCHEMA_BYTES = 1 << 20
MAX_PAYLOAD_BYTES = (1 << 31) - 1


class FrameError(Exception):
    """A frame or header at `position` is not whole and valid; `torn` if it could be a cut-off write.

    `torn` is False when the bytes are intact (CRC matches) but break an invariant, e.g. a base
    offset out of sequence: that is corruption wherever it appears.
    """

    def __init__(self, position: int, reason: str, *, torn: bool = True) -> None:
        super().__init__(f"at byte position {position}: {reason}")
        self.position = position
        self.reason = reason
        self.torn = torn


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


def encode_segment_header(schema_json: str) -> bytes:
    """The header that opens a segment whose payloads are written with `schema_json`."""
    schema = schema_json.encode("utf-8")
    fixed = SEGMENT_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION, len(schema), 0)[:12]
    crc = zlib.crc32(schema, zlib.crc32(fixed))
    return fixed + struct.pack(">I", crc) + schema


def read_segment_header(f: BinaryIO) -> tuple[str, int]:
    """Read the header at the start of `f`; return (writer schema JSON, position of the first frame)."""
    f.seek(0)
    fixed = f.read(SEGMENT_HEADER.size)
    if len(fixed) < SEGMENT_HEADER.size:
        raise FrameError(0, f"short segment header ({len(fixed)} of {SEGMENT_HEADER.size} bytes)")
    magic, version, length, crc = SEGMENT_HEADER.unpack(fixed)
    if magic != SEGMENT_MAGIC:
        raise FrameError(0, f"bad segment magic {magic!r} (expected {SEGMENT_MAGIC!r})")
    if length > MAX_SCHEMA_BYTES:
        raise FrameError(0, f"implausible schema length {length} in the segment header")
    schema = f.read(length)
    if len(schema) < length:
        raise FrameError(0, f"short segment header schema ({len(schema)} of {length} bytes)")
    computed = zlib.crc32(schema, zlib.crc32(fixed[:12]))
    if computed != crc:
        raise FrameError(0, f"segment header CRC mismatch (stored {crc:#010x}, computed {computed:#010x})")
    if version != FORMAT_VERSION:
        raise FrameError(0, f"unsupported segment format version {version}", torn=False)
    try:
        text = schema.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrameError(0, f"segment header schema is not UTF-8: {exc}", torn=False) from exc
    return text, SEGMENT_HEADER.size + length


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
    head = FRAME_HEADER.pack(FRAME_MAGIC, base_offset, record_count, epoch, timestamp_ms, len(payload), 0)
    crc = zlib.crc32(payload, zlib.crc32(head[:32]))
    return head[:32] + struct.pack(">I", crc) + payload


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


def write_all(fd: int, data: bytes, position: int) -> None:
    """pwrite until every byte is written (a regular file may take a short write)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view = view[written:]
        position += written
