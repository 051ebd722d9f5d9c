"""Metadata records (KIP-801 `AccessControlEntryRecord` / `RemoveAccessControlEntryRecord`) and record batches.

All types are frozen value objects, safe to share between threads. Enum fields carry Kafka's
wire codes as plain ints (ResourceType, PatternType, AclOperation, AclPermissionType; see the
spec §1), so this package needs nothing from `authorizer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime


@dataclass(frozen=True, slots=True)
class AccessControlEntryRecord:
    """An ACL was created (log) or exists (snapshot); `id` is Kafka's 22-character base64 Uuid text."""

    id: str
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord:
    """The ACL with this id was deleted (appears in the log only, never in a snapshot)."""

    id: str


MetadataRecord = AccessControlEntryRecord | RemoveAccessControlEntryRecord


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """One atomic unit of the log: records at offsets `base_offset .. base_offset + len(records) - 1`."""

    base_offset: int
    epoch: int
    timestamp_ms: int
    records: Sequence[MetadataRecord]  # a tuple, or LazyRecords decoded on first use
    # The bytes the batch takes in the log (frame header and payload); 0 where none are kept (MemoryLog).
    size_bytes: int = field(default=0, compare=False)

    @property
    def last_offset(self) -> int:
        """The offset of the last record (inclusive)."""
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:
        """The offset right after this batch (exclusive end)."""
        return self.base_offset + len(self.records)


def iso_time(timestamp_ms: int) -> str:
    """A batch timestamp as ISO-8601 UTC ("-" when unknown)."""
    if timestamp_ms < 0:
        return "-"
    return datetime.fromtimestamp(timestamp_ms / 1000, UTC).isoformat(timespec="milliseconds")
