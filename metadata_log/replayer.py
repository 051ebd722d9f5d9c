"""The ordered replayer: yields a log's committed batches strictly in offset order, below the high-water mark.

A `Replayer` is used by one thread at a time; it holds no state between calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.errors import DivergenceError, OffsetOutOfRangeError, ReplayError
from kraftacl.metadata_log.records import RecordBatch


@dataclass(frozen=True, slots=True)
class AppliedBatch:
    """What a reader applied last: the batch ending at `last_offset`, its epoch and (if known) its timestamp."""

    last_offset: int
    epoch: int
    timestamp_ms: int | None = None  # None after a snapshot load (its header's time need not be the batch's)


class Replayer:
    """Reads batches from a backend and checks the sequence: no gap, no duplicate, nothing above the HWM.

    Worked example, log batches [0..2] [3..3] [4..7], high-water mark 8:
      batches(0)        -> [0..2] [3..3] [4..7]
      batches(1)        -> [1..2] (the first batch cut to start at 1) [3..3] [4..7]
      batches(0, to=5)  -> [0..2] [3..3] [4..4] (cut: `to` is exclusive, offsets 5..7 are not applied)
      a backend yielding [0..2] [4..7] -> ReplayError "gap: expected offset 3, got batch 4..7"

    With `applied` (what the reader applied last), the log must still hold it: the read starts one
    offset earlier and the batch found there must end where `applied` ends, with its epoch (and
    timestamp); a log ending below `from_offset` or holding another batch there is a
    DivergenceError, raised before anything after it is yielded.
    """

    def __init__(self, backend: LogBackend) -> None:
        self.backend = backend
        self.ended_inside_batch = False  # the last batch yielded was cut at `to_offset`

    def batches(
        self, from_offset: int, to_offset: int | None = None, applied: AppliedBatch | None = None
    ) -> Iterator[RecordBatch]:
        """Batches covering [from_offset, min(to_offset, high-water mark)), in order, cut at both ends."""
        self.ended_inside_batch = False
        hwm = end = self.backend.high_watermark()
        if applied is not None and hwm < from_offset:
            raise DivergenceError(
                f"the log ends at offset {hwm}, below offset {from_offset} that this reader applied up to", hwm
            )
        if to_offset is not None:
            end = min(end, to_offset)
        expected = from_offset
        if expected >= end:
            return
        for batch in self._read(from_offset, applied):
            if batch.base_offset >= end:
                return
            overlaps = batch.base_offset < expected and expected != from_offset
            if batch.last_offset < expected or overlaps:
                raise ReplayError(
                    f"duplicate: batch {batch.base_offset}..{batch.last_offset} was already applied "
                    f"(expected offset {expected})",
                    offset=batch.base_offset,
                )
            if batch.base_offset > expected:
                raise ReplayError(
                    f"gap: expected offset {expected}, got batch {batch.base_offset}..{batch.last_offset}",
                    offset=expected,
                )
            self.ended_inside_batch = batch.next_offset > end
            if batch.base_offset < expected or batch.next_offset > end:
                records = batch.records[expected - batch.base_offset : end - batch.base_offset]
                batch = replace(batch, base_offset=expected, records=records)
            yield batch
            expected = batch.next_offset
            if expected >= end:
                return
        if expected < end:
            raise ReplayError(f"the log ended at offset {expected} below its high-water mark {end}", offset=expected)

    def _read(self, from_offset: int, applied: AppliedBatch | None) -> Iterator[RecordBatch]:
        """`backend.read(from_offset)`, after checking that the batch `applied` is still the one below it."""
        if applied is None or from_offset == 0:
            yield from self.backend.read(from_offset)
            return
        try:
            batches = self.backend.read(from_offset - 1)
        except OffsetOutOfRangeError:  # the log starts at from_offset (a snapshot replaced what was below)
            yield from self.backend.read(from_offset)
            return
        first = next(iter(batches), None)
        if first is None or first.last_offset != applied.last_offset or first.epoch != applied.epoch:
            raise DivergenceError(_differs(first, applied), applied.last_offset)
        if applied.timestamp_ms is not None and first.timestamp_ms != applied.timestamp_ms:
            raise DivergenceError(_differs(first, applied), applied.last_offset)
        yield from batches


def _differs(found: RecordBatch | None, applied: AppliedBatch) -> str:
    """The message of a DivergenceError: what was applied at an offset, and what the log holds there now."""
    when = "" if applied.timestamp_ms is None else f", time {applied.timestamp_ms}"
    mine = f"a batch ending at offset {applied.last_offset} (epoch {applied.epoch}{when})"
    if found is None:
        return f"this reader applied {mine}, which the log no longer holds"
    now = f"{found.base_offset}..{found.last_offset} (epoch {found.epoch}, time {found.timestamp_ms})"
    return f"this reader applied {mine}; the log now holds the batch {now} there: another history"
