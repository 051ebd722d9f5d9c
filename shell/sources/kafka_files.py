"""The shell's source over Apache Kafka's own KRaft metadata files (a metadata.log.dir, a `__cluster_metadata-0`
directory, a `.log` segment or a `.checkpoint`), read through `authorizer.history.metadata_source` in Kafka's offsets.

Driven by the shell's thread; while following a log, a `Poller` thread reads the files again when
their end moves (a broker appending) and swaps in the new View as one reference. Every operation
that reads the files from the shell's thread first stops that thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.history.acl_history import AclHistory
from kraftacl.authorizer.history.kafka_history import kafka_acl_history
from kraftacl.authorizer.history.kafka_state import KafkaAclReplay
from kraftacl.authorizer.history.metadata_source import MetadataState, SourceFormat, detect_format, read_state
from kraftacl.metadata_log.errors import LogError
from kraftacl.shell.sources.base import AclSource, SourceError, SourceStatus, View
from kraftacl.shell.sources.poller import Poller

FOLLOW_INTERVAL_S = 0.5
READ_ERRORS = (AuthorizerError, LogError, OSError)


def read(path: Path, at_offset: int | None) -> MetadataState:
    """The state of Kafka's files at `at_offset` (default: the newest); SourceError naming what is wrong."""
    try:
        return read_state(path, at_offset)
    except READ_ERRORS as exc:
        raise SourceError(str(exc)) from exc


class KafkaFilesSource(AclSource):
    """ACL states of Kafka's metadata files; a log is followed and can move to any batch boundary."""

    def __init__(self, path: Path, config: AuthorizerConfig, at_offset: int | None = None) -> None:
        self.path = path
        self._config = config
        self._state = read(path, at_offset)
        self._view = View(self._state.image, config)
        self.live = self._state.format is SourceFormat.KAFKA_LOG
        self.pinned = at_offset
        self._poller: Poller | None = None
        self._error: str | None = None

    def view(self) -> View:
        return self._view

    def status(self) -> SourceStatus:
        s = self._state
        return SourceStatus(
            f"{s.format} {self.path}",
            s.high_watermark,
            None if s.snapshot is None else str(s.snapshot),
            True,
            self.following,
            self.pinned,
            self._error,
            s.notes,
        )

    def poll(self) -> None:
        """Read the files again when their end has moved past the current state."""
        if not self.live or self.pinned is not None:
            return
        try:
            _, files = detect_format(self.path)
            if files is not None and KafkaAclReplay(files).end_offset() != self._state.high_watermark:
                self._load(read_state(self.path))
            self._error = None
        except READ_ERRORS as exc:  # keep the last state; /provenance shows the error
            self._error = str(exc)

    def _load(self, state: MetadataState) -> None:
        self._state, self._view = state, View(state.image, self._config)

    @property
    def following(self) -> bool:
        return self._poller is not None

    def follow(self) -> None:
        if self.live and self.pinned is None and self._poller is None:
            self._poller = Poller(self.poll, FOLLOW_INTERVAL_S, "kraft-acl-shell-kafka-files").start()

    def stop_following(self) -> None:
        if self._poller is not None:
            self._poller.stop()
            self._poller = None

    def seek(self, offset: int | None) -> None:
        if not self.live:
            raise SourceError(
                f"a snapshot file holds one state (offset {self._view.offset}); moving in time needs the log "
                "(--log-dir of the metadata.log.dir)"
            )
        self.stop_following()
        self._load(read(self.path, offset))
        self.pinned = offset

    def history(self, acl_ids: Iterable[str]) -> AclHistory:
        if not self.live:
            raise SourceError(
                f"a snapshot file keeps no history (it holds the state at offset {self._view.offset}); "
                "the history of an ACL needs the log (--log-dir of the metadata.log.dir)"
            )
        try:
            with self.paused():
                _, files = detect_format(self.path)
                assert files is not None  # a Kafka log stays one while it is read
                return kafka_acl_history(files, acl_ids)
        except READ_ERRORS as exc:
            raise SourceError(str(exc)) from exc

    def close(self) -> None:
        self.stop_following()
