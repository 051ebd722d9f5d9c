"""Ways into an ACL image other than by id: the ids on each resource pattern, the ids of each principal, and an
ACL's id from its content.

An `AclGroups` reads an immutable id -> ACL map and builds each view on first use (one pass over
the ACLs each; two threads asking at once both build it and get equal results); the views are never
changed afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property

from kraftacl.authorizer.model.acls import PatternType, ResourceType, StandardAcl

ByName = dict[str, list[str]]


class AclGroups:
    """Ids filed by resource (type, pattern type, name) and by principal, each list of ids sorted."""

    def __init__(self, acls: Mapping[str, StandardAcl]) -> None:
        self.acls = acls

    @cached_property
    def id_of(self) -> dict[StandardAcl, str]:
        """Each ACL's id (the index refuses two ACLs with the same content, so this is one-to-one)."""
        return {acl: acl_id for acl_id, acl in self.acls.items()}

    @cached_property
    def by_principal(self) -> ByName:
        """principal -> ids."""
        return _grouped(self.acls, lambda acl: acl.principal)

    @cached_property
    def by_resource(self) -> dict[ResourceType, dict[PatternType, ByName]]:
        """resource type -> pattern type -> resource name -> ids."""
        out: dict[ResourceType, dict[PatternType, ByName]] = {}
        for (rtype, ptype), names in _grouped_pairs(self.acls).items():
            out.setdefault(rtype, {})[ptype] = names
        return out


def _grouped(acls: Mapping[str, StandardAcl], key: Callable[[StandardAcl], str]) -> ByName:
    groups: ByName = {}
    for acl_id, acl in acls.items():
        name = key(acl)
        group = groups.get(name)
        if group is None:
            groups[name] = [acl_id]
        else:
            group.append(acl_id)
    for group in groups.values():
        group.sort()
    return groups


def _grouped_pairs(acls: Mapping[str, StandardAcl]) -> dict[tuple[ResourceType, PatternType], ByName]:
    """(resource type, pattern type) -> resource name -> sorted ids, in one pass."""
    groups: dict[tuple[ResourceType, PatternType], ByName] = {}
    for acl_id, acl in acls.items():
        names = groups.get((acl.resource_type, acl.pattern_type))
        if names is None:
            names = groups[(acl.resource_type, acl.pattern_type)] = {}
        group = names.get(acl.resource_name)
        if group is None:
            names[acl.resource_name] = [acl_id]
        else:
            group.append(acl_id)
    for names in groups.values():
        for group in names.values():
            group.sort()
    return groups
