"""Synthetic ACL data that benchmarks and tests share: the records of a bench log (`record_batches`) and a snapshot
of distinct ACLs (`write_snapshot`), each reproducible from its seed.

Pure functions apart from the files `write_snapshot` writes; thread-safe.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.image import AclsImage, Provenance
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord
from kraftacl.metadata_log.uuids import new_uuid
from kraftacl.snapshots.format import SnapshotHeader
from kraftacl.snapshots.store import SnapshotStore


def bench_acl(acl_id: str, n: int, prefix: str = "svc") -> AccessControlEntryRecord:
    """The ACL the n-th record of a bench log adds: three types, every 7th PREFIXED, every 20th a DENY."""
    return AccessControlEntryRecord(
        acl_id,
        2 + n % 3,
        f"{prefix}{n % 997}.events-{n}",
        3 + (n % 7 == 0),
        f"User:u{n % 5000}",
        "*",
        3 + n % 6,
        3 - (n % 20 == 0),
    )


def record_batches(count: int, removes: float, seed: int = 5, prefix: str = "svc") -> list[list[MetadataRecord]]:
    """`count` records in batches of 1000: adds of distinct ACLs, and removes of earlier ones."""
    rng = random.Random(seed)
    live: list[str] = []
    batches: list[list[MetadataRecord]] = []
    batch: list[MetadataRecord] = []
    for n in range(count):
        if live and rng.random() < removes:
            batch.append(RemoveAccessControlEntryRecord(live.pop(rng.randrange(len(live)))))
        else:
            acl_id = new_uuid()
            live.append(acl_id)
            batch.append(bench_acl(acl_id, n, prefix))
        if len(batch) == 1000:
            batches.append(batch)
            batch = []
    if batch:
        batches.append(batch)
    return batches


PROBE_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # a fixed id the snapshot holds, for `cat`


def write_snapshot(directory: Path, count: int, seed: int = 11) -> Path:
    """A snapshot of `count` distinct ACLs (TOPIC/GROUP, literal and prefixed, 5,000 principals, 5% DENY)."""
    contents = acl_contents(count, seed)
    acls: dict[str, StandardAcl] = {PROBE_ID: next(contents)}
    acls.update((new_uuid(), acl) for acl in contents)
    image = AclsImage(OverlayMap(acls), Provenance(count - 1, 1, 1_700_000_000_000))
    return SnapshotStore(directory).write_chunks(SnapshotHeader(count, 1, 1_700_000_000_000), image.chunks())


def acl_contents(count: int, seed: int = 11) -> Iterator[StandardAcl]:
    """The snapshot's ACLs, in order (distinct: each has its own resource name)."""
    rng = random.Random(seed)
    for n in range(count):
        yield _acl(n, rng)


def _acl(n: int, rng: random.Random) -> StandardAcl:
    return StandardAcl(
        ResourceType.TOPIC if n % 4 else ResourceType.GROUP,
        f"svc{n % 997}.events-{n}",
        PatternType.PREFIXED if n % 7 == 0 else PatternType.LITERAL,
        f"User:u{rng.randrange(5000)}",
        "*",
        rng.choice((AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL)),
        AclPermissionType.DENY if n % 20 == 0 else AclPermissionType.ALLOW,
    )
