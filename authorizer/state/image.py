"""The immutable ACL image (id -> ACL plus provenance) and the short-lived delta that replays records onto it.

`AclsImage` and `Provenance` are immutable values shared freely between threads; an `AclsDelta`
belongs to the one thread that replays into it.
"""

from __future__ import annotations

import heapq
from array import array
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter

from kraftacl.authorizer.errors import ImageError
from kraftacl.authorizer.index.native_rows import add_columns, apply_new_rows, hashed_dict
from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.index.steps import chunks, listed
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.records import COLUMN_CODES, UNKNOWN_CODES, acl_from_record, batch_rows
from kraftacl.metadata_log.pace import breathe
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord
from kraftacl.snapshots.columns import AclColumns
from kraftacl.snapshots.format import CHUNK_RECORDS

# ACLs per chunk of a node's snapshot: a chunk is built and encoded in a few C calls over its rows, so a snapshot
# written by a serving node (after an import) gives the GIL back every few milliseconds (10,000 rows: 10-16 ms).
SNAPSHOT_ROWS = min(2048, CHUNK_RECORDS)

_FEW = 8  # a delta of at most this many ids is applied one id at a time (`AclsDelta.apply`)
# The order of a snapshot's records: the bulk build's grouping (see AclsImage.chunks).
_SNAPSHOT_ORDER = attrgetter("resource_type", "pattern_type", "principal")
_GROUP_STEP = 2048  # ACLs grouped, or group keys sorted, per C call in `chunks` (under a millisecond here)


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

    acls: OverlayMap[str, StandardAcl]
    provenance: Provenance

    @staticmethod
    def empty() -> AclsImage:
        """The image before any record."""
        return AclsImage(OverlayMap(), Provenance())

    def records(self) -> Iterable[AccessControlEntryRecord]:
        """The image as snapshot records (one AccessControlEntryRecord per ACL), in `chunks` order."""
        return chain.from_iterable(chunk.records() for chunk in self.chunks())

    def chunks(self, rows: int = SNAPSHOT_ROWS) -> Iterator[AclColumns]:
        """The image as snapshot columns, `rows` ACLs per chunk, grouped by `_SNAPSHOT_ORDER`.

        Written in that order, a snapshot loads with each principal's ACLs of a type side by side
        in the loading node's memory, which is how the bulk index build walks them: a cold start
        from a million ACLs builds about a quarter faster than from id order. Grouping, not sorting:
        one pass, then the distinct (type, pattern, principal) keys are sorted.
        """
        ids = listed(self.acls)
        acls = listed(self.acls.values())
        # positions as C integers (no int object per ACL to make and free: a free of 500k ints is one C call)
        groups: defaultdict[tuple[object, ...], array[int]] = defaultdict(lambda: array("I"))
        for start in range(0, len(acls), _GROUP_STEP):  # C passes of under a millisecond each (`index.steps`)
            step = acls[start : start + _GROUP_STEP]
            positions = range(start, start + _GROUP_STEP)
            deque(map(array.append, map(groups.__getitem__, map(_SNAPSHOT_ORDER, step)), positions), 0)
            breathe()
        keys = listed(groups)
        runs = [sorted(keys[start : start + _GROUP_STEP]) for start in range(0, len(keys), _GROUP_STEP)]
        order = array("I")
        for number, key in enumerate(heapq.merge(*runs)):  # sorted runs merged, not one sort of every key in one C call
            order.extend(groups[key])
            if number % _GROUP_STEP == 0:
                breathe()
        del groups, keys, runs
        for start in range(0, len(order), rows):
            part = order[start : start + rows]
            types, names, patterns, principals, hosts, operations, permissions = zip(
                *map(acls.__getitem__, part), strict=True
            )
            yield AclColumns(
                list(map(ids.__getitem__, part)),
                list(map(int, types)),
                list(names),
                list(map(int, patterns)),
                list(principals),
                list(hosts),
                list(map(int, operations)),
                list(map(int, permissions)),
            )
            breathe()

    def __len__(self) -> int:
        return len(self.acls)


