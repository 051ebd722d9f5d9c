"""The one small interface every log backend implements (memory, file, kafka).

Implementations must be safe for one writer and any number of readers in the same process;
`read` returns batches that are immutable values.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kraftacl.metadata_log.records import MetadataRecord, RecordBatch


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an appended batch landed: `base_offset .. last_offset` inclusive."""

    base_offset: int
    last_offset: int
    epoch: int


class LogBackend(abc.ABC):
    """An append-only, offset-addressed log of record batches.

    Contract (checked by `tests/metadata_log/contract.py` for every backend):
    * `append` writes all records as one batch, atomically: a reader sees all of them or none.
      It returns only once the batch is durable (committed). Offsets are contiguous per batch.
    * `high_watermark()` is exclusive: the offset right after the last committed record.
    * `read(from_offset)` yields committed batches, in offset order, starting with the batch that
      contains `from_offset`, up to the high-water mark at the time of the call. It never yields
      an uncommitted or partial batch.
    * `log_start_offset()` is the first offset still held (retention may have removed older ones).
    """

    @abc.abstractmethod
    def append(self, records: Sequence[MetadataRecord], *, timestamp_ms: int | None = None) -> AppendResult:
        """Append one batch atomically and durably; return its offsets."""

    @abc.abstractmethod
    def read(self, from_offset: int = 0) -> Iterator[RecordBatch]:
        """Yield committed batches from the one containing `from_offset` up to the high-water mark.

        A batch's records may be decoded on first use (`LazyRecords`); a payload that cannot be
        decoded raises DecodeError, naming its base offset, at that point.
        """

    @abc.abstractmethod
    def high_watermark(self) -> int:
        """The exclusive end of the committed log (the next offset to be written)."""

    @abc.abstractmethod
    def log_start_offset(self) -> int:
        """The first offset the log still holds."""

    @property
    def log_id(self) -> str | None:
        """The log's identity (a Kafka Uuid text made when it was created), None where the backend keeps none.

        A snapshot names the log it was taken from; one naming another log is never used on this one.
        """
        return None

    @property
    def legacy(self) -> bool:
        """True when snapshots written without a log id may be this log's (it has no identity, or predates them)."""
        return True

    def wait_for_append(self, next_offset: int, timeout_s: float, interrupt: threading.Event | None = None) -> bool:
        """Block until a batch is committed at or after `next_offset` (a long poll), `timeout_s` has passed, or
        `interrupt` is set (a caller that must read the log's end now: serve's `min_offset` and `consistent`).

        True: the caller may read now (it waited, or the log already holds more). False: this backend
        cannot wait for an append (the default), so a follower polls it on an interval instead.
        """
        return False

    @abc.abstractmethod
    def close(self) -> None:
        """Release files, locks and connections; idempotent."""

    def __enter__(self) -> LogBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
