"""The bulk build of one resource type's index (snapshot loads, initial replay), done column-wise.

Pure functions; the shared tables here only ever gain entries (under the GIL), so builds may run
on any thread.

A million ACLs leave no room for a Python statement per ACL per structure, so each step is a
C-level pass over a column: `dict(zip(names, acls))` builds a name -> ACL map in one call, and only
when its size shows that names repeat are those names grouped again, one by one. The grant of one
ACL, `{host: bit}`, comes from `_SINGLES[host][bit]`, a table that fills itself on first use and
hands out the interned dict (see `type_index.intern_grants`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from operator import attrgetter, getitem

import immutables

from authorizer.errors import ImageError
from authorizer.model import PatternType, StandardAcl
from authorizer.overlay import OverlayMap
from authorizer.type_index import BITS, Bucket, Grants, PrincipalView, TypeIndex, intern_grants

_NAME = attrgetter("resource_name")
_HOST = attrgetter("host")
_OPERATION = attrgetter("operation")
_PERMISSION = attrgetter("permission_type")
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


def build_type(acls: list[StandardAcl]) -> TypeIndex:
    """One resource type's TypeIndex from scratch; ImageError when two ACLs have the same content."""
    literal_acls = [acl for acl in acls if acl.pattern_type == _LITERAL]
    other_acls = [acl for acl in acls if acl.pattern_type != _LITERAL] if len(literal_acls) < len(acls) else []
    literal = _buckets(literal_acls)
    prefixed = _buckets(other_acls)
    by_principal: defaultdict[str, list[StandardAcl]] = defaultdict(list)
    for acl in acls:
        by_principal[acl.principal].append(acl)
    principals = {principal: _view(group) for principal, group in by_principal.items()}
    return TypeIndex(
        OverlayMap(literal),
        OverlayMap(prefixed),
        immutables.Map(Counter(map(len, prefixed))),
        immutables.Map(principals),
    )


def _buckets(acls: list[StandardAcl]) -> dict[str, Bucket]:
    """name -> the bare ACL, or a tuple of the ACLs sharing that name (in order)."""
    names = list(map(_NAME, acls))
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


def _view(acls: list[StandardAcl]) -> PrincipalView:
    """One principal's view of one type: literal, prefixed and other (hand-made pattern) grants by name."""
    literal = [acl for acl in acls if acl.pattern_type == _LITERAL]
    if len(literal) == len(acls):
        return PrincipalView(_grants_by_name(acls), {}, {})
    prefixed = [acl for acl in acls if acl.pattern_type == _PREFIXED]
    if len(literal) + len(prefixed) == len(acls):
        return PrincipalView(_grants_by_name(literal), _grants_by_name(prefixed), {})
    other = [acl for acl in acls if acl.pattern_type != _LITERAL and acl.pattern_type != _PREFIXED]
    return PrincipalView(_grants_by_name(literal), _grants_by_name(prefixed), _grants_by_name(other))


def _grants_by_name(acls: list[StandardAcl]) -> dict[str, Grants]:
    """name -> the interned grants (host -> mask) of the ACLs on that name."""
    if not acls:
        return {}
    names = list(map(_NAME, acls))
    hosts = list(map(_HOST, acls))
    bits: list[int] = list(map(getitem, map(BITS.__getitem__, map(_PERMISSION, acls)), map(_OPERATION, acls)))
    singles: map[Grants] = map(getitem, map(_SINGLES.__getitem__, hosts), bits)
    out = dict(zip(names, singles, strict=True))
    if len(out) == len(acls):
        return out
    merged: dict[str, Grants] = {}  # several ACLs on one name: OR their grants per host
    for name, host, bit in zip(names, hosts, bits, strict=True):
        grants = merged.get(name)
        if grants is None:
            merged[name] = {host: bit}
        else:
            grants[host] = grants.get(host, 0) | bit
    return {name: intern_grants(grants) for name, grants in merged.items()}
