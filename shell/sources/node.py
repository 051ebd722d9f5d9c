"""The shell's source over a metadata log (an embedded log directory or a Kafka topic): a read-only AclNode that
can follow new records, move to any batch boundary, and tell an ACL's history.

Driven by the shell's thread; while following, the node's `Tailer` thread applies new records and
swaps in each new View as one reference. Every operation that reads the log from the shell's thread
(`seek`, `history`) first stops that thread, so a backend is never read from two threads at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.history.acl_history import AclHistory, acl_history
from kraftacl.authorizer.state.loader import OnPublish, Update
from kraftacl.authorizer.state.node import AclNode
from kraftacl.authorizer.state.tailer import Tailer
from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.errors import DivergenceError, LogError
from kraftacl.shell.sources.base import AclSource, OffsetError, SourceError, SourceStatus, View
from kraftacl.snapshots.errors import SnapshotError

FOLLOW_INTERVAL_S = 0.5
SOURCE_ERRORS = (LogError, SnapshotError, AuthorizerError, OSError)


class NodeSource(AclSource):
    """ACL states replayed from a log (snapshots from `snapshot_dir` where there is one)."""

    live = True

    def __init__(
        self,
        backend: LogBackend,
        description: str,
        config: AuthorizerConfig,
        snapshot_dir: Path | None = None,
        at_offset: int | None = None,
    ) -> None:
        self._backend = backend
        self._description = description
        self._config = config
        self._snapshot_dir = snapshot_dir
        self._tailer: Tailer | None = None
        self._error: str | None = None
        self._diverged: str | None = None  # the log no longer holds what this state applied: never follow it again
        if at_offset is not None:
            self._check_offset(at_offset)
        self._node = self._start(at_offset)
        self.pinned = at_offset

    def _start(self, to_offset: int | None) -> AclNode:
        node = AclNode(self._backend, snapshot_dir=self._snapshot_dir, config=self._config)
        node.loader.publishers.append(OnPublish(self._publish))
        try:
            node.start(to_offset)
        except SOURCE_ERRORS as exc:
            raise SourceError(str(exc)) from exc
        self._view = View(node.image, self._config, node.loader.index)
        self._diverged = None  # a state replayed afresh from the log as it is now
        return node

    def _publish(self, update: Update) -> None:
        """Publisher: swap in a new View at every publish."""
        self._view = View(update.image, self._config, update.index)

    def view(self) -> View:
        return self._view

    def status(self) -> SourceStatus:
        try:
            hwm: int | None = self._backend.high_watermark()
        except LogError as exc:
            hwm, self._error = None, str(exc)
        tail = self._tailer.status() if self._tailer is not None else None
        diverged = tail.diverged if tail is not None and tail.diverged is not None else self._diverged
        error = tail.last_error if tail is not None else self._error
        snapshot = self._node.loaded_snapshot
        return SourceStatus(
            self._description,
            hwm,
            None if snapshot is None else str(snapshot),
            self._node.authorizer.ready,
            tail is not None and tail.diverged is None,
            self.pinned,
            f"diverged, not following: {diverged}" if diverged is not None else error,
        )

    def poll(self) -> None:
        if self.pinned is not None or self._tailer is not None or self._diverged is not None:
            return
        try:
            self._node.loader.catch_up()  # stops at the durable end of a file log
            self._error = None
        except DivergenceError as exc:  # as the Tailer: apply nothing after it, say so
            self._diverged = str(exc)
        except LogError as exc:  # keep the last state, as a serving node does; /provenance shows the error
            self._error = str(exc)

    def follow(self) -> None:
        if self.pinned is None and self._tailer is None and self._diverged is None:
            self._tailer = Tailer(self._node.loader, interval_s=FOLLOW_INTERVAL_S).start()

    def stop_following(self) -> None:
        if self._tailer is not None:
            self._tailer.stop()
            self._diverged = self._diverged or self._tailer.status().diverged
            self._tailer = None

    def seek(self, offset: int | None) -> None:
        """Walk forward from the current state when `offset` is ahead of it, else start again from a snapshot."""
        self.stop_following()
        if offset is not None:
            self._check_offset(offset)
        try:
            if offset is None or offset >= self._view.offset:
                self._node.loader.catch_up(offset)
            else:
                self._node = self._start(offset)
        except SOURCE_ERRORS as exc:
            raise SourceError(str(exc)) from exc
        self.pinned = offset

    def _check_offset(self, offset: int) -> None:
        """Refuse an offset outside the log or inside a batch (no state exists between a batch's records)."""
        try:
            hwm = self._backend.high_watermark()
            if offset < 0:
                raise OffsetError(f"offset {offset} is negative")
            if offset > hwm:
                raise OffsetError(
                    f"offset {offset} is beyond the high-water mark {hwm} (the log holds offsets below {hwm})"
                )
            if self._backend.log_start_offset() < offset < hwm:
                holding = next(iter(self._backend.read(offset - 1)))
                if holding.next_offset != offset:
                    raise OffsetError(
                        f"offset {offset} is inside the batch at offsets {holding.base_offset}..{holding.last_offset}:"
                        f" its records apply together, so no state exists between them; use {holding.base_offset}"
                        f" or {holding.next_offset}"
                    )
        except LogError as exc:
            raise SourceError(str(exc)) from exc

    @property
    def following(self) -> bool:
        return self._tailer is not None

    def history(self, acl_ids: Iterable[str]) -> AclHistory:
        try:
            with self.paused():
                return acl_history(self._backend, acl_ids)
        except SOURCE_ERRORS as exc:
            raise SourceError(str(exc)) from exc

    def close(self) -> None:
        self.stop_following()
        self._node.close()
