"""Randomized metadata logs for the pipeline's differential tests: adds and removes (some in the same batch),
PREFIXED and `*` ACLs, DENYs, many principals (and `User:*`), specific hosts, several segments.

Each generated log is written by the real FileLog; the generator keeps every batch so tests can work out
offsets independently.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec.avro import new_uuid
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord

NAMES = ["orders", "orders-eu", "orders-us", "ord", "payments", "pay", "audit.log", "clicks", "a", "*"]
PRINCIPALS = [f"User:u{i}" for i in range(6)] + ["User:*", "Group:ops"]
HOSTS = ["*"] * 6 + ["10.0.0.1", "10.0.0.2"]
TYPES = [ResourceType.TOPIC] * 3 + [ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.CLUSTER]
OPS = [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]
T0 = 1_795_000_000_000


@dataclass
class GeneratedLog:
    """The log's directory, and per batch: (base offset, epoch, timestamp, records)."""

    directory: Path
    batches: list[tuple[int, int, int, list[MetadataRecord]]] = field(default_factory=list)

    @property
    def high_watermark(self) -> int:
        base, _, _, records = self.batches[-1]
        return base + len(records)

    def boundaries(self) -> list[int]:
        """Every offset between two batches, 0 and the high-water mark included."""
        return [0] + [base + len(records) for base, _, _, records in self.batches]

    def record_offsets(self) -> list[tuple[int, MetadataRecord, int, int, int]]:
        """(offset, record, batch base, epoch, timestamp) for every record."""
        return [
            (base + i, record, base, epoch, ts)
            for base, epoch, ts, records in self.batches
            for i, record in enumerate(records)
        ]


def _acl(rng: random.Random) -> tuple[int, str, int, str, str, int, int]:
    rtype = rng.choice(TYPES)
    name = "kafka-cluster" if rtype is ResourceType.CLUSTER else rng.choice(NAMES)
    pattern = PatternType.PREFIXED if name != "*" and rng.random() < 0.35 else PatternType.LITERAL
    permission = AclPermissionType.DENY if rng.random() < 0.2 else AclPermissionType.ALLOW
    return (
        int(rtype),
        name,
        int(pattern),
        rng.choice(PRINCIPALS),
        rng.choice(HOSTS),
        int(rng.choice(OPS)),
        int(permission),
    )


def random_log(directory: Path, seed: int, batches: int = 40, segment_bytes: int = 3000) -> GeneratedLog:
    """A log of `batches` batches of 1-6 records each, as the controller would write them (no duplicate content)."""
    rng = random.Random(seed)
    log = GeneratedLog(directory)
    live: dict[str, tuple[int, str, int, str, str, int, int]] = {}
    with FileLog(directory, segment_bytes=segment_bytes) as writer:
        for number in range(batches):
            records: list[MetadataRecord] = []
            for _ in range(rng.randrange(1, 7)):
                if live and rng.random() < 0.3:
                    gone = rng.choice(sorted(live))
                    del live[gone]
                    records.append(RemoveAccessControlEntryRecord(gone))
                    continue
                acl = _acl(rng)
                if acl in live.values():
                    continue
                acl_id = new_uuid()
                live[acl_id] = acl
                records.append(AccessControlEntryRecord(acl_id, *acl))
            if not records:
                continue
            ts = T0 + number * 1000
            result = writer.append(records, timestamp_ms=ts)
            log.batches.append((result.base_offset, result.epoch, ts, records))
    return log
