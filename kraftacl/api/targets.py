"""Where a command's metadata log lives: an embedded log directory, or a Kafka topic through confluent-kafka.

Immutable values plus one opener; each command opens its own node and closes it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kraftacl.authorizer.decision.config import load_properties
from kraftacl.authorizer.errors import ConfigError
from kraftacl.authorizer.history.metadata_source import MetadataState, authorizer_for
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.model.filters import AclBindingFilter
from kraftacl.authorizer.state.controller import CreateResult, DeleteResult
from kraftacl.authorizer.state.node import AclNode
from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.errors import LogError
from kraftacl.snapshots.policy import SnapshotPolicy


class TargetError(Exception):
    """The choice of log is missing, ambiguous or unreadable: the CLI prints it as its one error line and exits 2."""


@dataclass(frozen=True)
class LogTarget:
    """Exactly one of `log_dir` and `bootstrap_servers`; Kafka client settings come from `command_config`."""

    log_dir: Path | None = None
    bootstrap_servers: str | None = None
    command_config: Path | None = None
    topic: str | None = None
    lock_timeout_s: float = 0.0  # how long a writer waits for another writer's lock on the log directory

    def check(self) -> None:
        """One clear line when the choice of log is missing or ambiguous."""
        if (self.log_dir is None) == (self.bootstrap_servers is None):
            raise TargetError(
                "give exactly one of --log-dir DIR (embedded log) and --bootstrap-server HOST:PORT (Kafka)"
            )

    def backend(self, write: bool) -> LogBackend:
        """Open the log: writers take the file lock or fence earlier Kafka writers."""
        if self.log_dir is not None:
            if not write and not self.log_dir.is_dir():
                raise TargetError(f"log directory {self.log_dir} does not exist")
            return FileLog(self.log_dir, read_only=not write, lock_timeout_s=self.lock_timeout_s)
        from kraftacl.metadata_log.backends.kafka_topic.log import DEFAULT_TOPIC, KafkaLog, KafkaLogConfig

        try:
            client = load_properties(self.command_config) if self.command_config is not None else {}
        except ConfigError as exc:  # bad input: exit 2, where other errors of a running command exit 1
            raise TargetError(str(exc)) from exc
        assert self.bootstrap_servers is not None
        config = KafkaLogConfig(self.bootstrap_servers, topic=self.topic or DEFAULT_TOPIC, client=client)
        return KafkaLog(config, writer=write)

    def open_node(self, write: bool) -> AclNode:
        """A started node on this log (snapshots live in the log directory of an embedded log)."""
        backend = self.backend(write)
        node = AclNode(
            backend,
            snapshot_dir=self.log_dir,
            policy=SnapshotPolicy() if write and self.log_dir is not None else None,
        )
        recovered = getattr(backend, "recovery", None)
        if recovered is not None:
            print(f"kraft-acl: warning: {recovered}", file=sys.stderr)
        try:
            node.start()
        except BaseException:
            node.close()
            raise
        return node


class AclService(Protocol):
    """What `kraft-acl acls` needs: KIP-140's create and delete, describe by filter; a log node or a serve."""

    def create_acls(self, acls: list[StandardAcl]) -> list[CreateResult]: ...

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[DeleteResult]: ...

    def describe(self, acl_filter: AclBindingFilter) -> list[tuple[str, StandardAcl]]: ...

    def close(self) -> None: ...

    @property
    def last_offset(self) -> int | None:
        """The offset of a state holding the last write (None: nothing written, or not known)."""


class NodeService:
    """An AclService over a started node of a log (the controller writes, the authorizer describes)."""

    def __init__(self, node: AclNode) -> None:
        self.node = node

    @property
    def last_offset(self) -> int | None:
        """The node's applied offset (the controller catches up after each write)."""
        return self.node.image.provenance.last_offset

    def create_acls(self, acls: list[StandardAcl]) -> list[CreateResult]:
        """One atomic batch through the node's controller."""
        return self.node.controller.create_acls(acls)

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[DeleteResult]:
        """One atomic batch through the node's controller."""
        return self.node.controller.delete_acls(filters)

    def describe(self, acl_filter: AclBindingFilter) -> list[tuple[str, StandardAcl]]:
        """The ACLs matching the filter, with their ids."""
        return self.node.authorizer.acls_with_ids(acl_filter)

    def close(self) -> None:
        """Close the node (releasing the writer lock)."""
        self.node.close()


class KafkaStateService:
    """`acls --list` on Apache Kafka's own KRaft metadata: describe over the state at its end, read-only."""

    def __init__(self, state: MetadataState) -> None:
        self.authorizer = authorizer_for(state)
        self.path = state.path

    last_offset = None  # never written

    def create_acls(self, acls: list[StandardAcl]) -> list[CreateResult]:
        raise LogError(f"{self.path} is Apache Kafka's own KRaft metadata: kraft-acl never writes it")

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[DeleteResult]:
        raise LogError(f"{self.path} is Apache Kafka's own KRaft metadata: kraft-acl never writes it")

    def describe(self, acl_filter: AclBindingFilter) -> list[tuple[str, StandardAcl]]:
        """The ACLs matching the filter, with their ids (Kafka's record ids)."""
        return self.authorizer.acls_with_ids(acl_filter)

    def close(self) -> None:
        """Nothing to release: the files were read and closed."""
