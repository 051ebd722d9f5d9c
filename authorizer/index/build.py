"""The bulk build of the ACL index's resource types (snapshot loads, initial replay).

Pure functions; the shared tables here only ever gain entries (under the GIL), so builds may run
on any thread.

A million ACLs leave no room for a Python statement per ACL per structure, nor for touching each
ACL tuple more than once: the tuples of a replayed log lie scattered in memory, and each visit is
a cache miss. So one loop (`bulk_rows.group_acls_into`, compiled by mypyc, run in steps) visits every ACL once and
files it under its type: into the literal or prefixed name map, and into its principal's view as
`name -> grants` (PREFIXED ACLs a second time, principal by principal, into radix trees:
`bulk_rows.prefix_tries`). The grant of one ACL, `{host: bit}`, comes from `_SINGLES[host][code]`, a table
that fills itself on first use and hands out the interned dict (see `type_index.intern_grants`).
What is left here runs once per name shared by several ACLs, per principal, or per type.

The compiled loops are called a step of `STEP` ACLs at a time (a few milliseconds each): a serving node that
rebuilds its index after a large batch (a 200k-ACL import) then gives the event loop the GIL back between two
steps, so a broker's decision never waits for the whole build (mypyc code does not release the GIL by itself).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import immutables

from kraftacl.authorizer.errors import ImageError
from kraftacl.authorizer.index.bulk_rows import Grants as RowGrants
from kraftacl.authorizer.index.bulk_rows import TypeGroups
from kraftacl.authorizer.index.native_rows import group_acls_into, intern_merged, prefix_tries_from
from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.index.steps import chunks, listed
from kraftacl.authorizer.index.type_index import (
    BITS,
    N_TYPES,
    Grants,
    PrincipalView,
    TypeIndex,
    bucket_of,
    intern_grants,
)
from kraftacl.authorizer.index.views import NO_NAMES
from kraftacl.authorizer.model.acls import PatternType, StandardAcl
from kraftacl.metadata_log.pace import breathe


class _OneHost(dict[int, Grants]):
    """permission * len(BITS[0]) + operation -> the interned `{host: grant bit}` of one host, filled on first use."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host

    def __missing__(self, code: int) -> Grants:
        permission, operation = divmod(code, len(BITS[0]))
        grants = self[code] = intern_grants({self.host: BITS[permission][operation]})
        return grants


class _Singles(dict[str, _OneHost]):
    """host -> its `_OneHost` table, filled on first use."""

    def __missing__(self, host: str) -> _OneHost:
        table = self[host] = _OneHost(host)
        return table


_SINGLES = _Singles()


STEP = 2048  # ACLs per call into the compiled loops (about 2 ms here)


def build_types(acls: Iterable[StandardAcl]) -> tuple[TypeIndex | None, ...]:
    """A TypeIndex per resource type code (None where a type has no ACL); ImageError on duplicate content."""
    rows = acls if isinstance(acls, list) else listed(acls)
    grouped: list[TypeGroups | None] = [None] * N_TYPES
    merged: list[tuple[dict[str, RowGrants], str]] = []
    fresh: set[int] = set()
    literal, prefixed = PatternType.LITERAL, PatternType.PREFIXED
    for start in range(0, len(rows), STEP):
        group_acls_into(
            rows, start, min(start + STEP, len(rows)), grouped, merged, fresh, BITS, _SINGLES, literal, prefixed
        )
        breathe()
    for start in range(0, len(merged), STEP):
        intern_merged(merged, start, min(start + STEP, len(merged)), intern_grants)
        breathe()
    return tuple(None if groups is None else _type_index(groups) for groups in grouped)


def _first_repeat(acls: list[StandardAcl]) -> StandardAcl | None:
    seen: set[StandardAcl] = set()
    for acl in acls:
        if acl in seen:
            return acl
        seen.add(acl)
    return None


def _type_index(groups: TypeGroups) -> TypeIndex:
    """One resource type's TypeIndex from its groups; ImageError when two ACLs have the same content."""
    literal, prefixed, shared, literal_views, prefixed_acls, other_views = groups
    for (name, is_literal), acls in shared.items():
        if len(set(acls)) != len(acls):
            raise ImageError(f"cannot add {_first_repeat(acls)}: an ACL with the same content already exists")
        (literal if is_literal else prefixed)[name] = bucket_of(acls)
    tries = _prefix_tries(prefixed_acls)
    principals = {}
    for principal in literal_views.keys() | tries.keys() | other_views.keys():
        principals[principal] = PrincipalView(
            literal_views.get(principal) or NO_NAMES, tries.get(principal), other_views.get(principal) or NO_NAMES
        )
    return TypeIndex(
        OverlayMap(literal),
        OverlayMap(prefixed),
        immutables.Map(_lengths(prefixed)),
        immutables.Map(principals),
    )


def _prefix_tries(acls: list[StandardAcl]) -> dict[str, Any]:
    """principal -> the radix tree of its PREFIXED grants (`bulk_rows.prefix_tries`), grouped by principal in
    Python (in the order met) rather than by one long sort, and built a step at a time."""
    by_principal: dict[str, list[StandardAcl]] = {}
    for step in chunks(acls):
        for acl in step:
            found = by_principal.get(acl.principal)
            if found is None:
                by_principal[acl.principal] = [acl]
            else:
                found.append(acl)
    ordered = [acl for group in by_principal.values() for acl in group]
    del by_principal
    out: dict[str, Any] = {}
    start = 0
    while start < len(ordered):
        start = prefix_tries_from(ordered, start, STEP, out, BITS, _SINGLES, intern_grants)
        breathe()
    return out


def _lengths(prefixed: dict[str, object]) -> Counter[int]:
    """How many prefixed names have each length, counted a step at a time."""
    counts: Counter[int] = Counter()
    for step in chunks(prefixed):
        counts.update(map(len, step))
    return counts
