"""Between the contract's Structs (`api.wire`) and the authorizer's values, for the clients of serve: an ACL or a
filter as a request carries it, and a stored ACL of an answer back as (id, StandardAcl).

Pure functions over immutable values; the lookup tables are built once at import.
"""

from __future__ import annotations

from kraftacl.api.wire import AclIn, AclOut, FilterIn
from kraftacl.authorizer.inputs.validate import parse_acl
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.model.filters import AclBindingFilter

_TYPES = dict(ResourceType.__members__)
_PATTERNS = dict(PatternType.__members__)
_OPERATIONS = dict(AclOperation.__members__)
_PERMISSIONS = dict(AclPermissionType.__members__)


def acl_fields(acl: StandardAcl) -> tuple[str, str, str, str, str, str, str]:
    """The seven fields of an ACL as the API writes them (enums by name), in AclIn's and AclOut's order."""
    return (
        acl.resource_type.name,
        acl.resource_name,
        acl.pattern_type.name,
        acl.principal,
        acl.host,
        acl.operation.name,
        acl.permission_type.name,
    )


def acl_in(acl: StandardAcl) -> AclIn:
    """One ACL as create and import send it."""
    return AclIn(*acl_fields(acl))


def filter_in(f: AclBindingFilter) -> FilterIn:
    """One AclBindingFilter as describe and delete send it (null strings match anything)."""
    p, e = f.pattern, f.entry
    return FilterIn(
        p.resource_type.name,
        p.name,
        p.pattern_type.name,
        e.principal,
        e.host,
        e.operation.name,
        e.permission_type.name,
    )


def acl_of_in(a: AclIn) -> StandardAcl:
    """An ACL serve sent back in a request's form (an import's `would_add`), through the validating parse."""
    return parse_acl(
        {
            "resource_type": a.resource_type,
            "resource_name": a.resource_name,
            "pattern_type": a.pattern_type,
            "principal": a.principal,
            "host": a.host,
            "operation": a.operation,
            "permission_type": a.permission_type,
        }
    )


def stored_acl(a: AclOut) -> tuple[str, StandardAcl]:
    """(id, ACL) of one stored ACL of an answer: by dict lookups (a million of them in an image or an export), or
    through the validating parse when a name is unexpected (which names the field)."""
    try:
        acl = StandardAcl(
            _TYPES[a.resource_type],
            a.resource_name,
            _PATTERNS[a.pattern_type],
            a.principal,
            a.host,
            _OPERATIONS[a.operation],
            _PERMISSIONS[a.permission_type],
        )
    except KeyError:
        acl = acl_of_in(
            AclIn(a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host, a.operation, a.permission_type)
        )
    return a.id, acl
