"""The order in which Kafka's two-pass index walk (spec §6) meets a request's applying ACLs, to name the decider.

Pure functions over an immutable TypeIndex; safe from any thread.

Kafka names the first applying DENY its walk finds, else the last applying ALLOW (§5.6). Index
order (name descending) gives the same answer except around ACLs with the empty name "", which the
walk can meet before the LITERAL `*` ACLs, and meets again after them. For a name N that Kafka can
scan (N == "" or N[0] > "*"), with P the ACLs on N and its prefixes, STAR the LITERAL `*` ACLs and
EMPTY the ACLs named "", each part in index order:

    pass 1:  P  [+ STAR, when the first index entry below N[:1] is a LITERAL `*`]  + EMPTY
    pass 2:  STAR + EMPTY, or only EMPTY's entries from LITERAL on (PREFIXED ""), where the walk's
             re-seek lands when a PREFIXED `*` or a name between "" and "*" lies in between

Pass 2 runs only when pass 1 met no DENY. Worked example (`empty-prefix-deny` in the tests):
N = "foo" against "" PREFIXED DENY, `*` LITERAL DENY and bob's "bar": the entry below "f" is
"bar", so pass 1 re-seeks from it straight to "", and Kafka names the "" DENY, not the `*` one.
Names that start with "*" or sort below it are where Kafka hangs, throws or skips the wildcard
(§7, §7.1): for them the index order is used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from kraftacl.authorizer.index.type_index import TypeIndex, members
from kraftacl.authorizer.model.acls import PatternType, StandardAcl, kafka_order

A = TypeVar("A")

_LITERAL = PatternType.LITERAL


def walk_order(tindex: TypeIndex, name: str, applying: list[StandardAcl]) -> list[StandardAcl]:
    """The applying candidate ACLs of `name` in the order Kafka's walk meets them: pass 1, then pass 2.

    An ACL both passes meet appears twice. The first DENY in this order is the one Kafka names (pass 2
    runs only when pass 1 met none), else the last ALLOW.
    """
    ordered = kafka_order(applying)
    empty = [acl for acl in ordered if acl.resource_name == ""]
    if not empty or not (name == "" or name[0] > "*"):
        return ordered  # without "" ACLs the walk meets P, then STAR (in either pass): index order
    star = [acl for acl in ordered if acl.resource_name == "*"]  # only the LITERAL `*` is a candidate here
    prefixes = [acl for acl in ordered if acl.resource_name not in ("", "*")]
    above_star, below_star = tindex.walk_marks()
    star_patterns = [acl.pattern_type for acl in members(tindex.prefixed.get("*"))]
    star_next = (
        name != ""
        and (above_star is None or above_star >= name[:1])  # no name between "*" and N[:1]
        and not any(pattern < _LITERAL for pattern in star_patterns)  # `*` LITERAL is the first `*` entry
    )
    straight = not below_star and not any(pattern > _LITERAL for pattern in star_patterns)
    first = prefixes + (star if star_next else []) + empty
    return first + star + (empty if straight else [acl for acl in empty if acl.pattern_type >= _LITERAL])


def decider(met: Sequence[A], denied: bool, is_allow: Callable[[A], bool]) -> A | None:
    """The ACL Kafka names for a decision (spec §5.6), of the applying ACLs in the order its walk meets them:
    the first DENY when the result is DENIED, else the last ALLOW (None: the default decided)."""
    if denied:
        for acl in met:
            if not is_allow(acl):
                return acl
        return None
    for acl in reversed(met):
        if is_allow(acl):
            return acl
    return None
