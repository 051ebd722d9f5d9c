"""The snapshot store: snapshot files in a directory (the log directory by default, as Kafka keeps them).

One writer per directory (the log's writer); readers may list and read concurrently because a
snapshot appears only by an atomic rename of a fully written, fsynced file. A store remembers
which files it has validated (by name, size and mtime), so retention reads each file once.

Given the log (`log`), a store uses only snapshots that belong to it at one of its batch
boundaries (`snapshots.binding`), skipping the others loudly. Retention ranks snapshots by that
validity: only usable ones count toward `retain` and only kraft-acl's own (`dir_files`, by magic)
are ever renamed or deleted; the snapshot just written is never deleted.
"""

from __future__ import annotations

import builtins
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.backends.file.dir_files import is_own_part, is_own_snapshot
from kraftacl.metadata_log.records import AccessControlEntryRecord
from kraftacl.snapshots.binding import BackendView, LogView, Problem, Unusable, unusable
from kraftacl.snapshots.columns import AclColumns
from kraftacl.snapshots.errors import CorruptSnapshotError, SnapshotError, SnapshotIOError, SnapshotNameError
from kraftacl.snapshots.format import (
    SnapshotHeader,
    SnapshotReader,
    fsync_dir,
    read_snapshot_header,
    record_chunks,
    write_snapshot_chunks,
)
from kraftacl.snapshots.naming import DELETED_SUFFIX, PART_SUFFIX, SUFFIX, SnapshotId, parse_name

log = logging.getLogger(__name__)


