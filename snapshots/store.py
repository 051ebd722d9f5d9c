"""The snapshot store: snapshot files in a directory (the log directory by default, as Kafka keeps them).

One writer per directory (the log's writer); readers may list and read concurrently because a
snapshot appears only by an atomic rename of a fully written, fsynced file.
"""

from __future__ import annotations

import builtins
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from metadata_log.records import AccessControlEntryRecord
from snapshots.columns import AclColumns
from snapshots.errors import CorruptSnapshotError, SnapshotError, SnapshotNameError
from snapshots.format import SnapshotHeader, SnapshotReader, fsync_dir, record_chunks, write_snapshot_chunks
from snapshots.naming import DELETED_SUFFIX, PART_SUFFIX, SUFFIX, SnapshotId, parse_name

log = logging.getLogger(__name__)


class SnapshotStore:
    """Writes, lists, validates and retains snapshots in one directory."""

    def __init__(self, directory: Path, retain: int = 3) -> None:
        self.directory = directory
        self.retain = retain

    def list(self) -> builtins.list[SnapshotId]:
        """Every snapshot present, oldest first (not validated); other `*.checkpoint` names are ignored."""
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
        """Like `write`, from chunks of columns (one file chunk each): a node's snapshot skips the records."""
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.path(SnapshotId(header.end_offset, header.epoch))
        part = final.with_name(f"{final.name[: -len(SUFFIX)]}-{os.getpid()}{PART_SUFFIX}")
        try:
            with part.open("wb") as fh:
                write_snapshot_chunks(fh, header, chunks)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(part, final)
            fsync_dir(self.directory)
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        self.apply_retention()
        return final

    def read(self, snapshot: SnapshotId) -> SnapshotReader:
        """A reader over one snapshot (header validated; records validated as they are read)."""
        return SnapshotReader(self.path(snapshot))

    def latest_valid(self, below: int | None = None) -> tuple[SnapshotReader, int] | None:
        """The newest snapshot whose framing and checksums validate, with its record count; damaged ones are
        skipped loudly. Loading it stays all-or-nothing: a record that fails to decode fails the load."""
        for snapshot in reversed(self.list()):
            if below is not None and snapshot.end_offset > below:
                continue
            try:
                reader = self.read(snapshot)
                header = reader.header
                if (header.end_offset, header.epoch) != (snapshot.end_offset, snapshot.epoch):
                    raise CorruptSnapshotError(
                        reader.path,
                        0,
                        f"the header says end offset {header.end_offset} "
                        f"epoch {header.epoch}, which does not match the file name",
                    )
                count = reader.validate()  # checksums; records are decoded once, by the loader
            except (CorruptSnapshotError, OSError) as exc:
                log.warning("skipping snapshot %s: %s", snapshot.file_name(), exc)
                continue
            return reader, count
        return None

    def apply_retention(self) -> builtins.list[SnapshotId]:
        """Delete all but the newest `retain` snapshots, and the `.part` and `.deleted` files a killed writer left;
        returns the snapshots deleted."""
        gone = []
        for snapshot in self.list()[: -self.retain] if self.retain > 0 else []:
            path = self.path(snapshot)
            doomed = path.with_name(path.name + DELETED_SUFFIX[len(SUFFIX) :])
            os.replace(path, doomed)
            doomed.unlink()
            gone.append(snapshot)
        for leftover in self.directory.glob(f"*{PART_SUFFIX}"):
            if not _owned_by_live_writer(leftover):
                leftover.unlink(missing_ok=True)
        for doomed in self.directory.glob(f"*{DELETED_SUFFIX}"):  # renamed for deletion, then the writer died
            doomed.unlink(missing_ok=True)
        return gone


def _owned_by_live_writer(part: Path) -> bool:
    """A `.part` file carries its writer's pid; it is garbage unless that process is this one."""
    try:
        pid = int(part.name[: -len(PART_SUFFIX)].rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return False
    return pid == os.getpid()


__all__ = ["SnapshotError", "SnapshotStore"]
