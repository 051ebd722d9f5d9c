"""The writer process of `test_kill_node.py`: an `AclNode` issuing controller requests forever, acknowledging each."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.model.filters import AccessControlEntryFilter, AclBindingFilter
from kraftacl.authorizer.state.node import AclNode
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.snapshots.policy import SnapshotPolicy
from tests.metadata_log.factories import batch_size_at, id_at

SEED_ACLS = 5000
LIFETIME = 800
IMMORTAL_EVERY = 16
LARGEST_CREATE = 40
SNAPSHOT_EVERY_RECORDS = 150
RETAIN_SNAPSHOTS = 2
CONFIG = AuthorizerConfig(super_users=frozenset({"User:admin"}))
GENERATION = "User:gen-"

_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)
_OPERATIONS = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL, AclOperation.ALTER)


@dataclass(frozen=True, slots=True)
class Request:
    """One controller request: create `creates` (ids `id_at(base + i)`), or delete a whole generation."""

    base: int
    creates: tuple[StandardAcl, ...] = ()
    delete_generation: int | None = None


def acl_at(offset: int, generation: int) -> StandardAcl:
    """The ACL created at `offset` by the request issued at `generation` (its unique name is `kill-OFFSET`)."""
    immortal = offset < SEED_ACLS or offset % IMMORTAL_EVERY == 0
    return StandardAcl(
        _TYPES[offset % len(_TYPES)],
        f"kill-{offset}",
        PatternType.PREFIXED if offset % 4 == 3 else PatternType.LITERAL,
        f"User:keeper-{offset % 13}" if immortal else f"{GENERATION}{generation}",
        "10.0.0.1" if offset % 5 == 4 else "*",
        _OPERATIONS[offset % len(_OPERATIONS)],
        AclPermissionType.DENY if offset % 6 == 5 else AclPermissionType.ALLOW,
    )


def generation_of(principal: str) -> int | None:
    """The generation a mortal ACL's principal names; None for an immortal one."""
    return int(principal[len(GENERATION) :]) if principal.startswith(GENERATION) else None


def plan(offset: int, principals: Iterable[str]) -> Request:
    """The request issued when the log's high-water mark is `offset` and the live ACLs have `principals`.

    Offset 0 seeds SEED_ACLS ACLs; then each request creates a "generation" of 1..LARGEST_CREATE ACLs
    or, once the oldest live generation is LIFETIME offsets old, deletes that whole generation with
    one DeleteAcls filter. One ACL in IMMORTAL_EVERY is never deleted, so the state grows slowly.
    """
    if offset == 0:
        return Request(0, tuple(acl_at(o, 0) for o in range(SEED_ACLS)))
    oldest = min((g for g in map(generation_of, principals) if g is not None), default=None)
    if oldest is not None and oldest <= offset - LIFETIME:
        return Request(offset, delete_generation=oldest)
    size = batch_size_at(offset, LARGEST_CREATE)
    return Request(offset, tuple(acl_at(offset + i, offset) for i in range(size)))


def generation_filter(generation: int) -> AclBindingFilter:
    """The DeleteAcls filter that matches every ACL of one generation (and nothing else)."""
    return AclBindingFilter(entry=AccessControlEntryFilter(principal=f"{GENERATION}{generation}"))


class MarkedNode(AclNode):
    """An AclNode that prints a marker before and after each snapshot write."""

    out: TextIO = sys.stdout

    def take_snapshot(self) -> Path:
        end = self.image.provenance.next_offset
        self.out.write(f"snap-begin {end}\n")
        self.out.flush()
        path = super().take_snapshot()
        self.out.write(f"snap-end {end}\n")
        self.out.flush()
        return path


def node_at(directory: Path) -> AclNode:
    """The writer's node (not started)."""
    policy = SnapshotPolicy(max_records=SNAPSHOT_EVERY_RECORDS, max_bytes=1 << 40)
    return MarkedNode(FileLog(directory), directory, CONFIG, policy, RETAIN_SNAPSHOTS)


def issue(node: AclNode, request: Request) -> None:
    """Send one request through the node's controller, with ids that are a function of the offsets."""
    if request.delete_generation is not None:
        node.controller.delete_acls([generation_filter(request.delete_generation)])
        return
    ids: Iterator[str] = (id_at(request.base + i) for i in range(len(request.creates)))
    node.controller.new_id = ids.__next__
    node.controller.create_acls(request.creates)


def main(directory: Path) -> None:
    """Usage: python -m tests.authorizer.state.kill_node_writer DIRECTORY.

    Imports everything, then waits for a line on stdin (so the test can overlap the imports with its
    checks of the previous kill), opens `AclNode(FileLog(DIRECTORY), snapshot_dir=DIRECTORY)` with a
    small snapshot policy and starts it. Prints, each line flushed:

        snap-begin END   before every snapshot write (END: its end offset), at start-up too
        snap-end END     after it returned (file renamed into place, directory fsynced, retention done)
        ready HWM        once the node is started
        ack BASE LAST    after a controller request returned: its batch is durable and applied

    Each request is `plan(offset, principals)`: the log holds one deterministic sequence of batches
    however often the writer is killed.
    """
    sys.stdin.readline()  # "go": the test has checked the previous kill
    out = sys.stdout
    node = node_at(directory)
    node.start()
    out.write(f"ready {node.backend.high_watermark()}\n")
    out.flush()
    while True:
        base = node.backend.high_watermark()
        issue(node, plan(base, (acl.principal for acl in node.image.acls.values())))
        end = node.backend.high_watermark()
        if end <= base:
            raise AssertionError(f"the request at offset {base} wrote no batch")
        out.write(f"ack {base} {end - 1}\n")
        out.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
