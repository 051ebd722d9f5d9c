"""Deterministic records and batch sizes for the metadata log tests, the kill-test writer and the probes.

Pure functions: the same offset always gives the same record, so a test can check any batch read
back against what the writer must have appended, without sharing state with it.
"""

from __future__ import annotations

import hashlib

from kraftacl.metadata_log.codec.avro import uuid_to_text
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord


def _digest(value: int, salt: bytes = b"") -> bytes:
    return hashlib.blake2b(salt + value.to_bytes(8, "big"), digest_size=16).digest()


def id_at(offset: int) -> str:
    """A valid Kafka Uuid text derived from the offset."""
    raw = bytearray(_digest(offset))
    raw[0] &= 0x7F  # never text starting with '-'
    raw[15] |= 0x02  # never zero, never METADATA_TOPIC_ID (0...01)
    return uuid_to_text(bytes(raw))


def record_at(offset: int) -> MetadataRecord:
    """The record the tests expect at `offset`: mostly ACLs, every 7th a removal."""
    if offset % 7 == 6:
        return RemoveAccessControlEntryRecord(id_at(offset - 1))
    return AccessControlEntryRecord(
        id=id_at(offset),
        resource_type=2 + offset % 4,
        resource_name=f"topic-{offset}-é" if offset % 3 else "",
        pattern_type=3 + offset % 2,
        principal=f"User:user-{offset % 97}",
        host="*" if offset % 5 else "10.0.0.1",
        operation=2 + offset % 11,
        permission_type=2 + offset % 2,
    )


def records_for(base_offset: int, count: int) -> list[MetadataRecord]:
    """The records of a batch at `base_offset`."""
    return [record_at(base_offset + i) for i in range(count)]


def batch_size_at(base_offset: int, largest: int = 40) -> int:
    """A batch size in 1..largest derived from the base offset (1 in 8 batches is a single record)."""
    d = _digest(base_offset, b"size")
    return 1 if d[0] % 8 == 0 else 1 + d[1] % largest


def acl_batch(n: int, seed: int = 0) -> list[MetadataRecord]:
    """`n` realistic ACL records (for throughput probes)."""
    return [
        AccessControlEntryRecord(
            id=id_at(seed * 1_000_003 + i),
            resource_type=2,
            resource_name=f"payments.orders.v{i % 50}.partition-{i}",
            pattern_type=3 + i % 2,
            principal=f"User:service-{i % 200}",
            host="*",
            operation=2 + i % 11,
            permission_type=3,
        )
        for i in range(n)
    ]
