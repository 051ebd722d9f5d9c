"""A batch's records as ACL rows, the third entry point of the v1 Avro batch format (after encoding a batch and
decoding it to records): ids and one row per add (None per remove), straight from the payload when the batch is
still undecoded (`LazyRecords` with the v1 writer schema, the replay's fast path), converted from the records
otherwise. The caller describes its row type in `RowTables` (the authorizer's StandardAcl, the pipeline's tuples).

A pure function; safe from any thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kraftacl.metadata_log.codec.lazy_records import LazyRecords
from kraftacl.metadata_log.codec.rows import RowTables
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord


def acl_rows(records: Sequence[MetadataRecord], tables: RowTables) -> tuple[list[str], list[Any]]:
    """(ids, rows) of one batch's records, in record order: `tables.row_type` per add, None per remove.
    DecodeError (base offset, file, reason) when an undecoded payload is malformed."""
    if isinstance(records, LazyRecords):
        fast = records.acl_rows(tables)
        if fast is not None:
            return fast
    row_type, resource_type, pattern_type, operation, permission_type, intern = tables
    new = tuple.__new__
    ids: list[str] = []
    rows: list[Any] = []
    for r in records:
        if type(r) is AccessControlEntryRecord:
            fields = (
                resource_type(r.resource_type),
                r.resource_name,
                pattern_type(r.pattern_type),
                intern(r.principal),
                intern(r.host),
                operation(r.operation),
                permission_type(r.permission_type),
            )
            rows.append(new(row_type, fields))
        elif type(r) is RemoveAccessControlEntryRecord:
            rows.append(None)
        else:
            raise TypeError(f"not a metadata record: {type(r).__name__}")
        ids.append(r.id)
    return ids, rows
