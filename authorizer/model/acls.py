"""Kafka's ACL model: the four enums with their wire codes and parsers, resource patterns, entries and bindings.

Every type here is an immutable value, safe to share between threads (spec §1, §2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple, Self, TypeVar, cast


class _KafkaEnum(IntEnum):
    """An enum whose declaration order is its wire code; unknown codes and names map to UNKNOWN."""

    @classmethod
    def from_code(cls, code: int) -> Self:
        """Kafka's `fromCode`: an unknown code gives UNKNOWN, never an exception."""
        member = cls._value2member_map_.get(code)
        return member if member is not None else cls(0)  # type: ignore[return-value]

    @classmethod
    def from_string(cls, text: str) -> Self:
        """Kafka's `fromString` for ResourceType/AclOperation/AclPermissionType: upper-case, exact name."""
        return cls.__members__.get(text.upper(), cls(0))


class ResourceType(_KafkaEnum):
    """Kafka's ResourceType (spec §1.1)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_KafkaEnum):
    """Kafka's PatternType (spec §1.2); `from_string` is case-sensitive, unlike the others."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @classmethod
    def from_string(cls, text: str) -> Self:
        return cls.__members__.get(text, cls(0))

    def is_specific(self) -> bool:
        """True only for LITERAL and PREFIXED."""
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


class AclOperation(_KafkaEnum):
    """Kafka's AclOperation (spec §1.3)."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_KafkaEnum):
    """Kafka's AclPermissionType (spec §1.4)."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class AuthorizationResult(IntEnum):
    """The answer to one action."""

    ALLOWED = 0
    DENIED = 1


def pascal_name(member: IntEnum) -> str:
    """Kafka's PascalCase display form (`TRANSACTIONAL_ID` -> `TransactionalId`), as in the audit log."""
    return "".join(part.capitalize() for part in member.name.split("_"))


T = TypeVar("T")

WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    """A resource type, name and pattern type (Kafka's ResourcePattern)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    """Who, from where, which operation, allow or deny (Kafka's AccessControlEntry)."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission_type.name})"
        )


@dataclass(frozen=True, slots=True)
class AclBinding:
    """A pattern bound to an entry (Kafka's AclBinding)."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"

    def to_acl(self) -> StandardAcl:
        """The flat 7-tuple form stored by the authorizer."""
        p, e = self.pattern, self.entry
        return StandardAcl(p.resource_type, p.name, p.pattern_type, e.principal, e.host, e.operation, e.permission_type)


class StandardAcl(NamedTuple):
    """A stored ACL: Kafka's StandardAcl 7-tuple; equality uses all seven fields, case-sensitively.

    A NamedTuple rather than a dataclass: construction, hashing and equality run in C, which is most
    of the cost of loading a million ACLs.
    """

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def binding(self) -> AclBinding:
        """The AclBinding view of this ACL."""
        return AclBinding(
            ResourcePattern(self.resource_type, self.resource_name, self.pattern_type),
            AccessControlEntry(self.principal, self.host, self.operation, self.permission_type),
        )

    def index_key(self) -> tuple[int, str, int, int, str, str, int]:
        """Kafka's StandardAcl.compareTo order without the descending name (see `kafka_order`)."""
        return (
            self.resource_type,
            self.resource_name,
            self.pattern_type,
            self.operation,
            self.principal,
            self.host,
            self.permission_type,
        )

    def __str__(self) -> str:
        return (
            f"StandardAcl(resourceType={self.resource_type.name}, resourceName={self.resource_name}, "
            f"patternType={self.pattern_type.name}, principal={self.principal}, host={self.host}, "
            f"operation={self.operation.name}, permissionType={self.permission_type.name})"
        )


def kafka_order(acls: list[T], acl_of: Callable[[T], StandardAcl] | None = None) -> list[T]:
    """Sort in Kafka's index order (spec §6): type asc, name DESC, pattern, operation, principal, host, permission.

    `acl_of` picks the ACL out of each item (e.g. of an `(id, acl)` pair); by default items are ACLs.
    Python compares code points where Java compares UTF-16 code units; the two differ only for
    characters outside the Basic Multilingual Plane, which affects listing order only.
    """
    get: Callable[[T], StandardAcl] = acl_of if acl_of is not None else cast("Callable[[T], StandardAcl]", _same)
    out = sorted(acls, key=lambda x: _rest_key(get(x)))
    out.sort(key=lambda x: get(x).resource_name, reverse=True)
    out.sort(key=lambda x: get(x).resource_type)
    return out


# A name's UTF-32-BE bytes b mapped to 0xFF - b compare DESCENDING; every code point's first byte is 0 (0xFF
# mapped), set to 0xFE, and a final 0xFF ranks a proper prefix after the longer name: "orders-eu" < "orders" < "ord".
# Principal and host compare ascending as UTF-8 (code point order), NUL escaped as 00 01 and ended by 00 00, so that
# a proper prefix ranks first.
_INVERTED = bytes(0xFF - b for b in range(256))


def kafka_sort_key(acl: StandardAcl) -> bytes:
    """One bytes key that sorts ACLs in Kafka's index order (`kafka_order`), for merging runs sorted in pieces
    (bytes: no object the garbage collector tracks)."""
    name = bytearray(acl.resource_name.encode("utf-32-be", "surrogatepass").translate(_INVERTED))
    name[0::4] = b"\xfe" * (len(name) // 4)
    return b"".join(
        (
            bytes((acl.resource_type,)),
            name,
            b"\xff",
            bytes((acl.pattern_type, acl.operation)),
            _ascending(acl.principal),
            _ascending(acl.host),
            bytes((acl.permission_type,)),
        )
    )


def _ascending(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\x01") + b"\x00\x00"


def _same(acl: StandardAcl) -> StandardAcl:
    return acl


def _rest_key(a: StandardAcl) -> tuple[int, int, str, str, int]:
    return (a.pattern_type, a.operation, a.principal, a.host, a.permission_type)


def split_principal(principal: str) -> tuple[str, str] | None:
    """Split `Type:name` at the first colon; None when there is no colon (such a principal matches nothing)."""
    colon = principal.find(":")
    if colon < 0:
        return None
    return principal[:colon], principal[colon + 1 :]