class AclsDelta:
    """Changes replayed in log order on top of a base image; `apply` yields the next image.

    Invariants checked per record, with the offset in the message: an add must use a new id, a
    remove must name an existing one. An add followed by a remove of the same id cancels out.
    Records arrive as rows (`replay_rows`: an id and its StandardAcl, or None for a remove), which
    the log decodes straight from its payloads; `replay` and `replay_batch` take records.
    """

    def __init__(self, base: AclsImage) -> None:
        self.base = base
        # id -> its ACL now, or None: removed from the base. An initial replay fills it with every id.
        self._changes: dict[str, StandardAcl | None] = {} if len(base.acls) else hashed_dict()
        self._lent = False  # True once an image adopted `_changes`: copied before the next change
        self._snapshot_ids: set[str] = set()  # ids a snapshot replay has listed (see replay_snapshot)

    def replay(self, record: MetadataRecord, offset: int) -> None:
        """Apply one record at `offset`; raise ImageError on a broken invariant."""
        self.replay_batch((record,), offset)

    def replay_batch(self, records: Sequence[MetadataRecord], base_offset: int) -> None:
        """Apply records at offsets `base_offset`, `base_offset + 1`, ...; ImageError names the offset."""
        self.replay_rows(*batch_rows(records), base_offset)

    def replay_rows(self, ids: list[str], rows: list[StandardAcl | None], base_offset: int) -> None:
        """Apply rows in order (an ACL: added with that id; None: the id removed); ImageError names the offset."""
        changes = self._writable()
        if not len(self.base.acls):  # initial replay: the delta holds only live adds (a compiled loop)
            position = apply_new_rows(changes, ids, rows)
            if position >= 0:
                self._fail(ids[position], rows[position] is not None, base_offset + position)
            return
        in_base = self.base.acls.__contains__
        for position, (acl_id, acl) in enumerate(zip(ids, rows, strict=True)):
            if acl is not None:
                if changes.get(acl_id) is not None or (acl_id not in changes and in_base(acl_id)):
                    self._fail(acl_id, True, base_offset + position)
                changes[acl_id] = acl
            elif acl_id in changes:
                if changes[acl_id] is None:
                    self._fail(acl_id, False, base_offset + position)
                if in_base(acl_id):
                    changes[acl_id] = None
                else:
                    del changes[acl_id]
            elif in_base(acl_id):
                changes[acl_id] = None
            else:
                self._fail(acl_id, False, base_offset + position)

    def _writable(self) -> dict[str, StandardAcl | None]:
        """`_changes`, copied first if an image adopted it (copy-on-write: the image never changes)."""
        if self._lent:
            self._changes, self._lent = dict(self._changes), False
        return self._changes

    def _fail(self, acl_id: str, add: bool, offset: int) -> None:
        if add:
            existing = self._changes.get(acl_id) or self.base.acls.get(acl_id)
            raise ImageError(
                f"offset {offset}: AccessControlEntryRecord adds ACL {acl_id}, which already exists ({existing})"
            )
        raise ImageError(f"offset {offset}: RemoveAccessControlEntryRecord names ACL {acl_id}, which does not exist")

    def replay_snapshot(self, record: AccessControlEntryRecord, number: int) -> None:
        """One record of a snapshot: "this ACL exists". Ids already in the base are kept or replaced."""
        if record.id in self._snapshot_ids:
            raise ImageError(f"snapshot record {number}: ACL {record.id} appears twice in the snapshot")
        self._snapshot_ids.add(record.id)
        acl = acl_from_record(record)
        if self.base.acls.get(record.id) == acl:
            self._writable().pop(record.id, None)
        else:
            self._writable()[record.id] = acl

    def finish_snapshot(self) -> None:
        """After replaying a snapshot: every base ACL the snapshot did not contain is removed."""
        for acl_id in self.base.acls:
            if acl_id not in self._snapshot_ids:
                self._writable()[acl_id] = None

    def net_changes(self) -> tuple[list[str], list[tuple[str, StandardAcl]]]:
        """Ids removed from the base and (id, ACL) pairs added to it."""
        changes = self._changes
        base = self.base.acls
        # An id removed and re-added within the delta is both removed and added.
        removed = [acl_id for acl_id, acl in changes.items() if acl is None or acl_id in base]
        added = [(acl_id, acl) for acl_id, acl in changes.items() if acl is not None]
        return removed, added

    def is_empty(self) -> bool:
        """True when nothing changed."""
        return not self._changes

    def size(self) -> int:
        """How many ids the delta changes."""
        return len(self._changes)

    def apply(self, provenance: Provenance) -> AclsImage:
        """The next image; the base is untouched. A change as large as a quarter of the base rebuilds the map."""
        changes = self._changes
        base = self.base.acls
        if len(changes) <= _FEW:  # one persistent update per id: cheaper than a mutation for a few
            kept = base
            for acl_id, change in changes.items():
                kept = kept.delete(acl_id) if change is None else kept.set(acl_id, change)
            return AclsImage(kept, provenance)
        if len(changes) < max(len(base), 1024) // 4:
            acls = base.mutate()
            for step in chunks(changes.items()):  # a paced thread rests between two steps
                for acl_id, acl in step:
                    if acl is None:
                        del acls[acl_id]
                    else:
                        acls[acl_id] = acl
            return AclsImage(acls.finish(), provenance)
        if not len(base):  # initial replay: the delta holds only live adds; the image adopts them
            self._lent = True
            return AclsImage(OverlayMap(changes), provenance)  # type: ignore[arg-type]
        fresh: dict[str, StandardAcl] = {}
        for unchanged in chunks(base.items()):  # not one C call over the whole base (`index.steps`)
            fresh.update(unchanged)
        for step in chunks(changes.items()):
            for acl_id, acl in step:
                if acl is None:
                    del fresh[acl_id]
                else:
                    fresh[acl_id] = acl
        return AclsImage(OverlayMap(fresh), provenance)


def image_from_snapshot(records: Iterable[AccessControlEntryRecord]) -> OverlayMap[str, StandardAcl]:
    """The id -> ACL map of a snapshot, built in one pass; an id listed twice is an ImageError.

    Built as a plain dict that the OverlayMap adopts without copying.
    """
    acls: dict[str, StandardAcl] = hashed_dict()
    convert = acl_from_record
    for record in records:
        acl_id = record.id
        if acl_id in acls:
            raise ImageError(f"snapshot record {len(acls)}: ACL {acl_id} appears twice in the snapshot")
        acls[acl_id] = convert(record)
    return OverlayMap(acls)


def image_from_columns(chunks: Iterable[AclColumns]) -> OverlayMap[str, StandardAcl]:
    """Like `image_from_snapshot`, from columnar chunks: one compiled loop per chunk (`bulk_rows.add_columns`)."""
    acls: dict[str, StandardAcl] = hashed_dict()
    total = 0
    for chunk in chunks:
        position = add_columns(acls, chunk, COLUMN_CODES, UNKNOWN_CODES, StandardAcl)
        if position >= 0:
            number = total + position
            raise ImageError(f"snapshot record {number}: ACL {chunk.ids[position]} appears twice in the snapshot")
        total += chunk.rows
    return OverlayMap(acls)
