"""Whether a snapshot belongs to a log at one of its batch boundaries: Kafka's snapshot id rule plus log identity.

Pure functions over a snapshot header and a read-only view of the log; thread-safe as long as the
view is (a `BackendView` reads through its backend's own thread-safe `read`).

A snapshot (end offset E, epoch P, log id L) is usable on a log only if
  * L is the log's id (or the snapshot has no id and the log predates identities);
  * E is at or below the log start (retention removed what it covers, the snapshot replaces it), or
  * E is a batch boundary of the log, the end of the batch holding offset E - 1, and P is that
    batch's epoch (a snapshot ending inside a batch describes a state no node ever had; one with
    another epoch was taken from another history).
A snapshot of this log ending beyond the log's end is worse than unusable: the log lost batches it
acknowledged (`LOST`). Worked example, batches [0..2] epoch 1, [3..3] epoch 1, [4..7] epoch 2:

    end 3, epoch 1  usable            end 4, epoch 2  WRONG_EPOCH (the batch [3..3] has epoch 1)
    end 6, epoch 2  INSIDE_BATCH      end 9, epoch 2  LOST (the log ends at 8)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.errors import OffsetOutOfRangeError
from kraftacl.snapshots.format import SnapshotHeader


class Problem(StrEnum):
    """Why a snapshot cannot be used on a log."""

    DAMAGED = "damaged"  # the file does not validate (or is not a kraft-acl snapshot)
    MISNAMED = "misnamed"  # its name and its header disagree
    FOREIGN = "foreign"  # another log's, or without the identity this log requires
    LOST = "lost"  # this log's, ending beyond the log's end: acknowledged batches were lost
    INSIDE_BATCH = "inside-batch"
    WRONG_EPOCH = "wrong-epoch"


@dataclass(frozen=True, slots=True)
class Unusable:
    """A snapshot's problem with a log, and the sentence that says so."""

    problem: Problem
    reason: str


class LogView(Protocol):
    """What the rule needs of a log: identity, extent, and the batch below an offset."""

    @property
    def log_id(self) -> str | None: ...

    @property
    def legacy(self) -> bool: ...

    def log_start_offset(self) -> int: ...

    def high_watermark(self) -> int: ...

    def batch_below(self, end_offset: int) -> tuple[int, int, int]:
        """(base offset, next offset, epoch) of the batch holding offset `end_offset - 1`."""
        ...


class BackendView:
    """A `LogView` over any `LogBackend` (one `read` per boundary asked about)."""

    def __init__(self, backend: LogBackend) -> None:
        self.backend = backend

    @property
    def log_id(self) -> str | None:
        return self.backend.log_id

    @property
    def legacy(self) -> bool:
        return self.backend.legacy

    def log_start_offset(self) -> int:
        return self.backend.log_start_offset()

    def high_watermark(self) -> int:
        return self.backend.high_watermark()

    def batch_below(self, end_offset: int) -> tuple[int, int, int]:
        batch = next(iter(self.backend.read(end_offset - 1)), None)
        if batch is None:  # pragma: no cover - read(o) below the high-water mark yields the batch holding o
            raise OffsetOutOfRangeError(end_offset - 1, self.log_start_offset(), self.high_watermark())
        return batch.base_offset, batch.next_offset, batch.epoch


def identity_problem(header: SnapshotHeader, log_id: str | None, legacy: bool) -> Unusable | None:
    """Unusable(FOREIGN) unless the snapshot names this log (an id-less snapshot only fits a legacy log)."""
    if header.log_id == log_id:
        return None
    if header.log_id is None:
        if legacy:
            return None
        return Unusable(Problem.FOREIGN, f"it has no log id, and this log ({log_id}) was created with one")
    if log_id is None:
        return Unusable(Problem.FOREIGN, f"it belongs to log {header.log_id}, and this log has no identity")
    return Unusable(Problem.FOREIGN, f"it belongs to log {header.log_id}, not to this log ({log_id})")


def unusable(header: SnapshotHeader, view: LogView) -> Unusable | None:
    """None when the snapshot may be loaded on this log, else the problem (see the module docstring)."""
    problem = identity_problem(header, view.log_id, view.legacy)
    if problem is not None:
        return problem
    end, hwm = header.end_offset, view.high_watermark()
    if end > hwm:
        return Unusable(
            Problem.LOST,
            f"it ends at offset {end}, beyond the log's end {hwm}: the log lost acknowledged batches [{hwm}, {end})",
        )
    if end <= view.log_start_offset():
        return None
    base, nxt, epoch = view.batch_below(end)
    if nxt != end:
        return Unusable(
            Problem.INSIDE_BATCH,
            f"it ends at offset {end}, inside the batch at offsets {base}..{nxt - 1} (no state ever existed there)",
        )
    if epoch != header.epoch:
        return Unusable(
            Problem.WRONG_EPOCH,
            f"its epoch is {header.epoch}, but the batch below offset {end} ({base}..{nxt - 1}) has epoch {epoch}",
        )
    return None
