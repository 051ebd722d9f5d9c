"""Kafka's ACL filters with their exact `matches` semantics (spec §9): null fields, ANY, MATCH, no wildcards.

All filters are immutable values and safe to share between threads.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraftacl.authorizer.errors import InvalidFilterError
from kraftacl.authorizer.model.acls import (
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    StandardAcl,
)


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    """Matches resource patterns; `name=None` means any name (spec §9.2)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def __str__(self) -> str:
        """Kafka's ResourcePatternFilter.toString (`<any>` for a null name)."""
        name = "<any>" if self.name is None else self.name
        return (
            f"ResourcePatternFilter(resourceType={self.resource_type.name}, name={name}, "
            f"patternType={self.pattern_type.name})"
        )

    def matches(self, pattern: ResourcePattern) -> bool:
        """Kafka's ResourcePatternFilter.matches."""
        return self.matches_fields(pattern.resource_type, pattern.name, pattern.pattern_type)

    def matches_fields(self, resource_type: int, name: str, pattern_type: int) -> bool:
        """`matches` on the raw fields, so stored ACLs need no ResourcePattern allocation."""
        if self.resource_type != ResourceType.ANY and self.resource_type != resource_type:
            return False
        ptype = self.pattern_type
        if ptype not in (PatternType.ANY, PatternType.MATCH) and ptype != pattern_type:
            return False
        if self.name is None:
            return True
        if ptype == PatternType.ANY or ptype == pattern_type:
            return self.name == name
        # MATCH (spec §9.2 step 5)
        if pattern_type == PatternType.LITERAL:
            return self.name == name or name == WILDCARD_RESOURCE
        if pattern_type == PatternType.PREFIXED:
            return self.name.startswith(name)
        raise InvalidFilterError(f"Unsupported PatternType: {PatternType.from_code(pattern_type).name}")

    def find_indefinite_field(self) -> str | None:
        """The first field that keeps this filter from matching at most one pattern (spec §9.5)."""
        if self.resource_type == ResourceType.ANY:
            return "Resource type is ANY."
        if self.resource_type == ResourceType.UNKNOWN:
            return "Resource type is UNKNOWN."
        if self.name is None:
            return "Resource name is NULL."
        if self.pattern_type == PatternType.MATCH:
            return "Resource pattern type is MATCH."
        if self.pattern_type == PatternType.UNKNOWN:
            return "Resource pattern type is UNKNOWN."
        return None

    def is_unknown(self) -> bool:
        """True when the type or pattern type is UNKNOWN."""
        return self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    """Matches entries; `*` and `User:*` are plain strings here (spec §9.3)."""

    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def __str__(self) -> str:
        """Kafka's AccessControlEntryFilter.toString (`<any>` for a null principal or host)."""
        principal = "<any>" if self.principal is None else self.principal
        host = "<any>" if self.host is None else self.host
        return (
            f"(principal={principal}, host={host}, operation={self.operation.name}, "
            f"permissionType={self.permission_type.name})"
        )

    def matches(self, entry: AccessControlEntry) -> bool:
        """Kafka's AccessControlEntryFilter.matches."""
        return self.matches_fields(entry.principal, entry.host, entry.operation, entry.permission_type)

    def matches_fields(self, principal: str, host: str, operation: int, permission: int) -> bool:
        """`matches` on the raw fields."""
        return (
            (self.principal is None or self.principal == principal)
            and (self.host is None or self.host == host)
            and (self.operation == AclOperation.ANY or self.operation == operation)
            and (self.permission_type == AclPermissionType.ANY or self.permission_type == permission)
        )

    def find_indefinite_field(self) -> str | None:
        """The first indefinite field, in Kafka's order and words (spec §9.5)."""
        if self.principal is None:
            return "Principal is NULL"
        if self.host is None:
            return "Host is NULL"
        if self.operation == AclOperation.ANY:
            return "Operation is ANY"
        if self.operation == AclOperation.UNKNOWN:
            return "Operation is UNKNOWN"
        if self.permission_type == AclPermissionType.ANY:
            return "Permission type is ANY"
        if self.permission_type == AclPermissionType.UNKNOWN:
            return "Permission type is UNKNOWN"
        return None

    def is_unknown(self) -> bool:
        """True when the operation or permission is UNKNOWN."""
        return self.operation == AclOperation.UNKNOWN or self.permission_type == AclPermissionType.UNKNOWN


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """A pattern filter and an entry filter; a binding matches when both do (spec §9.1)."""

    pattern: ResourcePatternFilter = ResourcePatternFilter()
    entry: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        """Kafka's AclBindingFilter.matches."""
        return self.pattern.matches(binding.pattern) and self.entry.matches(binding.entry)

    def matches_acl(self, acl: StandardAcl) -> bool:
        """`matches` against a stored ACL without building a binding."""
        return self.pattern.matches_fields(acl.resource_type, acl.resource_name, acl.pattern_type) and (
            self.entry.matches_fields(acl.principal, acl.host, acl.operation, acl.permission_type)
        )

    def find_indefinite_field(self) -> str | None:
        """Pattern part first, then entry part."""
        return self.pattern.find_indefinite_field() or self.entry.find_indefinite_field()

    def matches_at_most_one(self) -> bool:
        """No indefinite field."""
        return self.find_indefinite_field() is None

    def is_unknown(self) -> bool:
        """Either part is unknown."""
        return self.pattern.is_unknown() or self.entry.is_unknown()

    @staticmethod
    def of(acl: StandardAcl) -> AclBindingFilter:
        """The exact filter for one ACL (Kafka's `AclBinding.toFilter()`)."""
        return AclBindingFilter(
            ResourcePatternFilter(acl.resource_type, acl.resource_name, acl.pattern_type),
            AccessControlEntryFilter(acl.principal, acl.host, acl.operation, acl.permission_type),
        )


ANY_FILTER = AclBindingFilter()
