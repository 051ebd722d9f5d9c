"""Kafka's metadata record frame and control records, decoded: the ACL records and transaction markers in
full, every other metadata record skipped by its frame, control records by their key.

Pure functions; the values they return are frozen.

The metadata frame (spec §14.2, `AbstractApiMessageSerde.read`) is `uvarint frameVersion (1) | uvarint
apiKey | uvarint version | body`, the body in the record's flexible encoding. For example
`01 13 00 <16-byte id> 00` is a RemoveAccessControlEntryRecord v0 (apiKey 19) with no tagged fields.
`AccessControlEntryRecord` (18) and `RemoveAccessControlEntryRecord` (19) have only version 0 in every
Kafka 3.x and 4.x release (checked up to 4.4.0); a higher version is refused as Kafka's generated reader
refuses it. Control records (`ControlRecordUtils`) have a 4-byte key `int16 version | int16 type` and a
value in the control message's own flexible encoding, with no frame.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraftacl.metadata_log.kafka_files.wire import WireError, WireReader
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord

ACCESS_CONTROL_ENTRY = 18
REMOVE_ACCESS_CONTROL_ENTRY = 19
BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION = 23, 24, 25
# MetadataRecordType of Kafka 4.4.0 (generated from metadata/src/main/resources/common/metadata/*.json).
RECORD_TYPES = {
    0: "REGISTER_BROKER_RECORD",
    1: "UNREGISTER_BROKER_RECORD",
    2: "TOPIC_RECORD",
    3: "PARTITION_RECORD",
    4: "CONFIG_RECORD",
    5: "PARTITION_CHANGE_RECORD",
    7: "FENCE_BROKER_RECORD",
    8: "UNFENCE_BROKER_RECORD",
    9: "REMOVE_TOPIC_RECORD",
    10: "DELEGATION_TOKEN_RECORD",
    11: "USER_SCRAM_CREDENTIAL_RECORD",
    12: "FEATURE_LEVEL_RECORD",
    14: "CLIENT_QUOTA_RECORD",
    15: "PRODUCER_IDS_RECORD",
    17: "BROKER_REGISTRATION_CHANGE_RECORD",
    18: "ACCESS_CONTROL_ENTRY_RECORD",
    19: "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
    20: "NO_OP_RECORD",
    21: "ZK_MIGRATION_STATE_RECORD",
    22: "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
    23: "BEGIN_TRANSACTION_RECORD",
    24: "END_TRANSACTION_RECORD",
    25: "ABORT_TRANSACTION_RECORD",
    26: "REMOVE_DELEGATION_TOKEN_RECORD",
    27: "REGISTER_CONTROLLER_RECORD",
    28: "CLEAR_ELR_RECORD",
    29: "UNREGISTER_CONTROLLER_RECORD",
}
_TRANSACTIONS = {BEGIN_TRANSACTION: "BEGIN", END_TRANSACTION: "END", ABORT_TRANSACTION: "ABORT"}
# ControlRecordType: code -> the name kafka-dump-log prints.
CONTROL_TYPES = {
    0: "Abort",
    1: "Commit",
    2: "LeaderChange",
    3: "SnapshotHeader",
    4: "SnapshotFooter",
    5: "KRaftVersion",
    6: "KRaftVoters",
}
LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION = 2, 3, 4, 5


def record_type_name(api_key: int) -> str:
    """Kafka's MetadataRecordType name of an apiKey (a newer, unknown one is named by its number)."""
    return RECORD_TYPES.get(api_key, f"UNKNOWN_METADATA_RECORD_{api_key}")


@dataclass(frozen=True, slots=True)
class TransactionMarker:
    """Begin/End/AbortTransactionRecord: `kind` BEGIN, END or ABORT; `text` the optional Name or Reason."""

    kind: str
    text: str | None = None

    @property
    def name(self) -> str:
        return f"{self.kind}_TRANSACTION_RECORD"


