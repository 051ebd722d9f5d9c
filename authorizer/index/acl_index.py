"""The immutable ACL index the StandardAuthorizer decides against: built once, then updated copy-on-write.

An `AclIndex` is never mutated after construction, so any number of threads may read one while a
writer builds the next (one reference swap publishes it; docs/ARCHITECTURE.md "one consistent view").

Layout, per resource type (`TypeIndex`):

    literal   name -> ACLs                every principal; answers "does any ACL cover this name?"
    prefixed  name -> ACLs                PREFIXED (and hand-made UNKNOWN-pattern) ACLs
    prefix_lengths (3, 4, 19)             distinct prefixed-name lengths: a name N is covered by a
                                          prefix ACL iff N[:L] is in `prefixed` for some L <= len(N)
    principals Map principal -> PrincipalView

and per (resource type, principal) a `PrincipalView` (`authorizer.index.views`) of `name -> Grants`,
where `Grants` maps a host to the grant mask of `authorizer.model.operations`: a dict of LITERAL names
and a radix tree of PREFIXED ones. Worked example, bob's view of TOPIC after `foo LITERAL READ
ALLOW` and `fo PREFIXED WRITE DENY from 10.0.0.1`:

    literal  {"foo": {"*": 1<<READ}}
    trie     ("fo", {"10.0.0.1": 1<<(16+WRITE)})              lengths (2,)

Authorizing bob READ TOPIC `foobar` from 10.0.0.1 probes literal "foobar" and "*", then walks the
tree: "fo" is a prefix of "foobar": mask = 1<<(16+WRITE); DENY test for READ fails, ALLOW test
fails: no ACL of bob applies.

An update costs what it changes, not what the index or the changed principal holds (issue #19):
`by_id`, `literal` and `prefixed` are OverlayMaps (a dict adopted at build time plus a HAMT of later
changes), `principals` an `immutables.Map`, a bucket shared by many ACLs a persistent set
(`type_index`), and a view changes through `grant_edits` and `views` (a HAMT overlay, a tree path
copy): each change costs O(log n). The bulk build (snapshot load, initial replay) is one compiled
pass over the ACLs, in `index_build`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import immutables

from kraftacl.authorizer.errors import ImageError
from kraftacl.authorizer.index.build import build_types
from kraftacl.authorizer.index.grant_edits import GrantEdits
from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.index.type_index import (
    N_TYPES,
    AclId,
    Bucket,
    Grants,
    PrincipalView,
    TypeIndex,
    bucket_with,
    bucket_without,
    members,
)
from kraftacl.authorizer.model.acls import PatternType, StandardAcl

# Versions of changed principal views (`PrincipalView.serial`), unique in the process, so that two
# indexes derived from one base never share one (0 is a bulk-built view, -1 no view).
_SERIALS = itertools.count(1)

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
    """Copy-on-write update of one resource type's index: O(log n) per ACL in every map it touches."""
    if base is None:
        base = TypeIndex(OverlayMap(), OverlayMap(), immutables.Map(), immutables.Map(), walk_marks=(None, False))
    literal, prefixed = _Buckets(base.literal), _Buckets(base.prefixed)
    edits = GrantEdits(base.principals, next(_SERIALS))
    for acl in gone:
        (literal if acl.pattern_type == PatternType.LITERAL else prefixed).remove(acl)
        edits.remove(acl)
    for acl in new:
        (literal if acl.pattern_type == PatternType.LITERAL else prefixed).add(acl)
        edits.add(acl)
    literal_m, prefixed_m = literal.map, prefixed.map
    lengths = _recounted(base.length_counts, prefixed.created, prefixed.deleted)
    principals = edits.finish(literal_m, prefixed_m)
    marks = base.next_walk_marks([*literal.created, *prefixed.created], [*literal.deleted, *prefixed.deleted])
    same = base.prefix_lengths if lengths is base.length_counts else None
    result = TypeIndex(literal_m, prefixed_m, lengths, principals, base.memo, marks, same)
    return result if len(result.literal) or len(result.prefixed) else None


def _recounted(counts: immutables.Map[int, int], created: list[str], deleted: list[str]) -> immutables.Map[int, int]:
    """Prefixed-name lengths -> how many names have each, after names were created and deleted."""
    if not created and not deleted:
        return counts
    edit = counts.mutate()
    for names, delta in ((created, 1), (deleted, -1)):
        for name in names:
            count = edit.get(len(name), 0) + delta
            if count:
                edit[len(name)] = count
            else:
                del edit[len(name)]
    return edit.finish()


class _Buckets:
    """A name -> bucket map as a batch changes it, one persistent update per ACL; the names created and deleted."""

    def __init__(self, source: OverlayMap[str, Bucket]) -> None:
        self.map = source
        self.created: list[str] = []
        self.deleted: list[str] = []

    def add(self, acl: StandardAcl) -> None:
        current = self.map.get(acl.resource_name)
        self.map = self.map.set(acl.resource_name, bucket_with(current, acl))
        if current is None:
            self.created.append(acl.resource_name)

    def remove(self, acl: StandardAcl) -> None:
        bucket = bucket_without(self.map.get(acl.resource_name), acl)
        if bucket is None:
            self.map = self.map.delete(acl.resource_name)
            self.deleted.append(acl.resource_name)
        else:
            self.map = self.map.set(acl.resource_name, bucket)
