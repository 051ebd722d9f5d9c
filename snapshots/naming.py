"""Snapshot file names as Kafka writes them: `<endOffset, 20 digits>-<epoch, 10 digits>.checkpoint`.

Pure functions; thread-safe. The end offset is exclusive: the snapshot holds every record below it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kraftacl.snapshots.errors import SnapshotNameError

SUFFIX = ".checkpoint"
PART_SUFFIX = ".checkpoint.part"
DELETED_SUFFIX = ".checkpoint.deleted"
_NAME = re.compile(r"^([0-9]{20})-([0-9]{10})\.checkpoint$")
INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True, order=True, slots=True)
class SnapshotId:
    """(end offset, epoch), ordered so the newest snapshot sorts last."""

    end_offset: int
    epoch: int

    def file_name(self) -> str:
        """`00000000000000000100-0000000001.checkpoint`."""
        return f"{self.end_offset:020d}-{self.epoch:010d}{SUFFIX}"


def parse_name(path: Path | str) -> SnapshotId:
    """The id in a snapshot file name; SnapshotNameError for anything else."""
    name = Path(path).name
    match = _NAME.fullmatch(name)
    if match is None:
        raise SnapshotNameError(f"{name}: not a snapshot name (<20-digit end offset>-<10-digit epoch>{SUFFIX})")
    end, epoch = int(match.group(1)), int(match.group(2))
    if end > INT64_MAX or epoch > INT32_MAX:
        raise SnapshotNameError(f"{name}: not a snapshot name (end offset beyond int64 or epoch beyond int32)")
    return SnapshotId(end, epoch)