@dataclass(frozen=True, slots=True)
class OtherRecord:
    """A metadata record that ACLs do not need (topics, brokers, configs, ...), skipped by its frame."""

    api_key: int
    version: int
    size: int  # bytes of the whole value, frame included

    @property
    def name(self) -> str:
        return record_type_name(self.api_key)


MetadataEntry = AccessControlEntryRecord | RemoveAccessControlEntryRecord | TransactionMarker | OtherRecord


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A control record: its type code, kafka-dump-log's name for it, and the fields read (Version, ...)."""

    type: int
    fields: tuple[tuple[str, int], ...]

    @property
    def name(self) -> str:
        return CONTROL_TYPES.get(self.type, f"Unknown({self.type})")

    def field(self, name: str) -> int | None:
        return dict(self.fields).get(name)


def _short(reader: WireReader, what: str) -> int:
    """Kafka's `unsignedIntToShort`: an unsigned varint that must fit a short."""
    at = reader.pos
    value = reader.uvarint(what)
    if value > 0x7FFF:
        raise WireError(at, f"value for {what} was too large: {value}")
    return value


def decode_metadata(value: bytes) -> MetadataEntry:
    """One data record's value; WireError (position within the value) names what is wrong."""
    reader = WireReader(value)
    frame = _short(reader, "frame version")
    if frame == 0:
        raise WireError(0, "metadata record with frame version 0 (the KRaft preview of 2.8 is not supported)")
    if frame != 1:
        raise WireError(0, f"unknown metadata frame version {frame} (only frame version 1 is supported)")
    api_key = _short(reader, "type")
    version = _short(reader, "version")
    if api_key not in (ACCESS_CONTROL_ENTRY, REMOVE_ACCESS_CONTROL_ENTRY, *_TRANSACTIONS):
        return OtherRecord(api_key, version, len(value))
    if version != 0:
        raise WireError(reader.pos, f"cannot read version {version} of {record_type_name(api_key)} (Kafka writes 0)")
    entry: MetadataEntry
    if api_key == ACCESS_CONTROL_ENTRY:
        entry = AccessControlEntryRecord(
            reader.uuid("Id"),
            reader.int8("ResourceType"),
            _string(reader, "ResourceName"),
            reader.int8("PatternType"),
            _string(reader, "Principal"),
            _string(reader, "Host"),
            reader.int8("Operation"),
            reader.int8("PermissionType"),
        )
        reader.tagged_fields("AccessControlEntryRecord")
    elif api_key == REMOVE_ACCESS_CONTROL_ENTRY:
        entry = RemoveAccessControlEntryRecord(reader.uuid("Id"))
        reader.tagged_fields("RemoveAccessControlEntryRecord")
    else:
        tagged = reader.tagged_fields(record_type_name(api_key))
        text = WireReader(tagged[0]).compact_string("Name", nullable=True) if 0 in tagged else None
        entry = TransactionMarker(_TRANSACTIONS[api_key], text)
    if reader.remaining:
        raise WireError(reader.pos, f"found {reader.remaining} byte(s) of garbage after {api_key}")
    return entry


def _string(reader: WireReader, what: str) -> str:
    text = reader.compact_string(what)
    assert text is not None  # non-nullable: compact_string raised on null
    return text


def decode_control(key: bytes, value: bytes) -> ControlRecord:
    """One control record; the fields read are those the tools show (the rest is skipped by its length)."""
    keys = WireReader(key)
    if len(key) < 4:
        raise WireError(0, f"control record key of {len(key)} bytes (needs 4)")
    if keys.int16("control key version") < 0:
        raise WireError(0, "negative control record key version")
    kind = keys.int16("control type")
    reader = WireReader(value)
    fields = [("Version", reader.int16("Version"))]
    if kind == SNAPSHOT_HEADER:
        fields.append(("LastContainedLogTimestamp", reader.int64("LastContainedLogTimestamp")))
    elif kind == KRAFT_VERSION:
        fields.append(("KRaftVersion", reader.int16("KRaftVersion")))
    elif kind == LEADER_CHANGE:
        fields.append(("LeaderId", reader.int32("LeaderId")))
    return ControlRecord(kind, tuple(fields))
