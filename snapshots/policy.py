"""When to take a snapshot: every N records or bytes of log since the last one (Kafka's
`metadata.log.max.record.bytes.between.snapshots` idea).

Bytes are what the applied batches take in their log (`RecordBatch.size_bytes`: frame header and
payload, in the file log and the Kafka topic alike); a memory log keeps no bytes and counts none.

A policy object is owned by the one thread that publishes images.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SnapshotPolicy:
    """Counts what was applied since the last snapshot; `due()` says when to write the next."""

    max_records: int = 100_000
    max_bytes: int = 20 * 1024 * 1024
    records_since: int = 0
    bytes_since: int = 0

    def record_applied(self, records: int, approx_bytes: int = 0) -> None:
        """Account for newly applied records."""
        self.records_since += records
        self.bytes_since += approx_bytes

    def due(self) -> bool:
        """True when either threshold is reached."""
        return self.records_since >= self.max_records or self.bytes_since >= self.max_bytes

    def reset(self) -> None:
        """A snapshot was just written."""
        self.records_since = self.bytes_since = 0
