"""The ordered replayer: yields a log's committed batches strictly in offset order, below the high-water mark.

A `Replayer` is used by one thread at a time; it holds no state between calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from metadata_log.backend import LogBackend
from metadata_log.errors import ReplayError
from metadata_log.records import RecordBatch


class Replayer:
    """Reads batches from a backend and checks the sequence: no gap, no duplicate, nothing above the HWM.

    Worked example, log batches [0..2] [3..3] [4..7], high-water mark 8:
      batches(0)        -> [0..2] [3..3] [4..7]
      batches(1)        -> [1..2] (the first batch cut to start at 1) [3..3] [4..7]
      batches(0, to=5)  -> [0..2] [3..3] [4..4] (cut: `to` is exclusive, offsets 5..7 are not applied)
      a backend yielding [0..2] [4..7] -> ReplayError "gap: expected offset 3, got batch 4..7"
    """

    def __init__(self, backend: LogBackend) -> None:
        self.backend = backend

    def batches(self, from_offset: int, to_offset: int | None = None) -> Iterator[RecordBatch]:
        """Batches covering [from_offset, min(to_offset, high-water mark)), in order, cut at both ends."""
        end = self.backend.high_watermark()
        if to_offset is not None:
            end = min(end, to_offset)
        expected = from_offset
        if expected >= end:
            return
        for batch in self.backend.read(from_offset):
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
            if batch.base_offset < expected or batch.next_offset > end:
                records = batch.records[expected - batch.base_offset : end - batch.base_offset]
                batch = replace(batch, base_offset=expected, records=records)
            yield batch
            expected = batch.next_offset
            if expected >= end:
                return
        if expected < end:
            raise ReplayError(f"the log ended at offset {expected} below its high-water mark {end}", offset=expected)
