"""`authorizeByResourceType`'s scan and domination check (spec §8 steps 3-6), over one principal's view.

Pure functions over immutable views; the per-view summary cache is filled by whichever thread asks
first (a benign race: two threads compute the same immutable value).
"""

from __future__ import annotations

from dataclasses import dataclass

from authorizer.index import PrincipalView, TypeIndex
from authorizer.model import WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, AclOperation, AuthorizationResult
from authorizer.operations import EXACT_ALLOW, EXACT_DENY

_CACHE_LIMIT = 256


@dataclass(frozen=True, slots=True)
class _Summary:
    """What one view contributes for (host, op): kept bindings sorted into Kafka's six buckets."""

    deny_wildcard: bool
    allow_wildcard: bool
    deny_literal: frozenset[str]
    deny_prefix: frozenset[str]
    allow_literal: frozenset[str]
    allow_prefix: frozenset[str]


def _summarize(view: PrincipalView, host: str, op: AclOperation) -> _Summary:
    allow_bits, deny_bits = EXACT_ALLOW[op], EXACT_DENY[op]
    deny_lit, allow_lit, deny_pre, allow_pre = set(), set(), set(), set()
    for name, grants in view.literal.items():
        mask = grants.get(host, 0) | grants.get("*", 0)
        if mask & deny_bits:
            deny_lit.add(name)
        if mask & allow_bits:
            allow_lit.add(name)
    for name, grants in view.prefixed.items():
        mask = grants.get(host, 0) | grants.get("*", 0)
        if mask & deny_bits:
            deny_pre.add(name)
        if mask & allow_bits:
            allow_pre.add(name)
    return _Summary(
        WILDCARD_RESOURCE in deny_lit,
        WILDCARD_RESOURCE in allow_lit,
        frozenset(deny_lit - {WILDCARD_RESOURCE}),
        frozenset(deny_pre),
        frozenset(allow_lit - {WILDCARD_RESOURCE}),
        frozenset(allow_pre),
    )


def _summary(view: PrincipalView, host: str, op: AclOperation) -> _Summary:
    key = (host, int(op))
    found = view.brt_cache.get(key)
    if isinstance(found, _Summary):
        return found
    if len(view.brt_cache) >= _CACHE_LIMIT:
        view.brt_cache.clear()
    summary = view.brt_cache[key] = _summarize(view, host, op)
    return summary


def _dominated(name: str, deny_prefix: frozenset[str], lengths: list[int]) -> bool:
    """True when some prefix of `name` of length 1..len(name) is a DENY prefix."""
    return any(length <= len(name) and name[:length] in deny_prefix for length in lengths)


def authorize_by_resource_type_scan(
    tindex: TypeIndex, principal: str, host: str, op: AclOperation
) -> AuthorizationResult:
    """Steps 3-6 of spec §8 for the ACLs of one type whose principal is `principal` or `User:*`."""
    summaries = [
        _summary(view, host, op)
        for who in dict.fromkeys((principal, WILDCARD_PRINCIPAL))
        if (view := tindex.principals.get(who)) is not None
    ]
    if any(s.deny_wildcard for s in summaries):
        return AuthorizationResult.DENIED
    if any(s.allow_wildcard for s in summaries):
        return AuthorizationResult.ALLOWED
    deny_literal = frozenset().union(*(s.deny_literal for s in summaries))
    deny_prefix = frozenset().union(*(s.deny_prefix for s in summaries))
    lengths = sorted({len(name) for name in deny_prefix if name})
    for s in summaries:
        for name in s.allow_literal:
            if name not in deny_literal and not _dominated(name, deny_prefix, lengths):
                return AuthorizationResult.ALLOWED
        for name in s.allow_prefix:
            if not _dominated(name, deny_prefix, lengths):
                return AuthorizationResult.ALLOWED
    return AuthorizationResult.DENIED
