"""One kraft-acl node: a log backend, its snapshots, the loader, the StandardAuthorizer and (when it may
write) the controller, started the KIP-801 way.

A node is driven by one thread (start-up, catch-up, controller calls); any number of threads may
call its authorizer concurrently, and `take_snapshot` may be called from another thread (one at a time: a lock).

Start-up (docs/ARCHITECTURE.md "START"): refuse a log that ends below a whole snapshot of its own (it
lost acknowledged batches), load the newest snapshot that validates and belongs to this log at one
of its batch boundaries, all-or-nothing, check that the log still holds every offset after it,
replay the tail up to the high-water mark read at start, then complete the authorizer's initial
load (even when the log is empty).

An automatic snapshot (the policy's) that fails after a durable append is logged and kept in
`snapshot_failure`; the append stands, and later appends go on.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from pathlib import Path

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import StandardAuthorizer
from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.state.controller import AclController
from kraftacl.authorizer.state.gc_pause import paused_gc
from kraftacl.authorizer.state.image import AclsImage, Provenance
from kraftacl.authorizer.state.loader import AuthorizerPublisher, MetadataLoader, OnPublish, Update
from kraftacl.authorizer.state.memory import release_free_memory
from kraftacl.authorizer.state.tailer import Tailer
from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.errors import LogLostDataError
from kraftacl.metadata_log.uuids import new_uuid
from kraftacl.snapshots.format import SnapshotHeader, SnapshotReader
from kraftacl.snapshots.policy import SnapshotPolicy
from kraftacl.snapshots.store import SnapshotStore

log = logging.getLogger(__name__)


class StartupError(AuthorizerError):
    """The node cannot reach a trustworthy state (for example the log lost offsets no snapshot covers)."""


class AclNode:
    """Everything one node needs to authorize from, and optionally write to, the metadata log."""

    def __init__(
        self,
        backend: LogBackend,
        snapshot_dir: Path | None = None,
        config: AuthorizerConfig | None = None,
        policy: SnapshotPolicy | None = None,
        retain_snapshots: int = 3,
    ) -> None:
        self.backend = backend
        self.authorizer = StandardAuthorizer(config)
        self.snapshots = SnapshotStore(snapshot_dir, retain_snapshots, backend) if snapshot_dir is not None else None
        self.policy = policy
        self.loader = MetadataLoader(backend, [AuthorizerPublisher(self.authorizer), OnPublish(self._on_publish)])
        self.controller = AclController(backend, self.loader, new_uuid)
        self._last_published = -1
        self._last_bytes = 0  # loader.applied_bytes at the last publish
        # While set, a snapshot the policy asks for waits for `take_deferred_snapshot` (a bulk import
        # answers first; the snapshot of a million ACLs takes seconds).
        self.defer_snapshots = False
        self._snapshot_due = False
        self.loaded_snapshot: Path | None = None
        self.snapshot_failure: str | None = None  # why the last automatic snapshot failed (None: it did not)
        self.retention_deleted: list[str] = []  # every snapshot file retention removed after this node's snapshots
        self.tailer: Tailer | None = None
        self._snapshot_lock = threading.Lock()

    @property
    def image(self) -> AclsImage:
        """The current ACL image."""
        return self.loader.image

    def start(self, to_offset: int | None = None) -> None:
        """Snapshot, then the log tail up to the high-water mark (or `to_offset`), then ready.

        The garbage collector is paused while millions of objects are created, and the loaded state
        is then frozen out of future collections (a full GC pass over it costs milliseconds). The
        heap memory the load's temporaries freed goes back to the OS before the node is ready.
        """
        gc.disable()
        try:
            self._load(to_offset)
        finally:
            gc.enable()
        gc.freeze()
        release_free_memory()
        self.loader.complete_initial_load()

    def _load(self, to_offset: int | None) -> None:
        if to_offset is None:
            self.check_not_lost()
        self.load_snapshot(below=to_offset)
        start = self.backend.log_start_offset()
        if self.loader.next_offset < start:
            raise StartupError(
                f"the log starts at offset {start} but this node needs offsets from {self.loader.next_offset}: "
                "retention deleted them and no local snapshot covers them; restore a snapshot taken at or "
                f"after offset {start} into the snapshot directory"
            )
        self.loader.catch_up(to_offset, publish_every_records=None)  # not serving yet: publish once

    def check_not_lost(self) -> None:
        """LogLostDataError when a whole snapshot of this log ends beyond the log's end (batches were lost)."""
        if self.snapshots is None:
            return
        lost = self.snapshots.lost_evidence(self.backend)
        if lost is not None:
            snapshot, _ = lost
            evidence = f"its snapshot {snapshot.file_name()}"
            hwm = self.backend.high_watermark()
            raise LogLostDataError(self.snapshots.directory, hwm, snapshot.end_offset, evidence)

    def load_snapshot(self, below: int | None = None) -> None:
        """Load the newest snapshot that validates and belongs to this log (ending at or below `below`), all or
        nothing; unusable ones are skipped loudly."""
        if self.snapshots is None:
            return
        hwm = self.backend.high_watermark()
        limit = hwm if below is None else min(below, hwm)
        found = self.snapshots.latest_valid(below=limit)
        if found is not None:
            self._load_reader(*found)

    def load_snapshot_file(self, path: Path) -> None:
        """Load one snapshot file, whatever log it names (recovery), all or nothing."""
        reader = SnapshotReader(path)
        self._load_reader(reader, reader.validate())

    def _load_reader(self, reader: SnapshotReader, count: int) -> None:
        h = reader.header
        self._last_published = h.end_offset - 1  # the snapshot's records are not "new" for the policy
        self.loader.load_snapshot(
            reader.records(),
            Provenance(h.end_offset - 1, h.epoch, h.timestamp_ms),
            source=str(reader.path),
            columns=reader.columns(),
        )
        self.loaded_snapshot = reader.path
        log.info("snapshot %s: %d ACLs", reader.path.name, count)

    def take_snapshot(self) -> Path:
        """Write the current image as `<next offset>-<epoch>.checkpoint` (one snapshot at a time: the policy's, on
        the thread that publishes, and one asked for, on another, never write the same file at once)."""
        if self.snapshots is None:
            raise StartupError("this node has no snapshot directory")
        with self._snapshot_lock:
            return self._take_snapshot(self.snapshots)

    def _take_snapshot(self, snapshots: SnapshotStore) -> Path:
        image = self.loader.image
        p = image.provenance
        header = SnapshotHeader(
            p.next_offset,
            max(p.epoch, 0),
            p.timestamp_ms if p.timestamp_ms >= 0 else int(time.time() * 1000),
            log_id=self.backend.log_id,
        )
        # a million ACLs go out as columns: no collection pass meanwhile (half the time). On a paced thread (serve's
        # writer, its tailer) the write rests between chunks (`image.chunks`): the event loop keeps the GIL often.
        with paused_gc():
            path = snapshots.write_chunks(header, image.chunks())
        for gone in snapshots.last_deleted:
            self.retention_deleted.append(gone.file_name())
            log.info("retention deleted snapshot %s", gone.file_name())
        if self.policy is not None:
            self.policy.reset()
        return path

    def _on_publish(self, update: Update) -> None:
        """Publisher: account for applied records and write a snapshot when the policy says so."""
        if self.policy is None or self.snapshots is None:
            return
        image = update.image
        applied = image.provenance.last_offset - self._last_published
        self._last_published = image.provenance.last_offset
        applied_bytes = self.loader.applied_bytes - self._last_bytes
        self._last_bytes = self.loader.applied_bytes
        self.policy.record_applied(max(applied, 0), applied_bytes)
        if self.policy.due() and image.provenance.last_offset >= 0:
            if self.defer_snapshots:
                self._snapshot_due = True
            else:
                self._maybe_snapshot(image)

    def take_deferred_snapshot(self) -> None:
        """The snapshot the policy asked for while `defer_snapshots` was set, if it did (a failure is
        recorded in `snapshot_failure`, as for any automatic snapshot)."""
        if self._snapshot_due:
            self._snapshot_due = False
            self._maybe_snapshot(self.image)

    def _maybe_snapshot(self, image: AclsImage) -> None:
        """The policy's snapshot; a failure never fails the append that triggered it, nor blocks later ones."""
        try:
            self.take_snapshot()
            self.snapshot_failure = None
        except Exception as exc:  # disk full, a bad directory, ...: the batches stay applied and durable
            assert self.policy is not None
            self.policy.reset()  # try again after another interval, not on every publish
            offset = image.provenance.next_offset
            self.snapshot_failure = f"the automatic snapshot at offset {offset} failed: {exc}"
            log.error("%s (the log up to offset %d is durable and applied)", self.snapshot_failure, offset)

    def tail(self, interval_s: float = 0.2, *, long_poll: bool = True) -> Tailer:
        """Start following the log in the background (a started node); `ready` then reports whether it keeps up.
        `long_poll=False`: read the log on the interval and when poked only, never waiting in it (`Tailer`)."""
        if self.tailer is None:
            self.tailer = Tailer(self.loader, interval_s, long_poll=long_poll).start()
        return self.tailer

    @property
    def ready(self) -> bool:
        """Loaded, and (when tailing) following its log: not failing, not diverged."""
        return self.authorizer.ready and (self.tailer is None or self.tailer.status().following)

    def close(self) -> None:
        """Stop the tailer, close the backend (releasing the writer lock)."""
        if self.tailer is not None:
            self.tailer.stop()
        self.authorizer.close()
        self.backend.close()
