"""Kafka's JSON form of a metadata record, as kafka-dump-log's `--cluster-metadata-decoder` prints it: shared by
`log dump` of kraft-acl's log and of Apache Kafka's own files.

Pure functions; thread-safe.
"""

from __future__ import annotations

from typing import Any

from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord


def record_payload(record: MetadataRecord) -> dict[str, Any]:
    """Kafka's JSON form of a metadata record: type name, version, and lowerCamel fields with int codes."""
    if isinstance(record, AccessControlEntryRecord):
        data: dict[str, Any] = {
            "id": record.id,
            "resourceType": record.resource_type,
            "resourceName": record.resource_name,
            "patternType": record.pattern_type,
            "principal": record.principal,
            "host": record.host,
            "operation": record.operation,
            "permissionType": record.permission_type,
        }
        return {"type": "ACCESS_CONTROL_ENTRY_RECORD", "version": 0, "data": data}
    return {"type": "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", "version": 0, "data": {"id": record.id}}
