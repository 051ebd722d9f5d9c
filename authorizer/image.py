"""The immutable ACL image (id -> ACL plus provenance) and the short-lived delta that replays records onto it.

`AclsImage` and `Provenance` are immutable values shared freely between threads; an `AclsDelta`
belongs to the one thread that replays into it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import immutables

from authorizer.errors import ImageError
from authorizer.model import StandardAcl
from authorizer.records import acl_from_record, record_from_acl
from metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where an image came from: the last log offset it includes, that batch's epoch and timestamp."""

    last_offset: int = -1
    epoch: int = -1
    timestamp_ms: int = -1

    @property
    def next_offset(self) -> int:
        """The first offset not yet in the image (a snapshot's exclusive end offset)."""
        return self.last_offset + 1


@dataclass(frozen=True, slots=True)
class AclsImage:
    """Every ACL by id at one point of the log."""

    acls: immutables.Map[str, StandardAcl]
    provenance: Provenance

    @staticmethod
    def empty() -> AclsImage:
        """The image before any record."""
        return AclsImage(immutables.Map(), Provenance())

    def records(self) -> Iterable[AccessControlEntryRecord]:
        """The image as snapshot records (one AccessControlEntryRecord per ACL)."""
        return (record_from_acl(acl_id, acl) for acl_id, acl in self.acls.items())

    def __len__(self) -> int:
        return len(self.acls)


class AclsDelta:
    """Changes replayed in log order on top of a base image; `apply` yields the next image.

    Invariants checked per record, with the offset in the message: an add must use a new id, a
    remove must name an existing one. An add followed by a remove of the same id cancels out.
    """

    def __init__(self, base: AclsImage) -> None:
        self.base = base
        self._changes: dict[str, StandardAcl | None] = {}
        self._snapshot_ids: set[str] = set()  # ids a snapshot replay has listed (see replay_snapshot)

    def _current(self, acl_id: str) -> StandardAcl | None:
        if acl_id in self._changes:
            return self._changes[acl_id]
        return self.base.acls.get(acl_id)

    def replay(self, record: MetadataRecord, offset: int) -> None:
        """Apply one record at `offset`; raise ImageError on a broken invariant."""
        if isinstance(record, AccessControlEntryRecord):
            existing = self._current(record.id)
            if existing is not None:
                raise ImageError(
                    f"offset {offset}: AccessControlEntryRecord adds ACL {record.id}, which already exists ({existing})"
                )
            self._changes[record.id] = acl_from_record(record)
        elif isinstance(record, RemoveAccessControlEntryRecord):
            if self._current(record.id) is None:
                raise ImageError(
                    f"offset {offset}: RemoveAccessControlEntryRecord names ACL {record.id}, which does not exist"
                )
            if record.id in self.base.acls:
                self._changes[record.id] = None
            else:
                del self._changes[record.id]
        else:  # pragma: no cover - the codec yields only the two record types
            raise ImageError(f"offset {offset}: unexpected record type {type(record).__name__}")

    def replay_snapshot(self, record: AccessControlEntryRecord, number: int) -> None:
        """One record of a snapshot: "this ACL exists". Ids already in the base are kept or replaced."""
        if record.id in self._snapshot_ids:
            raise ImageError(f"snapshot record {number}: ACL {record.id} appears twice in the snapshot")
        self._snapshot_ids.add(record.id)
        acl = acl_from_record(record)
        if self.base.acls.get(record.id) == acl:
            self._changes.pop(record.id, None)
        else:
            self._changes[record.id] = acl

    def finish_snapshot(self) -> None:
        """After replaying a snapshot: every base ACL the snapshot did not contain is removed."""
        for acl_id in self.base.acls:
            if acl_id not in self._snapshot_ids:
                self._changes[acl_id] = None

    def net_changes(self) -> tuple[list[str], list[tuple[str, StandardAcl]]]:
        """Ids removed from the base and (id, ACL) pairs added to it."""
        base = self.base.acls
        # An id removed and re-added within the delta is both removed and added.
        removed = [acl_id for acl_id, acl in self._changes.items() if acl is None or acl_id in base]
        added = [(acl_id, acl) for acl_id, acl in self._changes.items() if acl is not None]
        return removed, added

    def is_empty(self) -> bool:
        """True when nothing changed."""
        return not self._changes

    def apply(self, provenance: Provenance) -> AclsImage:
        """The next image; the base is untouched."""
        acls = self.base.acls.mutate()
        for acl_id, acl in self._changes.items():
            if acl is None:
                del acls[acl_id]
            else:
                acls[acl_id] = acl
        return AclsImage(acls.finish(), provenance)


def image_from_snapshot(records: Iterable[AccessControlEntryRecord]) -> immutables.Map[str, StandardAcl]:
    """The id -> ACL map of a snapshot, built in one pass; an id listed twice is an ImageError.

    Built as a plain dict and handed to `immutables.Map` once: a per-record Map mutation and call to
    `acl_from_record` cost as much as decoding does at a million ACLs.
    """
    acls: dict[str, StandardAcl] = {}
    convert = acl_from_record
    for record in records:
        acl_id = record.id
        if acl_id in acls:
            raise ImageError(f"snapshot record {len(acls)}: ACL {acl_id} appears twice in the snapshot")
        acls[acl_id] = convert(record)
    return immutables.Map(acls)
