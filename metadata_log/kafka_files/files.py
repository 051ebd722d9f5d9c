"""Where Apache Kafka keeps its KRaft metadata on disk, and how to tell its files from kraft-acl's.

Stateless functions over the file system (read-only: nothing here opens a file for writing); the
`KafkaMetadataFiles` listing is a frozen value taken at one moment.

    <metadata.log.dir>/.lock                                  the broker's or controller's lock
    <metadata.log.dir>/__cluster_metadata-0/                  the partition directory (spec §14.4)
        00000000000000000000.log  (+ .index, .timeindex)      segments: <20-digit base offset>.log
        00000000000000001234-0000000002.checkpoint            snapshots: <end offset>-<epoch>.checkpoint
        quorum-state, partition.metadata, leader-epoch-checkpoint

kraft-acl's own segments use the same `<20 digits>.log` names, so files are told apart by their
bytes, by one rule shared with the file log (`metadata_log.backends.file.dir_files`): kraft-acl's start with
b"KACS" (segments) or b"KACLSNAP" (snapshots); Kafka's start with a record batch whose magic byte
(position 16) is 2. A directory holding kraft-acl segments is kraft-acl's, whatever else lies there: its
readers and writers then name every file that is not theirs and change none of them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from kraftacl.metadata_log.backends.file.dir_files import (
    KAFKA_MARKERS,
    KAFKA_PARTITION_DIR,
    is_kafka_file,
    is_own_segment,
)

PARTITION_DIR = KAFKA_PARTITION_DIR
SEGMENT_NAME = re.compile(r"(\d{20})\.log")
SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """A Kafka `.checkpoint`: the state below `end_offset` (exclusive), written in `epoch`."""

    end_offset: int
    epoch: int
    path: Path


@dataclass(frozen=True, slots=True)
class KafkaMetadataFiles:
    """The Kafka metadata files a path names: a directory's segments and snapshots, or one file."""

    named: Path  # what the caller gave
    directory: Path  # the partition directory (for one file: the file's directory)
    segments: tuple[tuple[int, Path], ...]  # (base offset, path), in offset order
    snapshots: tuple[SnapshotFile, ...]  # oldest first

    @property
    def single_file(self) -> bool:
        return self.named.is_file()


def locate(path: Path) -> KafkaMetadataFiles | None:
    """The Kafka KRaft metadata at `path` (a metadata.log.dir, a partition directory, or one `.log` or
    `.checkpoint` file), or None when `path` holds no Kafka metadata (e.g. a kraft-acl log)."""
    if path.is_file():
        if not is_kafka_file(path):
            return None
        match = SEGMENT_NAME.fullmatch(path.name)
        snapshot = _snapshot(path)
        return KafkaMetadataFiles(
            path,
            path.parent,
            ((int(match.group(1)), path),) if match else (),
            (snapshot,) if snapshot else (),
        )
    if not path.is_dir():
        return None
    directory = path / PARTITION_DIR if (path / PARTITION_DIR).is_dir() else path
    names = sorted(os.listdir(directory))
    segments = tuple((int(m.group(1)), directory / n) for n in names if (m := SEGMENT_NAME.fullmatch(n)))
    snapshots = tuple(s for n in names if (s := _snapshot(directory / n)) is not None)
    if not _kafka_directory(directory != path, names, segments, snapshots):
        return None
    return KafkaMetadataFiles(path, directory, segments, tuple(sorted(snapshots, key=_order)))


def _kafka_directory(
    nested: bool, names: list[str], segments: tuple[tuple[int, Path], ...], snapshots: tuple[SnapshotFile, ...]
) -> bool:
    """Kafka's: a `__cluster_metadata-0` inside, a file only Kafka keeps there, or Kafka segments or snapshots
    beside no kraft-acl segment (kraft-acl segments win: Kafka files there are strays the file log refuses)."""
    if nested or any(n in KAFKA_MARKERS for n in names):
        return True
    if any(is_own_segment(p) for _, p in segments):
        return False
    return any(is_kafka_file(p) for _, p in segments) or any(is_kafka_file(s.path) for s in snapshots)


def _snapshot(path: Path) -> SnapshotFile | None:
    match = SNAPSHOT_NAME.fullmatch(path.name)
    return SnapshotFile(int(match.group(1)), int(match.group(2)), path) if match else None


def _order(snapshot: SnapshotFile) -> tuple[int, int]:
    return snapshot.end_offset, snapshot.epoch
