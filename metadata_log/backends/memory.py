"""`MemoryLog`: the reference `LogBackend`, holding batches as values in a list (nothing is durable).

Thread-safe: one lock guards the batch list; `read` snapshots the committed length under the lock
and then iterates without it, since committed batches are immutable and the list only grows.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Self

from kraftacl.metadata_log.backend import AppendResult, LogBackend
from kraftacl.metadata_log.errors import LogClosedError, OffsetOutOfRangeError
from kraftacl.metadata_log.records import (
    AccessControlEntryRecord,
    MetadataRecord,
    RecordBatch,
    RemoveAccessControlEntryRecord,
)


def check_records(records: Sequence[MetadataRecord]) -> tuple[MetadataRecord, ...]:
    """The records as a tuple; ValueError for an empty batch, TypeError for a non-record."""
    batch = tuple(records)
    if not batch:
        raise ValueError("cannot append an empty batch: a batch holds at least one record")
    for index, record in enumerate(batch):
        if type(record) is not AccessControlEntryRecord and type(record) is not RemoveAccessControlEntryRecord:
            raise TypeError(f"record {index} of the batch is not a metadata record: {type(record).__name__}")
    return batch


def now_ms() -> int:
    """Wall-clock time in milliseconds, the default batch timestamp."""
    return time.time_ns() // 1_000_000


class MemoryLog(LogBackend):
    """An in-memory log; `epoch` is the writer epoch stamped on every batch."""

    def __init__(self, *, epoch: int = 0, log_start_offset: int = 0) -> None:
        self._lock = threading.Lock()
        self._epoch = epoch
        self._start = log_start_offset
        self._batches: list[RecordBatch] = []
        self._bases: list[int] = []  # base offsets, parallel to _batches, for bisect
        self._hwm = log_start_offset
        self._closed = False

    @property
    def epoch(self) -> int:
        """The writer epoch of this log."""
        return self._epoch

    def append(self, records: Sequence[MetadataRecord], *, timestamp_ms: int | None = None) -> AppendResult:
        batch_records = check_records(records)
        ts = now_ms() if timestamp_ms is None else timestamp_ms
        with self._lock:
            if self._closed:
                raise LogClosedError("MemoryLog")
            batch = RecordBatch(self._hwm, self._epoch, ts, batch_records)
            self._batches.append(batch)
            self._bases.append(batch.base_offset)
            self._hwm = batch.next_offset
        return AppendResult(batch.base_offset, batch.last_offset, batch.epoch)

    def read(self, from_offset: int = 0) -> Iterator[RecordBatch]:
        with self._lock:
            if self._closed:
                raise LogClosedError("MemoryLog")
            if not self._start <= from_offset <= self._hwm:
                raise OffsetOutOfRangeError(from_offset, self._start, self._hwm)
            end = len(self._batches)
            # The batch holding from_offset is the last one whose base is <= from_offset;
            # from_offset == hwm holds no batch yet.
            first = end if from_offset == self._hwm else bisect.bisect_right(self._bases, from_offset) - 1
        return self._iterate(first, end)

    def _iterate(self, first: int, end: int) -> Iterator[RecordBatch]:
        batches = self._batches
        for index in range(first, end):
            yield batches[index]

    def high_watermark(self) -> int:
        with self._lock:
            return self._hwm

    def log_start_offset(self) -> int:
        return self._start

    def __enter__(self) -> Self:  # narrower than LogBackend's, so `with MemoryLog() as log` keeps the type
        return self

    def close(self) -> None:
        with self._lock:
            self._closed = True
