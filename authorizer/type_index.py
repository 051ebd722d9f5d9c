"""The per-resource-type pieces of the ACL index: buckets, interned grants, principal views and TypeIndex.

Every object here is immutable once published and safe to share between threads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

import immutables

from authorizer.model import PatternType, StandardAcl
from authorizer.native_rows import prefix_tree
from authorizer.operations import grant_bit
from authorizer.overlay import OverlayMap

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


def bucket_of(acls: list[StandardAcl] | dict[StandardAcl, None]) -> Bucket:
    return next(iter(acls)) if len(acls) == 1 else tuple(acls)


_EMPTY_GRANTS: Grants = {}
_INTERNED: dict[tuple[tuple[str, int], ...], Grants] = {}
_INTERN_HOSTS = 8
N_TYPES = 8
# BITS[permission code][operation code] == grant_bit(operation, permission), for the hot build loop.
BITS: tuple[tuple[int, ...], ...] = tuple(tuple(grant_bit(op, perm) for op in range(16)) for perm in range(4))


def intern_grants(grants: Grants) -> Grants:
    """Share one dict per distinct grant shape (`{"*": 8}` is the same object everywhere); never mutate it.

    Grants of more than `_INTERN_HOSTS` hosts are returned as they are: such shapes rarely repeat,
    and their key would cost a sort and a tuple as large as the dict.
    """
    if len(grants) > _INTERN_HOSTS:
        return grants
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


def kind_of(pattern_type: int) -> str:
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


class TypeIndex:
    """All ACLs of one resource type (immutable once published)."""

    __slots__ = ("_walk_marks", "length_counts", "literal", "prefix_lengths", "prefixed", "principals")

    def __init__(
        self,
        literal: OverlayMap[str, Bucket],
        prefixed: OverlayMap[str, Bucket],
        length_counts: immutables.Map[int, int],
        principals: immutables.Map[str, PrincipalView],
    ) -> None:
        self.literal = literal
        self.prefixed = prefixed
        self.length_counts = length_counts
        self.prefix_lengths: tuple[int, ...] = tuple(sorted(length_counts.keys()))
        self.principals = principals
        self._walk_marks: tuple[str | None, bool] | None = None

    def walk_marks(self) -> tuple[str | None, bool]:
        """(the least name above "*", whether any name lies between "" and "*"): see `walk_order`.

        One pass over every name, on first use, then cached: the index is immutable.
        """
        marks = self._walk_marks
        if marks is None:
            above = min((name for name in chain(self.literal, self.prefixed) if name > "*"), default=None)
            below = any("" < name < "*" for name in chain(self.literal, self.prefixed))
            marks = self._walk_marks = (above, below)
        return marks

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
