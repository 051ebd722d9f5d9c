"""The immutable ACL index the StandardAuthorizer decides against: built once, then updated copy-on-write.

An `AclIndex` is never mutated after construction, so any number of threads may read one while a
writer builds the next (one reference swap publishes it; ARCHITECTURE.md "one consistent view").

Layout, per resource type (`TypeIndex`):

    literal   Map name -> ACLs            every principal; answers "does any ACL cover this name?"
    prefixed  Map name -> ACLs            PREFIXED (and hand-made UNKNOWN-pattern) ACLs
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
The Map levels are `immutables.Map` (HAMT) so an update copies O(log n) nodes; the dicts inside a
view are copied when that view changes, which costs O(ACLs of that principal and type).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import immutables

from authorizer.errors import ImageError
from authorizer.model import PatternType, StandardAcl
from authorizer.operations import grant_bit

Grants = dict[str, int]
AclId = str
# A bucket holds the ACLs of one (type, name, literal-or-not): the bare ACL when there is one (most
# names), a tuple when there are several. `members` hides the difference.
Bucket = StandardAcl | tuple[StandardAcl, ...]


def members(bucket: Bucket | None) -> tuple[StandardAcl, ...]:
    """The ACLs of a bucket (empty for None)."""
    if bucket is None:
        return ()
    if isinstance(bucket, StandardAcl):  # checked first: an ACL is itself a (named) tuple
        return (bucket,)
    return bucket


def _bucket(acls: list[StandardAcl] | dict[StandardAcl, None]) -> Bucket:
    return next(iter(acls)) if len(acls) == 1 else tuple(acls)


_EMPTY_GRANTS: Grants = {}
_INTERNED: dict[tuple[tuple[str, int], ...], Grants] = {}
_N_TYPES = 8
# _BITS[permission code][operation code] == grant_bit(operation, permission), for the hot build loop.
_BITS: tuple[tuple[int, ...], ...] = tuple(tuple(grant_bit(op, perm) for op in range(16)) for perm in range(4))


def intern_grants(grants: Grants) -> Grants:
    """Share one dict per distinct grant shape (`{"*": 8}` is the same object everywhere); never mutate it."""
    if len(grants) == 1:
        key: tuple[tuple[str, int], ...] = tuple(grants.items())
    else:
        key = tuple(sorted(grants.items()))
    shared = _INTERNED.get(key)
    if shared is None:
        shared = _INTERNED[key] = grants
    return shared


def grants_of(acls: Iterable[StandardAcl]) -> Grants:
    """The interned host -> mask dict of some ACLs."""
    out: Grants = {}
    for acl in acls:
        out[acl.host] = out.get(acl.host, 0) | grant_bit(acl.operation, acl.permission_type)
    return intern_grants(out) if out else _EMPTY_GRANTS


def _kind(pattern_type: int) -> str:
    if pattern_type == PatternType.LITERAL:
        return "literal"
    if pattern_type == PatternType.PREFIXED:
        return "prefixed"
    return "other"  # hand-made records: acts as PREFIXED in authorize, ignored by_resource_type


class PrincipalView:
    """One principal's ACLs of one resource type, as name -> Grants dicts (immutable once published).

    Prefixed names are also kept sorted, each with `parent` (the index of its longest proper
    prefix among them, or -1) and `closure` (its grants and all its ancestors', as a tuple). The
    longest prefixed name that is a prefix of N is then found with one bisect and a short walk up
    the parent chain, and its closure holds every prefix ACL covering N. Example, sorted names:

        0 "ab"      parent -1   closure ab
        1 "abcd"    parent 0    closure ab|abcd
        2 "abx"     parent 0    closure ab|abx
        3 "b"       parent -1   closure b

    N = "abcz": the largest name <= N is "abcd" (1), not a prefix of N; its parent "ab" (0) is,
    so closure[0] applies. N = "abcdef": "abcd" is a prefix of N, so closure[1] (ab and abcd).
    Why the walk is enough: any prefix p of N with p <= cand is also a prefix of cand.
    """

    __slots__ = ("brt_cache", "closure", "literal", "names", "other", "parent", "prefixed")

    def __init__(self, literal: dict[str, Grants], prefixed: dict[str, Grants], other: dict[str, Grants]):
        self.literal = literal
        self.prefixed = prefixed
        self.other = other
        self.names, self.parent, self.closure = prefix_tree(prefixed)
        # authorize_by_resource_type summaries, keyed by (host, op); safe because the view is immutable.
        self.brt_cache: dict[tuple[str, int], Any] = {}

    def is_empty(self) -> bool:
        """True when the principal has no ACL of this type left."""
        return not (self.literal or self.prefixed or self.other)


def prefix_tree(prefixed: dict[str, Grants]) -> tuple[tuple[str, ...], tuple[int, ...], tuple[tuple[Grants, ...], ...]]:
    """Sorted names, parent indexes, and for each name the grants of itself and its ancestors (see PrincipalView)."""
    names = tuple(sorted(prefixed))
    parent: list[int] = []
    closure: list[tuple[Grants, ...]] = []
    stack: list[int] = []  # indexes of the current name's ancestors, shortest first
    for i, name in enumerate(names):
        while stack and not name.startswith(names[stack[-1]]):
            stack.pop()
        up = stack[-1] if stack else -1
        parent.append(up)
        closure.append((prefixed[name], *closure[up]) if up >= 0 else (prefixed[name],))
        stack.append(i)
    return names, tuple(parent), tuple(closure)


class TypeIndex:
    """All ACLs of one resource type (immutable once published)."""

    __slots__ = ("length_counts", "literal", "prefix_lengths", "prefixed", "principals")

    def __init__(
        self,
        literal: immutables.Map[str, Bucket],
        prefixed: immutables.Map[str, Bucket],
        length_counts: immutables.Map[int, int],
        principals: immutables.Map[str, PrincipalView],
    ) -> None:
        self.literal = literal
        self.prefixed = prefixed
        self.length_counts = length_counts
        self.prefix_lengths: tuple[int, ...] = tuple(sorted(length_counts.keys()))
        self.principals = principals

    def has_candidates(self, name: str) -> bool:
        """Kafka's "ACLs on this resource": any literal N or `*`, or any prefix ACL covering N (spec §5.2)."""
        literal = self.literal
        if name in literal or "*" in literal:
            return True
        prefixed = self.prefixed
        size = len(name)
        for length in self.prefix_lengths:
            if length > size:
                break
            if name[:length] in prefixed:
                return True
        return False

    def candidates(self, name: str) -> Iterator[StandardAcl]:
        """Every candidate ACL for `name` (slow path: explanations and listings)."""
        yield from members(self.literal.get(name))
        if name != "*":
            yield from members(self.literal.get("*"))
        size = len(name)
        for length in self.prefix_lengths:
            if length > size:
                break
            yield from members(self.prefixed.get(name[:length]))


class AclIndex:
    """The whole authorizer state: ACLs by id plus one TypeIndex per resource type code."""

    __slots__ = ("by_id", "types")

    def __init__(self, by_id: immutables.Map[AclId, StandardAcl], types: tuple[TypeIndex | None, ...]):
        self.by_id = by_id
        self.types = types

    @staticmethod
    def empty() -> AclIndex:
        """An index with no ACLs."""
        return AclIndex(immutables.Map(), (None,) * _N_TYPES)

    @staticmethod
    def build(
        acls: Iterable[tuple[AclId, StandardAcl]], by_id: immutables.Map[AclId, StandardAcl] | None = None
    ) -> AclIndex:
        """Build from scratch in one pass (snapshot load); ImageError on a duplicate id or duplicate content.

        `by_id`, when given, is an already-checked id map holding exactly `acls` (an AclsImage's).
        """
        per_type: list[list[StandardAcl]] = [[] for _ in range(_N_TYPES)]
        if by_id is None:
            ids = immutables.Map[AclId, StandardAcl]().mutate()
            for acl_id, acl in acls:
                if acl_id in ids:
                    raise ImageError(f"cannot add ACL {acl_id}: an ACL with that id already exists ({ids[acl_id]})")
                ids[acl_id] = acl
                per_type[acl.resource_type].append(acl)
            by_id = ids.finish()
        else:
            for _, acl in acls:
                per_type[acl.resource_type].append(acl)
        return AclIndex(by_id, tuple(_build_type(group) if group else None for group in per_type))

    def __len__(self) -> int:
        return len(self.by_id)

    def apply(
        self,
        removed: Iterable[AclId],
        added: Iterable[tuple[AclId, StandardAcl]],
        by_id_after: immutables.Map[AclId, StandardAcl] | None = None,
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
            if not 0 <= code < _N_TYPES:
                raise ImageError(f"resource type code {code} is out of range")
            types[code] = _apply_type(types[code], gone, new)
        return AclIndex(by_id_after, tuple(types))


def _build_type(acls: list[StandardAcl]) -> TypeIndex:
    """One resource type's index from scratch: a single grouping pass, no per-ACL copies."""
    literal: dict[str, Any] = {}  # name -> ACL, or a list of ACLs when several share the name
    prefixed: dict[str, Any] = {}
    views: dict[str, tuple[dict[str, Grants], dict[str, Grants], dict[str, Grants]]] = {}
    literal_code, prefixed_code = PatternType.LITERAL, PatternType.PREFIXED
    singles: dict[str, dict[int, Grants]] = {}  # host -> bit -> the interned {host: bit}
    private: set[int] = set()  # ids of grant dicts built here (still mutable)
    bits = _BITS
    for acl in acls:
        name, pattern = acl.resource_name, acl.pattern_type
        buckets = literal if pattern == literal_code else prefixed
        bucket = buckets.get(name)
        if bucket is None:
            buckets[name] = acl
        elif isinstance(bucket, list):
            bucket.append(acl)
        else:
            buckets[name] = [bucket, acl]
        view = views.get(acl.principal)
        if view is None:
            view = views[acl.principal] = ({}, {}, {})
        by_name = view[0 if pattern == literal_code else 1 if pattern == prefixed_code else 2]
        host = acl.host
        per_host = singles.get(host)
        if per_host is None:
            per_host = singles[host] = {}
        bit = bits[acl.permission_type][acl.operation]
        one = per_host.get(bit)
        if one is None:
            one = per_host[bit] = intern_grants({host: bit})
        grants = by_name.get(name)
        if grants is None:
            by_name[name] = one
        elif id(grants) in private:
            grants[host] = grants.get(host, 0) | bit
        else:  # first collision on this name: a private copy, mutated in place, interned at the end
            grants = by_name[name] = {**grants, host: grants.get(host, 0) | bit}
            private.add(id(grants))
    for buckets in (literal, prefixed):
        for name, bucket in buckets.items():
            if isinstance(bucket, list):
                if len(set(bucket)) != len(bucket):
                    dup = next(a for a in bucket if bucket.count(a) > 1)
                    raise ImageError(f"cannot add {dup}: an ACL with the same content already exists")
                buckets[name] = tuple(bucket)
    if private:
        for dicts in views.values():
            for by_name in dicts:
                for name, grants in by_name.items():
                    if id(grants) in private:
                        by_name[name] = intern_grants(grants)
    principals = {principal: PrincipalView(*dicts) for principal, dicts in views.items()}
    lengths: dict[int, int] = {}
    for name in prefixed:
        lengths[len(name)] = lengths.get(len(name), 0) + 1
    return TypeIndex(
        immutables.Map(literal),
        immutables.Map(prefixed),
        immutables.Map(lengths),
        immutables.Map(principals),
    )


def _apply_type(base: TypeIndex | None, gone: list[StandardAcl], new: list[StandardAcl]) -> TypeIndex | None:
    """Copy-on-write update of one resource type's index."""
    if base is None:
        base = TypeIndex(immutables.Map(), immutables.Map(), immutables.Map(), immutables.Map())
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
            bucket_map[name] = _bucket(bucket)
        elif existed:
            del bucket_map[name]
        if not is_literal and existed != bool(bucket):
            _count(lengths, len(name), +1 if bucket else -1)
    touched = work.keys()
    literal_m, prefixed_m = literal.finish(), prefixed.finish()
    # principal -> kind -> name -> Grants, or None where the principal no longer has ACLs there.
    changes: dict[str, dict[str, dict[str, Grants | None]]] = {}
    for acl in (*gone, *new):
        changes.setdefault(acl.principal, {}).setdefault(_kind(acl.pattern_type), {})[acl.resource_name] = None
    for is_literal, name in touched:
        grouped: dict[tuple[str, str], list[StandardAcl]] = {}
        for acl in members((literal_m if is_literal else prefixed_m).get(name)):
            grouped.setdefault((acl.principal, _kind(acl.pattern_type)), []).append(acl)
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
