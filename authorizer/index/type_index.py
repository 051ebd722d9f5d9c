"""The per-resource-type pieces of the ACL index: buckets, interned grants, principal views and TypeIndex.

Every object here is immutable once published and safe to share between threads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

import immutables

from kraftacl.authorizer.errors import ImageError
from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.index.views import PrincipalView
from kraftacl.authorizer.model.acls import PatternType, StandardAcl
from kraftacl.authorizer.model.operations import grant_bit

__all__ = [
    "BITS",
    "N_TYPES",
    "AclId",
    "Bucket",
    "Grants",
    "PrincipalView",
    "TypeIndex",
    "bucket_of",
    "bucket_with",
    "bucket_without",
    "grants_of",
    "intern_grants",
    "kind_of",
    "members",
]

Grants = dict[str, int]
AclId = str
# A bucket holds the ACLs of one (type, name, literal-or-not): the bare ACL when there is one (most
# names), a tuple when there are several, and a persistent set (an `immutables.Map` of ACL -> None)
# beyond `TUPLE_LIMIT`, so that adding or removing one costs O(log n) on a name thousands of ACLs
# share (Kafka's JMH sets put 24,000 on `*`). `members` hides the difference.
Bucket = StandardAcl | tuple[StandardAcl, ...] | immutables.Map[StandardAcl, None]
TUPLE_LIMIT = 16


def members(bucket: Bucket | None) -> tuple[StandardAcl, ...]:
    """The ACLs of a bucket (empty for None)."""
    if bucket is None:
        return ()
    if isinstance(bucket, StandardAcl):  # checked first: an ACL is itself a (named) tuple
        return (bucket,)
    if isinstance(bucket, immutables.Map):
        return tuple(bucket)
    return bucket


def bucket_of(acls: list[StandardAcl] | dict[StandardAcl, None]) -> Bucket:
    """The bucket of some distinct ACLs (at least one)."""
    if len(acls) == 1:
        return next(iter(acls))
    if len(acls) <= TUPLE_LIMIT:
        return tuple(acls)
    return immutables.Map(dict.fromkeys(acls))


def bucket_with(bucket: Bucket | None, acl: StandardAcl) -> Bucket:
    """`bucket` plus `acl`; ImageError when an ACL with the same content is already there."""
    if bucket is None:
        return acl
    if isinstance(bucket, immutables.Map):
        if acl in bucket:
            raise ImageError(f"cannot add {acl}: an ACL with the same content already exists")
        return bucket.set(acl, None)
    group = members(bucket)
    if acl in group:
        raise ImageError(f"cannot add {acl}: an ACL with the same content already exists")
    return bucket_of([*group, acl])


def bucket_without(bucket: Bucket | None, acl: StandardAcl) -> Bucket | None:
    """`bucket` less `acl` (None when it was the last one); ImageError when `acl` is not there."""
    if isinstance(bucket, immutables.Map):
        if acl not in bucket:
            raise ImageError(f"cannot remove {acl}: no ACL with that content is indexed")
        smaller = bucket.delete(acl)
        return smaller if len(smaller) > TUPLE_LIMIT else bucket_of(list(smaller))
    group = members(bucket)
    if acl not in group:
        raise ImageError(f"cannot remove {acl}: no ACL with that content is indexed")
    rest = [member for member in group if member != acl]
    return bucket_of(rest) if rest else None


_EMPTY_GRANTS: Grants = {}
_INTERNED: dict[tuple[tuple[str, int], ...], Grants] = {}
_INTERN_HOSTS = 8
N_TYPES = 8
WalkMarks = tuple[str | None, bool]
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


_KINDS: dict[int, str] = {PatternType.LITERAL: "literal", PatternType.PREFIXED: "prefixed"}


def kind_of(pattern_type: int) -> str:
    """Which names of a view an ACL of this pattern type is filed under (see `views`)."""
    return _KINDS.get(pattern_type, "other")  # hand-made codes: PREFIXED in authorize, ignored by_resource_type


class TypeIndex:
    """All ACLs of one resource type (immutable once published, but for the `memo` its readers share).

    `memo` is one dict shared by every index derived from one bulk build: `authorize_by_resource_type`'s
    answers, each naming the view versions it holds for (`PrincipalView.serial`). Readers fill it,
    from any thread.
    """

    __slots__ = ("_walk_marks", "length_counts", "literal", "memo", "prefix_lengths", "prefixed", "principals")

    def __init__(
        self,
        literal: OverlayMap[str, Bucket],
        prefixed: OverlayMap[str, Bucket],
        length_counts: immutables.Map[int, int],
        principals: immutables.Map[str, PrincipalView],
        memo: dict[Any, Any] | None = None,
        walk_marks: WalkMarks | None = None,
        prefix_lengths: tuple[int, ...] | None = None,
    ) -> None:
        self.literal = literal
        self.prefixed = prefixed
        self.length_counts = length_counts
        # the sorted keys of `length_counts` (passed when known: an update that creates no prefix name)
        self.prefix_lengths = tuple(sorted(length_counts.keys())) if prefix_lengths is None else prefix_lengths
        self.principals = principals
        self.memo: dict[Any, Any] = {} if memo is None else memo
        self._walk_marks = walk_marks

    def next_walk_marks(self, created: Iterable[str], deleted: Iterable[str]) -> WalkMarks | None:
        """`walk_marks` after names gain their first ACL or lose their last; None when only a pass can tell."""
        marks = self._walk_marks
        if marks is None:
            return None
        above, below = marks
        for name in deleted:
            if name == above or "" < name < "*":
                return None
        for name in created:
            if name > "*" and (above is None or name < above):
                above = name
            below = below or "" < name < "*"
        return (above, below)

    def walk_marks(self) -> WalkMarks:
        """(the least name above "*", whether any name lies between "" and "*"): see `walk_order`.

        One pass over every name, on first use, then cached (and carried to the next index by
        `next_walk_marks` when a change allows).
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
