"""The shell's source over Apache Kafka's own KRaft metadata (a metadata.log.dir, `__cluster_metadata-0`, a `.log`
or a `.checkpoint`): one fixed state, read with `authorizer.metadata_source.read_state`, never written.

Immutable after construction; Kafka's files are read once, at the offset asked for (default: their end).
"""

from __future__ import annotations

from collections.abc import Iterable

from authorizer.acl_history import AclHistory
from authorizer.config import AuthorizerConfig
from authorizer.metadata_source import MetadataState
from shell.metashell.source import AclSource, SourceError, SourceStatus, View


class KafkaStateSource(AclSource):
    """The ACLs of Kafka's metadata at one offset (Kafka's own offsets)."""

    def __init__(self, state: MetadataState, config: AuthorizerConfig) -> None:
        self.state = state
        self._view = View(state.image, config)

    def view(self) -> View:
        return self._view

    def status(self) -> SourceStatus:
        snapshot = None if self.state.snapshot is None else str(self.state.snapshot)
        description = f"{self.state.format} {self.state.path}"
        return SourceStatus(description, self.state.high_watermark, snapshot, True, False, None, None)

    def seek(self, offset: int | None) -> None:
        raise SourceError(
            f"Apache Kafka's metadata is read at one offset ({self._view.offset}); "
            "start the shell again with --at-offset N for another"
        )

    def history(self, acl_ids: Iterable[str]) -> AclHistory:
        raise SourceError("the history of an ACL is kept for kraft-acl logs, not for Apache Kafka's metadata")

    def close(self) -> None:
        """Nothing to release: the files were read and closed."""
