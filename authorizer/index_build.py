"""The bulk build of the ACL index's resource types (snapshot loads, initial replay), done column-wise.

Pure functions; the shared tables here only ever gain entries (under the GIL), so builds may run
on any thread.

A million ACLs leave no room for a Python statement per ACL per structure, nor for touching each
ACL tuple in every pass: the tuples of a replayed log lie scattered in memory, and each visit is a
cache miss. So the ACLs are transposed once (`zip(*acls)`: seven columns of pointers to shared
enum, principal and host objects), and every later step is a C-level pass over columns or row
numbers: `compress` splits rows, `dict(zip(names, acls))` builds a name -> ACL map in one call,
`map(list.append, ...)` groups row numbers by principal, `itemgetter(*rows)` gathers a group's
cells. Names are grouped again, one by one, only when a map's size shows that they repeat. The
grant of one row, `{host: bit}`, comes from `_SINGLES[host][bit]`, a table that fills itself on
first use and hands out the interned dict (see `type_index.intern_grants`).
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Sequence
from itertools import compress, repeat
from operator import eq, getitem, itemgetter, ne
from typing import Any

import immutables

from authorizer.errors import ImageError
from authorizer.model import PatternType, StandardAcl
from authorizer.overlay import OverlayMap
from authorizer.type_index import BITS, N_TYPES, Bucket, Grants, PrincipalView, TypeIndex, intern_grants

_LITERAL, _PREFIXED = PatternType.LITERAL, PatternType.PREFIXED


class _OneHost(dict[int, Grants]):
    """bit -> the interned `{host: bit}` of one host, filled on first use."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host

    def __missing__(self, bit: int) -> Grants:
        grants = self[bit] = intern_grants({self.host: bit})
        return grants


class _Singles(dict[str, _OneHost]):
    """host -> its `_OneHost` table, filled on first use."""

    def __missing__(self, host: str) -> _OneHost:
        table = self[host] = _OneHost(host)
        return table


_SINGLES = _Singles()


class _Columns:
    """One resource type's ACLs, their cells column by column, and each row's grant bit and `{host: bit}`."""

    __slots__ = ("acls", "bits", "hosts", "names", "patterns", "principals", "singles")

    def __init__(self, acls: list[StandardAcl]) -> None:
        columns: list[tuple[Any, ...]] = list(zip(*acls, strict=True))  # one visit per ACL tuple
        _, self.names, self.patterns, self.principals, self.hosts, operations, permissions = columns
        self.acls = acls
        self.bits: list[int] = list(map(getitem, map(BITS.__getitem__, permissions), operations))
        self.singles: list[Grants] = list(map(getitem, map(_SINGLES.__getitem__, self.hosts), self.bits))


def build_types(acls: Iterable[StandardAcl]) -> tuple[TypeIndex | None, ...]:
    """A TypeIndex per resource type code (None where a type has no ACL); ImageError on duplicate content."""
    per_type: list[list[StandardAcl]] = [[] for _ in range(N_TYPES)]
    for acl in acls:  # one short loop; the per-type builds work column-wise
        per_type[acl.resource_type].append(acl)
    return tuple(build_type(_Columns(group)) if group else None for group in per_type)


def build_type(c: _Columns) -> TypeIndex:
    """One resource type's TypeIndex from its columns; ImageError when two ACLs have the same content."""
    if c.patterns.count(_LITERAL) == len(c.acls):
        masks = None
        literal, prefixed = _buckets(c.names, c.acls), {}
    else:
        masks = list(map(eq, c.patterns, repeat(_LITERAL))), list(map(ne, c.patterns, repeat(_LITERAL)))
        literal = _buckets(list(compress(c.names, masks[0])), list(compress(c.acls, masks[0])))
        prefixed = _buckets(list(compress(c.names, masks[1])), list(compress(c.acls, masks[1])))
    return TypeIndex(
        OverlayMap(literal),
        OverlayMap(prefixed),
        immutables.Map(Counter(map(len, prefixed))),
        immutables.Map(_views(c, masks)),
    )


def _buckets(names: Sequence[str], acls: Sequence[StandardAcl]) -> dict[str, Bucket]:
    """name -> the bare ACL, or a tuple of the ACLs sharing that name (in order)."""
    buckets: dict[str, Bucket] = dict(zip(names, acls, strict=True))
    if len(buckets) == len(acls):
        return buckets
    shared = {name for name, count in Counter(names).items() if count > 1}
    groups: defaultdict[str, list[StandardAcl]] = defaultdict(list)
    for name, acl in zip(names, acls, strict=True):
        if name in shared:
            groups[name].append(acl)
    for name, group in groups.items():
        if len(set(group)) != len(group):
            dup = next(acl for acl in group if group.count(acl) > 1)
            raise ImageError(f"cannot add {dup}: an ACL with the same content already exists")
        buckets[name] = tuple(group)
    return buckets


def _rows_by_principal(c: _Columns, selected: list[bool] | None) -> dict[str, list[int]]:
    """principal -> its row numbers (in order), over all rows or the `selected` ones."""
    rows: Iterable[int] = range(len(c.acls))
    principals: Iterable[str] = c.principals
    if selected is not None:
        rows, principals = compress(rows, selected), compress(principals, selected)
    groups: defaultdict[str, list[int]] = defaultdict(list)
    deque(map(list.append, map(groups.__getitem__, principals), rows), maxlen=0)
    return groups


def _views(c: _Columns, masks: tuple[list[bool], list[bool]] | None) -> dict[str, PrincipalView]:
    """principal -> its PrincipalView: literal, prefixed and other (hand-made pattern) grants by name.

    `masks` marks the LITERAL rows and the others; None when every row is LITERAL.
    """
    if masks is None:
        return {p: PrincipalView(_grants_by_name(c, rows), {}, {}) for p, rows in _rows_by_principal(c, None).items()}
    literal = _rows_by_principal(c, masks[0])
    rest = _rows_by_principal(c, masks[1])
    # Hand-made pattern codes (neither LITERAL nor PREFIXED) are rare: split them out only if present.
    any_other = c.patterns.count(_PREFIXED) < masks[1].count(True)
    views: dict[str, PrincipalView] = {}
    for principal in literal.keys() | rest.keys():
        prefixed = rest.get(principal, [])
        other = [row for row in prefixed if c.patterns[row] != _PREFIXED] if any_other else []
        if other:
            prefixed = [row for row in prefixed if c.patterns[row] == _PREFIXED]
        views[principal] = PrincipalView(
            _grants_by_name(c, literal.get(principal, [])), _grants_by_name(c, prefixed), _grants_by_name(c, other)
        )
    return views


def _grants_by_name(c: _Columns, rows: list[int]) -> dict[str, Grants]:
    """name -> the interned grants (host -> mask) of the ACLs in `rows`."""
    if len(rows) < 2:
        return {c.names[rows[0]]: c.singles[rows[0]]} if rows else {}
    cells = itemgetter(*rows)
    names: tuple[str, ...] = cells(c.names)
    out = dict(zip(names, cells(c.singles), strict=True))
    if len(out) == len(rows):
        return out
    merged: dict[str, Grants] = {}  # several ACLs on one name: OR their grants per host
    for name, host, bit in zip(names, cells(c.hosts), cells(c.bits), strict=True):
        grants = merged.get(name)
        if grants is None:
            merged[name] = {host: bit}
        else:
            grants[host] = grants.get(host, 0) | bit
    return {name: intern_grants(grants) for name, grants in merged.items()}
