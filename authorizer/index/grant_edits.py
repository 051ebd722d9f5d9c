"""The principal views of one resource type after a batch: each changed (principal, name)'s grants edited bit by bit.

A `GrantEdits` belongs to the one thread applying a batch; what `finish` returns is immutable.

An ACL contributes one bit for one host to its principal's grants on its name (`authorizer.
operations`), so adding it ORs that bit in, and removing it clears the bit: no other ACL can
hold the same bit there, as it would have the same content, which the index refuses. Two
exceptions share bits and are counted again from the name's bucket instead: hand-made pattern
codes (UNKNOWN, ANY and MATCH are one kind, "other") and the permissions UNKNOWN and ANY (one
bit). Worked example, bob on TOPIC `foo` holding `{"*": READ | WRITE}`, a batch removing his
`foo LITERAL * WRITE ALLOW` and adding `foo LITERAL 10.0.0.1 READ DENY`:

    start from a copy of his grants   {"*": READ | WRITE}
    remove: clear WRITE on "*"        {"*": READ}
    add: set DENY READ on 10.0.0.1    {"*": READ, "10.0.0.1": DENY(READ)}
    finish: interned, then bob's view is derived with `foo` changed (views.PrincipalView.updated)

The cost is one grants copy per changed (principal, name) and one view update per changed
principal, whatever the size of the principal's view. Grants of more than `HOSTS_LIMIT` hosts (Kafka's
JMH sets give test-user 20,000 on `*`) are an `immutables.Map`, edited in O(log n): the first
change of such a name converts the build's dict once.
"""

from __future__ import annotations

from typing import Any

import immutables

from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.index.type_index import Bucket, grants_of, intern_grants, kind_of, members
from kraftacl.authorizer.index.views import EMPTY_VIEW, Bits, Grants, PrincipalView
from kraftacl.authorizer.model.acls import AclPermissionType, StandardAcl
from kraftacl.authorizer.model.operations import grant_bit

_UNIQUE_BITS = (AclPermissionType.ALLOW, AclPermissionType.DENY)
HOSTS_LIMIT = 64  # grants of more hosts are edited as an `immutables.Map` (O(log n) a host), back to a dict at half
Editable = dict[str, int] | immutables.MapMutation[str, int]
Key = tuple[str, str, str]  # principal, kind ("literal", "prefixed" or "other"), name


class GrantEdits:
    """The grants being edited, per (principal, kind, name), over the views of one TypeIndex."""

    def __init__(self, principals: immutables.Map[str, PrincipalView], serial: int) -> None:
        self.principals = principals
        self.serial = serial  # the version the edited views get (`PrincipalView.serial`)
        # key -> [a private copy of its grants, edited in place; bits some host lost; bits some host gained]
        self._work: dict[Key, list[Any]] = {}
        self._recount: set[Key] = set()  # removals whose bit other ACLs may share

    def add(self, acl: StandardAcl) -> None:
        """File `acl`'s bit into its principal's grants on its name."""
        _, entry = self._entry(acl)
        bit = grant_bit(acl.operation, acl.permission_type)
        grants: Editable = entry[0]
        grants[acl.host] = grants.get(acl.host, 0) | bit
        entry[2] |= bit

    def remove(self, acl: StandardAcl) -> None:
        """Take `acl`'s bit out of its principal's grants on its name."""
        key, entry = self._entry(acl)
        bit = grant_bit(acl.operation, acl.permission_type)
        entry[1] |= bit
        if key[1] == "other" or acl.permission_type not in _UNIQUE_BITS:
            self._recount.add(key)
            return
        grants: Editable = entry[0]
        rest = grants.get(acl.host, 0) & ~bit
        if rest:
            grants[acl.host] = rest
        else:
            grants.pop(acl.host, None)

    def finish(
        self, literal: OverlayMap[str, Bucket], prefixed: OverlayMap[str, Bucket]
    ) -> immutables.Map[str, PrincipalView]:
        """The principal map with every edited view derived; `literal`/`prefixed` are the final buckets."""
        for principal, kind, name in self._recount:
            bucket = (literal if kind == "literal" else prefixed).get(name)
            mine = [acl for acl in members(bucket) if acl.principal == principal and kind_of(acl.pattern_type) == kind]
            self._work[(principal, kind, name)][0] = _editable(grants_of(mine))
        # principal -> (kind -> name -> new grants or None, (kind, name) -> bits lost and gained)
        edited: dict[str, tuple[dict[str, dict[str, Grants | None]], dict[tuple[str, str], Bits]]] = {}
        for (principal, kind, name), (grants, lost, gained) in self._work.items():
            changes, bits = edited.get(principal) or edited.setdefault(principal, ({}, {}))
            changes.setdefault(kind, {})[name] = _settled(grants)
            bits[(kind, name)] = (lost, gained)
        principals = self.principals.mutate()
        for principal, (changes, bits) in edited.items():
            view = principals.get(principal, EMPTY_VIEW).updated(changes, self.serial, bits)
            if view is None:
                principals.pop(principal, None)
            else:
                principals[principal] = view
        return principals.finish()

    def _entry(self, acl: StandardAcl) -> tuple[Key, list[Any]]:
        key = (acl.principal, kind_of(acl.pattern_type), acl.resource_name)
        entry = self._work.get(key)
        if entry is None:
            view = self.principals.get(key[0])
            current = view.grants(key[1], key[2]) if view is not None else None
            entry = self._work[key] = [_editable(current), 0, 0]
        return key, entry


def _editable(grants: Grants | None) -> Editable:
    """A private, editable copy of some grants: a dict, or a HAMT mutation past `HOSTS_LIMIT` hosts."""
    if not grants:
        return {}
    if isinstance(grants, immutables.Map):
        return grants.mutate()
    if len(grants) > HOSTS_LIMIT:  # once per (principal, name): the build's dict becomes a persistent map
        return immutables.Map(grants).mutate()
    return dict(grants)


def _settled(grants: Editable) -> Grants | None:
    """Edited grants as a view holds them (None when no host is left): interned when small."""
    if not isinstance(grants, dict):  # a MapMutation
        done: immutables.Map[str, int] = grants.finish()
        if len(done) > HOSTS_LIMIT // 2:
            return done
        grants = dict(done)
    return intern_grants(grants) if grants else None
