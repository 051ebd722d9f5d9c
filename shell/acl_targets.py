"""Where `import` writes and `export` reads ACLs: a kraft-acl log (embedded or Kafka-backed) today; a running
`kraft-acl serve` is one more class with the same three methods.

Each target is a small immutable description; every method opens what it needs and closes it before
returning, so one command invocation uses a target from one thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from authorizer.controller import ImportResult
from authorizer.metadata_source import read_state
from authorizer.model import StandardAcl
from authorizer.node import AclNode
from metadata_log.backends.memory import MemoryLog
from shell.targets import LogTarget


class AclTarget(Protocol):
    """What import and export need from a place that keeps ACLs."""

    @property
    def description(self) -> str:
        """What the target is, for messages: `the kraft-acl log in /data/meta`."""

    def import_acls(self, acls: list[StandardAcl], dry_run: bool) -> ImportResult:
        """Add the ACLs not present yet in one atomic step (or only say which, with `dry_run`)."""

    def acls_at(self, offset: int | None) -> Mapping[str, StandardAcl]:
        """The ACLs by id at `offset` (default: now), read afresh."""


@dataclass(frozen=True)
class LogAclTarget:
    """A kraft-acl log: an embedded directory or a Kafka topic (shell.targets.LogTarget)."""

    log: LogTarget

    @property
    def description(self) -> str:
        if self.log.log_dir is not None:
            return f"the kraft-acl log in {self.log.log_dir}"
        return f"the kraft-acl log on topic {self.log.topic or 'kraft-acl-metadata'} of {self.log.bootstrap_servers}"

    def import_acls(self, acls: list[StandardAcl], dry_run: bool) -> ImportResult:
        """One batch through the controller (the writer lock or Kafka fencing keeps other writers out)."""
        if dry_run and self.log.log_dir is not None and not self.log.log_dir.exists():
            node = AclNode(MemoryLog())  # a directory the import would create: nothing is there yet
            node.start()
        else:
            node = self.log.open_node(write=not dry_run)
        try:
            return node.controller.import_acls(acls, dry_run=dry_run)
        finally:
            node.close()

    def acls_at(self, offset: int | None) -> Mapping[str, StandardAcl]:
        if self.log.log_dir is not None:  # any format: kraft-acl's log, or Apache Kafka's metadata
            return read_state(self.log.log_dir, offset).image.acls
        node = AclNode(self.log.backend(write=False))
        try:
            node.start(to_offset=offset)
            return node.image.acls
        finally:
            node.close()
