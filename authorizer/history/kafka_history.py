"""The history of ACL ids over Apache Kafka's own metadata log: the offset, epoch and time of every record that
added or removed one, with Kafka's metadata transactions honoured as `kafka_state` honours them (the records of
an aborted or unfinished transaction are no events; a committed one's are, at their own offsets).

A pure function over a `KafkaMetadataFiles` listing; it reads the segments once, read-only.
"""

from __future__ import annotations

from collections.abc import Iterable

from kraftacl.authorizer.history.acl_history import AclEvent, AclHistory
from kraftacl.authorizer.history.kafka_state import KafkaAclReplay, KafkaStateError
from kraftacl.authorizer.state.records import acl_from_record
from kraftacl.metadata_log.kafka_files.files import KafkaMetadataFiles
from kraftacl.metadata_log.kafka_files.messages import TransactionMarker
from kraftacl.metadata_log.kafka_files.reader import log_batches
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord


def kafka_acl_history(files: KafkaMetadataFiles, acl_ids: Iterable[str]) -> AclHistory:
    """Every event of each of `acl_ids` in the log's segments, up to the end of its last whole batch."""
    wanted = frozenset(acl_ids)
    found: dict[str, list[AclEvent]] = {acl_id: [] for acl_id in wanted}
    replay = KafkaAclReplay(files)
    start, end = replay.log_start_offset(), replay.end_offset()
    pending: list[tuple[str, AclEvent]] | None = None  # the events of an open transaction
    for decoded in log_batches(files, start, []):
        batch = decoded.batch
        if batch.is_control:
            continue
        for offset, entry in decoded.entries:
            if isinstance(entry, TransactionMarker):
                if (entry.kind == "BEGIN") == (pending is not None):
                    where = "inside a transaction" if pending is not None else "without a BeginTransactionRecord"
                    raise KafkaStateError(f"offset {offset}: {entry.name} {where}")
                if entry.kind == "END":
                    for acl_id, event in pending or ():
                        found[acl_id].append(event)
                pending = [] if entry.kind == "BEGIN" else None
                continue
            if type(entry) is AccessControlEntryRecord:
                acl_id, acl = entry.id, acl_from_record(entry)
            elif type(entry) is RemoveAccessControlEntryRecord:
                acl_id, acl = entry.id, None
            else:
                continue
            if acl_id in wanted:
                event = AclEvent(offset, batch.epoch, batch.max_timestamp, acl)
                if pending is None:
                    found[acl_id].append(event)
                else:
                    pending.append((acl_id, event))
    return AclHistory(start, end, {acl_id: tuple(events) for acl_id, events in found.items()})
