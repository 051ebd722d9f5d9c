"""The immutable ACL index the StandardAuthorizer decides against: built once, then updated copy-on-write.

An `AclIndex` is never mutated after construction, so any number of threads may read one while a
writer builds the next (one reference swap publishes it; ARCHITECTURE.md "one consistent view").

Layout, per resource type (`TypeIndex`):

    literal   name -> ACLs                every principal; answers "does any ACL cover this name?"
    prefixed  name -> ACLs                PREFIXED (and hand-made UNKNOWN-pattern) ACLs
    prefix_lengths (3, 4, 19)             distinct prefixed-name lengths: a name N is covered by a
                                          prefix ACL iff N[:L] is in `prefixed` for some L <= len(N)
    principals Map principal -> PrincipalView

and per (resource type, principal) a `PrincipalView` of plain dicts `name -> Grants`, where
`Grants` maps a host to the grant mask of `authorizer.operations`. Worked example, bob's view of
TOPIC after `foo LITERAL READ ALLOW` and `fo PREFIXED WRITE DENY from 10.0.0.1`:

    literal  {"foo": {"*": 1<<READ}}
    prefixed {"fo": {"10.0.0.1": 1<<(16+WRITE)}}          lengths (2,)

Authorizing bob READ TOPIC `foobar` from 10.0.0.1 probes literal "foobar" and "*", then prefixed
"fo" (L=2): mask = 1<<(16+WRITE); DENY test for READ fails, ALLOW test fails: no ACL of bob applies.
`by_id`, `literal` and `prefixed` are OverlayMaps (a dict adopted at build time plus a HAMT of later
changes) and `principals` an `immutables.Map`, so an update copies O(log n) nodes; the dicts inside
a view are copied when that view changes, which costs O(ACLs of that principal and type). The bulk
build (snapshot load, initial replay) is one compiled pass over the ACLs, in `index_build`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import immutables

from authorizer.errors import ImageError
from authorizer.index_build import build_types
from authorizer.model import PatternType, StandardAcl
from authorizer.overlay import OverlayMap
from authorizer.type_index import (
    N_TYPES,
    AclId,
    Bucket,
    Grants,
    PrincipalView,
    TypeIndex,
    bucket_of,
    grants_of,
    kind_of,
    members,
)

__all__ = ["AclId", "AclIndex", "Bucket", "Grants", "PrincipalView", "TypeIndex", "members"]


class AclIndex:
    """The whole authorizer state: ACLs by id plus one TypeIndex per resource type code."""

    __slots__ = ("by_id", "types")

    def __init__(self, by_id: OverlayMap[AclId, StandardAcl], types: tuple[TypeIndex | None, ...]):
        self.by_id = by_id
        self.types = types

    @staticmethod
    def empty() -> AclIndex:
        """An index with no ACLs."""
        return AclIndex(OverlayMap(), (None,) * N_TYPES)

    @staticmethod
    def build(
        acls: Iterable[tuple[AclId, StandardAcl]], by_id: OverlayMap[AclId, StandardAcl] | None = None
    ) -> AclIndex:
        """Build from scratch (snapshot load, bulk replay); ImageError on a duplicate id or duplicate content.

        `by_id`, when given, is an already-checked id map holding exactly `acls` (an AclsImage's).
        """
        if by_id is None:
            pairs = list(acls)
            ids = dict(pairs)
            if len(ids) != len(pairs):
                seen: set[AclId] = set()
                for acl_id, _ in pairs:
                    if acl_id in seen:
                        raise ImageError(f"cannot add ACL {acl_id}: an ACL with that id already exists ({ids[acl_id]})")
                    seen.add(acl_id)
            by_id = OverlayMap(ids)
        return AclIndex(by_id, build_types(by_id.values()))

    def __len__(self) -> int:
        return len(self.by_id)

    def apply(
        self,
        removed: Iterable[AclId],
        added: Iterable[tuple[AclId, StandardAcl]],
        by_id_after: OverlayMap[AclId, StandardAcl] | None = None,
    ) -> AclIndex:
        """A new index with `removed` ids deleted, then `added` inserted; `self` is left untouched.

        `by_id_after`, when given, is the caller's already-checked id map after the change (an
        AclsImage's), shared instead of building a second copy.
        """
        per_type: dict[int, tuple[list[StandardAcl], list[StandardAcl]]] = {}
        if by_id_after is None:
            by_id = self.by_id.mutate()
            for acl_id in removed:
                acl = by_id.get(acl_id)
                if acl is None:
                    raise ImageError(f"cannot remove ACL {acl_id}: no ACL with that id exists")
                del by_id[acl_id]
                per_type.setdefault(acl.resource_type, ([], []))[0].append(acl)
            for acl_id, acl in added:
                if acl_id in by_id:
                    raise ImageError(f"cannot add ACL {acl_id}: an ACL with that id already exists ({by_id[acl_id]})")
                by_id[acl_id] = acl
                per_type.setdefault(acl.resource_type, ([], []))[1].append(acl)
            by_id_after = by_id.finish()
        else:
            for acl_id in removed:
                per_type.setdefault(self.by_id[acl_id].resource_type, ([], []))[0].append(self.by_id[acl_id])
            for _, acl in added:
                per_type.setdefault(acl.resource_type, ([], []))[1].append(acl)
        types = list(self.types)
        for code, (gone, new) in per_type.items():
            if not 0 <= code < N_TYPES:
                raise ImageError(f"resource type code {code} is out of range")
            types[code] = _apply_type(types[code], gone, new)
        return AclIndex(by_id_after, tuple(types))


def _apply_type(base: TypeIndex | None, gone: list[StandardAcl], new: list[StandardAcl]) -> TypeIndex | None:
    """Copy-on-write update of one resource type's index."""
    if base is None:
        base = TypeIndex(OverlayMap(), OverlayMap(), immutables.Map(), immutables.Map())
    literal, prefixed = base.literal.mutate(), base.prefixed.mutate()
    lengths = base.length_counts.mutate()
    # (is_literal, name) -> the bucket being edited, as an insertion-ordered set.
    work: dict[tuple[bool, str], dict[StandardAcl, None]] = {}

    def edit(acl: StandardAcl) -> dict[StandardAcl, None]:
        key = (acl.pattern_type == PatternType.LITERAL, acl.resource_name)
        bucket = work.get(key)
        if bucket is None:
            bucket = work[key] = dict.fromkeys(members((literal if key[0] else prefixed).get(key[1])))
        return bucket

    for acl in gone:
        del edit(acl)[acl]
    for acl in new:
        bucket = edit(acl)
        if acl in bucket:
            raise ImageError(f"cannot add {acl}: an ACL with the same content already exists")
        bucket[acl] = None
    for (is_literal, name), bucket in work.items():
        bucket_map = literal if is_literal else prefixed
        existed = name in bucket_map
        if bucket:
            bucket_map[name] = bucket_of(bucket)
        elif existed:
            del bucket_map[name]
        if not is_literal and existed != bool(bucket):
            _count(lengths, len(name), +1 if bucket else -1)
    touched = work.keys()
    literal_m, prefixed_m = literal.finish(), prefixed.finish()
    # principal -> kind -> name -> Grants, or None where the principal no longer has ACLs there.
    changes: dict[str, dict[str, dict[str, Grants | None]]] = {}
    for acl in (*gone, *new):
        changes.setdefault(acl.principal, {}).setdefault(kind_of(acl.pattern_type), {})[acl.resource_name] = None
    for is_literal, name in touched:
        grouped: dict[tuple[str, str], list[StandardAcl]] = {}
        for acl in members((literal_m if is_literal else prefixed_m).get(name)):
            grouped.setdefault((acl.principal, kind_of(acl.pattern_type)), []).append(acl)
        for (principal, kind), acls in grouped.items():
            per_kind = changes.get(principal, {}).get(kind)
            if per_kind is not None and name in per_kind:
                per_kind[name] = grants_of(acls)
    principals = base.principals.mutate()
    for principal, per_kinds in changes.items():
        view = _rebuild_view(principals.get(principal), per_kinds)
        if view is None:
            principals.pop(principal, None)
        else:
            principals[principal] = view
    result = TypeIndex(literal_m, prefixed_m, lengths.finish(), principals.finish())
    return result if len(result.literal) or len(result.prefixed) else None


def _count(counts: Any, key: int, delta: int) -> None:
    value = counts.get(key, 0) + delta
    if value:
        counts[key] = value
    else:
        del counts[key]


def _rebuild_view(view: PrincipalView | None, changes: dict[str, dict[str, Grants | None]]) -> PrincipalView | None:
    """A copy of `view` with the changed names' grants replaced (None removes the name)."""
    dicts = {
        "literal": view.literal if view else {},
        "prefixed": view.prefixed if view else {},
        "other": view.other if view else {},
    }
    for kind, names in changes.items():
        updated = dict(dicts[kind])
        for name, grants in names.items():
            if grants is None:
                updated.pop(name, None)
            else:
                updated[name] = grants
        dicts[kind] = updated
    fresh = PrincipalView(dicts["literal"], dicts["prefixed"], dicts["other"])
    return None if fresh.is_empty() else fresh
