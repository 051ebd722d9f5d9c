"""Translation between metadata records (wire codes) and StandardAcl (Kafka's `StandardAclWithId`).

Pure functions; thread-safe.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.metadata_log.codec import RowTables, ace_records, acl_rows
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord

_new_acl = tuple.__new__
_intern = sys.intern
_TYPES = ResourceType._value2member_map_
_PATTERNS = PatternType._value2member_map_
_OPERATIONS = AclOperation._value2member_map_
_PERMISSIONS = AclPermissionType._value2member_map_
UNKNOWN_CODES = (ResourceType.UNKNOWN, PatternType.UNKNOWN, AclOperation.UNKNOWN, AclPermissionType.UNKNOWN)


def _by_code(table: Mapping[int, object], unknown: object) -> list[object]:
    """The member of each code 0..63 (`unknown` where the enum has none)."""
    return [table.get(code, unknown) for code in range(64)]


# A snapshot chunk's code columns -> members (`bulk_rows.add_columns`): every code in range(64) by
# list index, anything else UNKNOWN_CODES' member, exactly as `acl_from_record` maps them.
COLUMN_CODES = (
    _by_code(_TYPES, UNKNOWN_CODES[0]),
    _by_code(_PATTERNS, UNKNOWN_CODES[1]),
    _by_code(_OPERATIONS, UNKNOWN_CODES[2]),
    _by_code(_PERMISSIONS, UNKNOWN_CODES[3]),
)
# What a log payload decodes to on the replay fast path: StandardAcls converted as `acl_from_record` does.
ACL_ROWS = RowTables(
    StandardAcl,
    ResourceType.from_code,
    PatternType.from_code,
    AclOperation.from_code,
    AclPermissionType.from_code,
    _intern,
)


def acl_from_record(record: AccessControlEntryRecord) -> StandardAcl:
    """Unknown codes become UNKNOWN, as Kafka's `fromCode` does (spec §14.1); principals and hosts are
    interned, since thousands of ACLs share each one."""
    # tuple.__new__ builds the NamedTuple in C, skipping its generated Python __new__ (hot on snapshot loads).
    return _new_acl(
        StandardAcl,
        (
            _TYPES.get(record.resource_type, ResourceType.UNKNOWN),
            record.resource_name,
            _PATTERNS.get(record.pattern_type, PatternType.UNKNOWN),
            _intern(record.principal),
            _intern(record.host),
            _OPERATIONS.get(record.operation, AclOperation.UNKNOWN),
            _PERMISSIONS.get(record.permission_type, AclPermissionType.UNKNOWN),
        ),
    )


def record_from_acl(acl_id: str, acl: StandardAcl) -> AccessControlEntryRecord:
    """The AccessControlEntryRecord that creates (log) or describes (snapshot) this ACL."""
    return AccessControlEntryRecord(
        acl_id,
        int(acl.resource_type),
        acl.resource_name,
        int(acl.pattern_type),
        acl.principal,
        acl.host,
        int(acl.operation),
        int(acl.permission_type),
    )


def records_from_acls(ids: list[str], acls: list[StandardAcl]) -> list[AccessControlEntryRecord]:
    """`record_from_acl` for many ACLs at once (a bulk import); the codes stay the enums' int values."""
    return ace_records(ids, acls)


def batch_rows(records: Sequence[MetadataRecord]) -> tuple[list[str], list[StandardAcl | None]]:
    """A batch as (ids, rows: the StandardAcl an add creates, None for a remove), through the codec's entry point
    (decoded straight from the payload when the batch is still undecoded; converted as `acl_from_record` does)."""
    return acl_rows(records, ACL_ROWS)
