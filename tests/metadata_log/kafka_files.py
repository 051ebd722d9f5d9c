"""Test helper: write Apache Kafka KRaft files (record batch v2, metadata frames, control records) byte by byte
from spec §14, to build logs the broker would not write on demand (transactions, damage, gaps).

The layouts are checked against Kafka's own bytes in test_kafka_files.py: the golden snapshot and the
spec's verified record are rebuilt here and must come out identical.
"""

from __future__ import annotations

import struct
from pathlib import Path

from crc32c import crc32c

from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from kraftacl.metadata_log.uuids import text_to_uuid

T0 = 1_700_000_000_000
Record = tuple[bytes | None, bytes]  # (key, value)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varint(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def compact(text: str) -> bytes:
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def ace(record: AccessControlEntryRecord) -> bytes:
    """The metadata frame of an AccessControlEntryRecord v0 (apiKey 18)."""
    return (
        b"\x01\x12\x00"
        + text_to_uuid(record.id)
        + struct.pack(">b", record.resource_type)
        + compact(record.resource_name)
        + struct.pack(">b", record.pattern_type)
        + compact(record.principal)
        + compact(record.host)
        + struct.pack(">bb", record.operation, record.permission_type)
        + b"\x00"
    )


def remove(record: RemoveAccessControlEntryRecord) -> bytes:
    return b"\x01\x13\x00" + text_to_uuid(record.id) + b"\x00"


BEGIN = b"\x01\x17\x00\x00"
END = b"\x01\x18\x00\x00"
ABORT = b"\x01\x19\x00\x00"
NO_OP = b"\x01\x14\x00\x00"
FEATURE_LEVEL = b"\x01\x0c\x00" + compact("metadata.version") + b"\x00\x19\x00"  # FeatureLevelRecord v0


def control(kind: int, value: bytes) -> Record:
    return struct.pack(">hh", 0, kind), value


def snapshot_header(timestamp: int = T0) -> Record:
    return control(3, struct.pack(">hq", 0, timestamp) + b"\x00")


SNAPSHOT_FOOTER = control(4, struct.pack(">h", 0) + b"\x00")
LEADER_CHANGE = control(2, struct.pack(">hi", 0, 1) + b"\x02\x00\x00\x00\x01\x00\x02\x00\x00\x00\x01\x00\x00")


def batch(base: int, records: list[Record], *, is_control: bool = False, epoch: int = 1, ts: int = T0) -> bytes:
    """One record batch v2 holding `records` at offsets base, base + 1, ...; CRC-32C filled in."""
    body = bytearray()
    for delta, (key, value) in enumerate(records):
        inner = b"\x00" + varint(0) + varint(delta)
        inner += varint(-1) if key is None else varint(len(key)) + key
        inner += varint(len(value)) + value + varint(0)
        body += varint(len(inner)) + inner
    attributes = 0x20 if is_control else 0
    tail = struct.pack(">hiqqqhii", attributes, len(records) - 1, ts, ts, -1, -1, -1, len(records)) + bytes(body)
    head = struct.pack(">qiib", base, 4 + 1 + 4 + len(tail), epoch, 2)
    return head + struct.pack(">I", crc32c(tail)) + tail


def write_log(directory: Path, batches: list[bytes], base: int = 0) -> Path:
    """A `__cluster_metadata-0` directory holding one segment of these batches."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "quorum-state").write_text("{}")
    path = directory / f"{base:020d}.log"
    path.write_bytes(b"".join(batches))
    return path


def write_snapshot(
    directory: Path, end_offset: int, acls: list[AccessControlEntryRecord], epoch: int = 1, timestamp: int = T0
) -> Path:
    """A `.checkpoint`: header control batch, one data batch of the ACLs, footer control batch."""
    directory.mkdir(parents=True, exist_ok=True)
    parts = [batch(0, [snapshot_header(timestamp)], is_control=True, epoch=epoch, ts=timestamp)]
    if acls:
        parts.append(batch(1, [(None, ace(a)) for a in acls], epoch=epoch, ts=timestamp))
    parts.append(batch(1 + len(acls), [SNAPSHOT_FOOTER], is_control=True, epoch=epoch, ts=timestamp))
    path = directory / f"{end_offset:020d}-{epoch:010d}.checkpoint"
    path.write_bytes(b"".join(parts))
    return path
