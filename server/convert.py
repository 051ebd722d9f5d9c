"""Between the API's JSON shapes (`api.wire`) and the authorizer's values: enum names with Kafka's parsing
rules, Kafka's string limits, and the field at fault in every error.

Pure functions over immutable values; the lookup tables are built once at import.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar

from kraftacl.api.convert import acl_fields
from kraftacl.api.wire import MAX_STRING_BYTES, AclIn, AclOut, ActionIn, FilterIn
from kraftacl.authorizer.decision.standard import Action
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.model.filters import AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter
from kraftacl.server.errors import BadRequest

E = TypeVar("E", bound=IntEnum)


# Kafka's `fromString`: ResourceType, AclOperation and AclPermissionType upper-case the text (the
# `upper` argument below), PatternType does not.
OPERATIONS: dict[str, AclOperation] = dict(AclOperation.__members__)
RESOURCE_TYPES: dict[str, ResourceType] = dict(ResourceType.__members__)
PERMISSIONS: dict[str, AclPermissionType] = dict(AclPermissionType.__members__)
PATTERNS: dict[str, PatternType] = dict(PatternType.__members__)


def enum_of(table: dict[str, E], text: str, field: str, upper: bool = True) -> E:
    """The member `text` names (Kafka's case rules), or BadRequest naming the field and the valid names."""
    member = table.get(text)
    if member is None and upper:
        member = table.get(text.upper())
    if member is None:
        raise BadRequest(f"{text!r} is not one of {', '.join(table)}", field)
    return member


def lenient_enum(table: dict[str, E], text: str, upper: bool = True) -> E:
    """Kafka's `fromString` exactly: a name that is no member becomes UNKNOWN (code 0), refused per entry (KIP-140)."""
    member = table.get(text)
    if member is None and upper:
        member = table.get(text.upper())
    return member if member is not None else next(iter(table.values()))


def check_bytes(text: str, field: str) -> str:
    """Kafka's protocol strings hold at most 32,767 UTF-8 bytes (spec §2)."""
    if len(text) > MAX_STRING_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_STRING_BYTES:
        raise BadRequest(f"longer than {MAX_STRING_BYTES} UTF-8 bytes", field)
    return text


def action_of(a: ActionIn, field: str) -> Action:
    """One authorize action; every enum must name a member (a typo must not silently deny)."""
    return Action(
        enum_of(OPERATIONS, a.operation, f"{field}.operation"),
        enum_of(RESOURCE_TYPES, a.resource_type, f"{field}.resource_type"),
        check_bytes(a.resource_name, f"{field}.resource_name"),
        enum_of(PATTERNS, a.pattern_type, f"{field}.pattern_type", upper=False),
        a.ref_count,
        a.log_if_allowed,
        a.log_if_denied,
    )


def acl_of(a: AclIn, field: str) -> StandardAcl:
    """One ACL to create; unknown enum names become UNKNOWN, which the controller refuses per entry (KIP-140)."""
    return StandardAcl(
        lenient_enum(RESOURCE_TYPES, a.resource_type),
        check_bytes(a.resource_name, f"{field}.resource_name"),
        lenient_enum(PATTERNS, a.pattern_type, upper=False),
        check_bytes(a.principal, f"{field}.principal"),
        check_bytes(a.host, f"{field}.host"),
        lenient_enum(OPERATIONS, a.operation),
        lenient_enum(PERMISSIONS, a.permission_type),
    )


def filter_of(f: FilterIn) -> AclBindingFilter:
    """Kafka's AclBindingFilter (unknown enum names become UNKNOWN, as Kafka's fromString does)."""
    return AclBindingFilter(
        ResourcePatternFilter(
            lenient_enum(RESOURCE_TYPES, f.resource_type),
            f.resource_name,
            lenient_enum(PATTERNS, f.pattern_type, upper=False),
        ),
        AccessControlEntryFilter(
            f.principal,
            f.host,
            lenient_enum(OPERATIONS, f.operation),
            lenient_enum(PERMISSIONS, f.permission_type),
        ),
    )


def acl_out(acl_id: str, acl: StandardAcl) -> AclOut:
    """The API's form of a stored ACL."""
    return AclOut(acl_id, *acl_fields(acl))