class SnapshotStore:
    """Writes, lists, validates and retains snapshots in one directory (of the log `log`, when given)."""

    def __init__(self, directory: Path, retain: int = 3, log: LogBackend | None = None) -> None:
        self.directory = directory
        self.retain = retain
        self.log = log
        self.last_deleted: builtins.list[SnapshotId] = []  # what the last retention removed
        self._framing: dict[tuple[str, int, int], tuple[str | None, int]] = {}  # (name, size, mtime) -> damage, count

    def list(self) -> builtins.list[SnapshotId]:
        """Every snapshot name present, oldest first (not validated); other `*.checkpoint` names are ignored."""
        if not self.directory.is_dir():
            return []
        ids = []
        for path in self.directory.iterdir():
            if path.name.endswith(SUFFIX):
                try:
                    ids.append(parse_name(path))
                except SnapshotNameError:
                    log.warning("ignoring %s: not a snapshot file name", path)
        return sorted(ids)

    def path(self, snapshot: SnapshotId) -> Path:
        """Where a snapshot lives."""
        return self.directory / snapshot.file_name()

    def write(self, header: SnapshotHeader, records: Iterable[AccessControlEntryRecord]) -> Path:
        """Write records to `<name>.part`, fsync, rename into place, fsync the directory; then apply retention."""
        return self.write_chunks(header, record_chunks(records))

    def write_chunks(self, header: SnapshotHeader, chunks: Iterable[AclColumns]) -> Path:
        """Like `write`, from chunks of columns (one file chunk each): a node's snapshot skips the records.

        An OS error (no space left, ...) is a SnapshotIOError naming the file; nothing is left behind.
        """
        final = self.path(SnapshotId(header.end_offset, header.epoch))
        part = final.with_name(f"{final.name[: -len(SUFFIX)]}-{os.getpid()}{PART_SUFFIX}")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            count = _write_part(part, header, chunks)
            os.replace(part, final)
            fsync_dir(self.directory)
            stat = final.stat()
        except OSError as exc:
            part.unlink(missing_ok=True)
            raise SnapshotIOError(final, exc, "write") from exc
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        self._framing[(final.name, stat.st_size, stat.st_mtime_ns)] = (None, count)  # whole: just written
        self.last_deleted = self.apply_retention(keep=final)
        return final

    def read(self, snapshot: SnapshotId) -> SnapshotReader:
        """A reader over one snapshot (header validated; records validated as they are read)."""
        path = self.path(snapshot)
        try:
            return SnapshotReader(path)
        except OSError as exc:
            raise SnapshotIOError(path, exc, "read") from exc

    def latest_valid(
        self, below: int | None = None, backend: LogBackend | None = None
    ) -> tuple[SnapshotReader, int] | None:
        """The newest snapshot ending at or below `below` that validates and belongs to the log (`backend`, else the
        store's), with its record count; the others are skipped loudly. Loading it stays all-or-nothing: a
        record that fails to decode fails the load. An OS error reading a file is raised, never taken for damage."""
        backend = backend if backend is not None else self.log
        for snapshot in reversed(self.list()):
            if below is not None and snapshot.end_offset > below:
                continue
            try:
                reader = self.read(snapshot)
                problem = self._problem(snapshot, reader.header, None if backend is None else BackendView(backend))
                if problem is not None:
                    log.warning("skipping snapshot %s: unusable: %s", snapshot.file_name(), problem.reason)
                    continue
                count = reader.validate()  # checksums; records are decoded once, by the loader
            except CorruptSnapshotError as exc:
                log.warning("skipping snapshot %s: %s", snapshot.file_name(), exc)
                continue
            return reader, count
        return None

    def lost_evidence(self, backend: LogBackend | None = None) -> tuple[SnapshotId, Unusable] | None:
        """The newest whole snapshot of this log that ends beyond its end: proof the log lost acknowledged batches."""
        backend = backend if backend is not None else self.log
        if backend is None:
            return None
        hwm = backend.high_watermark()
        for snapshot in reversed(self.list()):
            if snapshot.end_offset <= hwm:
                return None
            problem = self.check(snapshot, BackendView(backend))
            if problem is not None and problem.problem is Problem.LOST:
                return snapshot, problem
        return None

    def check(self, snapshot: SnapshotId, view: LogView | None = None) -> Unusable | None:
        """Why this snapshot cannot be used on the log seen through `view` (default: the store's log): damage,
        name, identity or position; None when it is usable. A file without kraft-acl's magic is DAMAGED."""
        path = self.path(snapshot)
        if view is None and self.log is not None:
            view = BackendView(self.log)
        try:
            header = read_snapshot_header(path)
            problem = self._problem(snapshot, header, view)
            if problem is not None and problem.problem is not Problem.LOST:
                return problem
            return self._damage(path) or problem  # lost batches are only proven by a whole snapshot
        except CorruptSnapshotError as exc:
            return Unusable(Problem.DAMAGED, f"byte {exc.position}: {exc.reason}")
        except OSError as exc:
            raise SnapshotIOError(path, exc, "read") from exc

    def records(self, snapshot: SnapshotId) -> int | None:
        """The record count of a snapshot `check` found whole (None if unknown or damaged)."""
        path = self.path(snapshot)
        try:
            stat = path.stat()
        except OSError:
            return None
        damage, count = self._framing.get((path.name, stat.st_size, stat.st_mtime_ns), ("unknown", 0))
        return count if damage is None else None

    def _problem(self, snapshot: SnapshotId, header: SnapshotHeader, view: LogView | None) -> Unusable | None:
        if (header.end_offset, header.epoch) != (snapshot.end_offset, snapshot.epoch):
            return Unusable(
                Problem.MISNAMED,
                f"the file name says end offset {snapshot.end_offset}, epoch {snapshot.epoch}, "
                f"but the header says end offset {header.end_offset}, epoch {header.epoch}",
            )
        return None if view is None else unusable(header, view)

    def _damage(self, path: Path) -> Unusable | None:
        """Validate the file's framing (once per name, size and mtime)."""
        stat = path.stat()
        key = (path.name, stat.st_size, stat.st_mtime_ns)
        if key not in self._framing:
            try:
                self._framing[key] = (None, SnapshotReader(path).validate())
            except CorruptSnapshotError as exc:
                self._framing[key] = (f"byte {exc.position}: {exc.reason}", 0)
        damage = self._framing[key][0]
        return None if damage is None else Unusable(Problem.DAMAGED, damage)

    def apply_retention(self, keep: Path | None = None) -> builtins.list[SnapshotId]:
        """Delete the usable snapshots beyond the newest `retain` (never `keep`), and the `.part` and `.deleted`
        files a killed writer left; returns the snapshots deleted (each also logged).

        Damaged, unusable and foreign files never count toward `retain` and are never deleted: only
        kraft-acl's own snapshots (by magic) are renamed or removed.
        """
        usable = []
        for snapshot in reversed(self.list()):
            path = self.path(snapshot)
            if path == keep or (is_own_snapshot(path) and self.check(snapshot) is None):
                usable.append(snapshot)
            elif is_own_snapshot(path) and self.retain > 0:
                log.warning("retention keeps %s: unusable, it does not count toward %d", path.name, self.retain)
        doomed = [s for s in usable[self.retain :] if self.path(s) != keep] if self.retain > 0 else []
        for snapshot in doomed:
            path = self.path(snapshot)
            dead = path.with_name(path.name + DELETED_SUFFIX[len(SUFFIX) :])
            os.replace(path, dead)
            dead.unlink()
            log.info("retention (newest %d usable kept) deleted %s", self.retain, path.name)
        for leftover in self.directory.glob(f"*{PART_SUFFIX}"):
            if is_own_part(leftover) and not _owned_by_live_writer(leftover):
                leftover.unlink(missing_ok=True)
        for dead in self.directory.glob(f"*{DELETED_SUFFIX}"):  # renamed for deletion, then the writer died
            if is_own_snapshot(dead):
                dead.unlink(missing_ok=True)
        return sorted(doomed)


def _owned_by_live_writer(part: Path) -> bool:
    """A `.part` file carries its writer's pid; it is garbage unless that process is this one."""
    try:
        pid = int(part.name[: -len(PART_SUFFIX)].rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return False
    return pid == os.getpid()


__all__ = ["SnapshotError", "SnapshotStore"]


def _write_part(part: Path, header: SnapshotHeader, chunks: Iterable[AclColumns]) -> int:
    """The whole snapshot into `part`, synced; its record count."""
    with part.open("wb") as fh:
        count = write_snapshot_chunks(fh, header, chunks)
        fh.flush()
        os.fsync(fh.fileno())
    return count
