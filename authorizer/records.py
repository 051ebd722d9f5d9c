"""Translation between metadata records (wire codes) and StandardAcl (Kafka's `StandardAclWithId`).

Pure functions; thread-safe.
"""

from __future__ import annotations

import sys

from metadata_log.records import AccessControlEntryRecord

from authorizer.model import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl


def acl_from_record(record: AccessControlEntryRecord) -> StandardAcl:
    """Unknown codes become UNKNOWN, as Kafka's `fromCode` does (spec §14.1); principals and hosts are
    interned, since thousands of ACLs share each one."""
    return StandardAcl(
        ResourceType.from_code(record.resource_type),
        record.resource_name,
        PatternType.from_code(record.pattern_type),
        sys.intern(record.principal),
        sys.intern(record.host),
        AclOperation.from_code(record.operation),
        AclPermissionType.from_code(record.permission_type),
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
