"""Where `import` writes and `export` reads ACLs: a kraft-acl log (embedded or Kafka-backed), or a running
`kraft-acl serve` (its import endpoint and describe).

Each target is a small immutable description; every method opens what it needs and closes it before
returning, except that a log stays open after an import until its `Imported.finish` (called once the
command has reported); one command invocation uses a target from one thread.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import httpx

from kraftacl.api.client import ServerTarget
from kraftacl.api.convert import acl_in, acl_of_in, stored_acl
from kraftacl.api.endpoints import DESCRIBE_ACLS, IMPORT_ACLS
from kraftacl.api.import_wire import ImportIn
from kraftacl.api.targets import LogTarget
from kraftacl.api.wire import DescribeIn
from kraftacl.authorizer.history.metadata_source import read_state
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.gc_pause import paused_gc
from kraftacl.authorizer.state.node import AclNode
from kraftacl.metadata_log.backends.file.dir_files import refuse_foreign
from kraftacl.metadata_log.backends.memory import MemoryLog

IMPORT_TIMEOUT_S = 900.0  # a million ACLs through a busy serve: parsed, validated, written, caught up


@dataclass(frozen=True)
class Imported:
    """What an import did: counts as `kraft-acl import` reports them, and the ACLs a dry run would add."""

    added: int
    present: int  # already stored: skipped
    repeated: int  # a copy of an earlier entry of the same input: skipped
    base_offset: int | None = None  # where the one batch landed (None: nothing written, or a dry run)
    would_add: list[StandardAcl] = field(default_factory=list)  # dry run only
    # What is left once the result is reported (the snapshot a log's policy asked for, closing the log);
    # call it once the report is out, and before reading the target again. Idempotent.
    finish: Callable[[], None] = lambda: None


def _finisher(node: AclNode) -> Callable[[], None]:
    """Take the snapshot the import left to the policy, then close the node; only the first call does."""
    done = False

    def finish() -> None:
        nonlocal done
        if not done:
            done = True
            try:
                node.take_deferred_snapshot()
                if node.snapshot_failure is not None:  # the import itself is durable; say so, as acls --add does
                    print(f"kraft-acl: warning: {node.snapshot_failure}", file=sys.stderr)
            finally:
                node.close()

    return finish


class AclTarget(Protocol):
    """What import and export need from a place that keeps ACLs."""

    @property
    def description(self) -> str:
        """What the target is, for messages: `the kraft-acl log in /data/meta`."""

    def import_acls(self, acls: list[StandardAcl], dry_run: bool) -> Imported:
        """Add the ACLs not present yet in one atomic step (or only say which, with `dry_run`)."""

    def acls_at(self, offset: int | None) -> Mapping[str, StandardAcl]:
        """The ACLs by id at `offset` (default: now), read afresh."""


@dataclass(frozen=True)
class LogAclTarget:
    """A kraft-acl log: an embedded directory or a Kafka topic (api.targets.LogTarget)."""

    log: LogTarget

    @property
    def description(self) -> str:
        if self.log.log_dir is not None:
            return f"the kraft-acl log in {self.log.log_dir}"
        return f"the kraft-acl log on topic {self.log.topic or 'kraft-acl-metadata'} of {self.log.bootstrap_servers}"

    def import_acls(self, acls: list[StandardAcl], dry_run: bool) -> Imported:
        """One batch through the controller (the writer lock or Kafka fencing keeps other writers out); the
        log stays open, and the policy's snapshot waits, until `finish` (after the report)."""
        if dry_run and self.log.log_dir is not None and self.log.log_dir.is_dir():
            refuse_foreign(self.log.log_dir)  # a dry run refuses a directory of files kraft-acl did not write
        if dry_run and self.log.log_dir is not None and not self.log.log_dir.exists():
            node = AclNode(MemoryLog())  # a directory the import would create: nothing is there yet
            node.start()
        else:
            node = self.log.open_node(write=not dry_run)
        node.defer_snapshots = True
        finish = _finisher(node)
        try:
            with paused_gc():
                result = node.controller.import_acls(acls, dry_run=dry_run)
        except BaseException:
            finish()
            raise
        would_add = [acl for _, acl in result.added] if dry_run else []
        return Imported(len(result.added), result.present, result.repeated, result.base_offset, would_add, finish)

    def acls_at(self, offset: int | None) -> Mapping[str, StandardAcl]:
        if self.log.log_dir is not None:  # any format: kraft-acl's log, or Apache Kafka's metadata
            return read_state(self.log.log_dir, offset).image.acls
        node = AclNode(self.log.backend(write=False))
        try:
            node.start(to_offset=offset)
            return node.image.acls
        finally:
            node.close()


@dataclass(frozen=True)
class ServerAclTarget:
    """A running `kraft-acl serve` (controller role): its controller writes the import as one batch."""

    server: ServerTarget

    @property
    def description(self) -> str:
        return f"the kraft-acl serve at {self.server.url}"

    def import_acls(self, acls: list[StandardAcl], dry_run: bool) -> Imported:
        """POST /v1/acls/import (ServerError on refusal: 400 names the element and field)."""
        client = self.server.connect()
        client.http.timeout = httpx.Timeout(IMPORT_TIMEOUT_S)
        try:
            answer = client.call(IMPORT_ACLS, ImportIn(list(map(acl_in, acls)), dry_run))
        finally:
            client.close()
        would_add = [acl_of_in(a) for a in answer.would_add or []]
        return Imported(answer.added, answer.present, answer.repeated, answer.base_offset, would_add)

    def acls_at(self, offset: int | None) -> Mapping[str, StandardAcl]:
        """Every ACL of serve's current state, all from one state (one describe call); `offset` must be None."""
        if offset is not None:
            raise ValueError("serve answers its current state only")
        client = self.server.connect()
        client.http.timeout = httpx.Timeout(IMPORT_TIMEOUT_S)
        try:
            with paused_gc():  # a million ACLs become objects: no collection pass walks them meanwhile
                return dict(map(stored_acl, client.call(DESCRIBE_ACLS, DescribeIn()).acls))
        finally:
            client.close()
