"""The shell's source over one kraft-acl snapshot file: one fixed state, loaded the way a cold start loads it.

Immutable after construction. Neither the id -> ACL map nor the decision index is built at load
(`ColumnsView`): listing ids and reading one ACL of a million-ACL snapshot wait only for the decoded columns.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from pathlib import Path

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.history.acl_history import AclHistory
from kraftacl.authorizer.state.image import Provenance
from kraftacl.shell.sources.base import AclSource, SourceError, SourceStatus, View
from kraftacl.shell.sources.columns_view import ColumnsView
from kraftacl.snapshots.errors import SnapshotNameError
from kraftacl.snapshots.format import SnapshotReader
from kraftacl.snapshots.naming import SnapshotId, parse_name


class SnapshotSource(AclSource):
    """Every ACL of one snapshot file, at the snapshot's end offset."""

    def __init__(self, path: Path, config: AuthorizerConfig) -> None:
        self.path = path
        reader = SnapshotReader(path)
        h = reader.header
        try:
            named: SnapshotId | None = parse_name(path)
        except SnapshotNameError:
            named = None  # a copy under another name is fine; only a snapshot name that contradicts the header is not
        if named is not None and named != SnapshotId(h.end_offset, h.epoch):
            raise SourceError(
                f"{path}: the file name says end offset {named.end_offset}, epoch {named.epoch}, "
                f"but the header says end offset {h.end_offset}, epoch {h.epoch}"
            )
        gc.disable()  # millions of column strings: no collection passes while they are made
        try:
            chunks = list(reader.columns())
        finally:
            gc.enable()
        gc.freeze()  # what is loaded now lives as long as the process: later collections skip it
        self._view = ColumnsView(chunks, Provenance(h.end_offset - 1, h.epoch, h.timestamp_ms), config)

    def view(self) -> View:
        return self._view

    def status(self) -> SourceStatus:
        return SourceStatus(f"snapshot {self.path}", None, str(self.path), True, False, None, None)

    def seek(self, offset: int | None) -> None:
        raise SourceError(
            f"a snapshot file holds one state (offset {self._view.offset}); moving in time needs a log "
            "(--log-dir or --bootstrap-server)"
        )

    def history(self, acl_ids: Iterable[str]) -> AclHistory:
        raise SourceError(
            f"a snapshot file keeps no history (it holds the state at offset {self._view.offset}); "
            "the history of an ACL needs its log (--log-dir or --bootstrap-server)"
        )

    def close(self) -> None:
        """Nothing to release: the file was read whole."""
