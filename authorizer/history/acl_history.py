"""The history of ACL ids over a metadata log: the offset, epoch and time of every record that added or removed one.

Pure functions over a log backend; each call reads the log once, from its start offset up to its
high-water mark (or a given offset), through the replayer's ordering checks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.records import batch_rows
from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.pace import breathe
from kraftacl.metadata_log.replayer import Replayer


@dataclass(frozen=True, slots=True)
class AclEvent:
    """One record about an id: `acl` is the ACL it added, or None for a removal."""

    offset: int
    epoch: int
    timestamp_ms: int
    acl: StandardAcl | None

    @property
    def added(self) -> bool:
        """True for an AccessControlEntryRecord, False for a RemoveAccessControlEntryRecord."""
        return self.acl is not None


@dataclass(frozen=True, slots=True)
class AclHistory:
    """Every event of each asked id between `log_start` (the first offset the log still holds: anything older
    survives only in snapshots) and `end` (exclusive)."""

    log_start: int
    end: int
    events: dict[str, tuple[AclEvent, ...]]


def acl_history(backend: LogBackend, acl_ids: Iterable[str], to_offset: int | None = None) -> AclHistory:
    """Scan the log once for the records that name any of `acl_ids` (each id's events in offset order)."""
    wanted = frozenset(acl_ids)
    found: dict[str, list[AclEvent]] = {acl_id: [] for acl_id in wanted}
    start = backend.log_start_offset()
    end = backend.high_watermark() if to_offset is None else to_offset
    for batch in Replayer(backend).batches(start, end):
        breathe()  # a paced thread (serve's history thread) rests here
        ids, rows = batch_rows(batch.records)
        if wanted.isdisjoint(ids):
            continue
        for position, acl_id in enumerate(ids):
            if acl_id in wanted:
                event = AclEvent(batch.base_offset + position, batch.epoch, batch.timestamp_ms, rows[position])
                found[acl_id].append(event)
    return AclHistory(start, end, {acl_id: tuple(events) for acl_id, events in found.items()})
