"""Errors raised by the snapshots package.

    SnapshotError                 base class
    ├── CorruptSnapshotError      a damaged or truncated file (path, byte position, reason)
    ├── SnapshotIOError           reading or writing a file failed for an OS reason (ENOSPC, EMFILE, EIO), named
    └── SnapshotNameError         a file name that is not `<20 digits>-<10 digits>.checkpoint`

Plain exception values; safe to raise from any thread.
"""

from __future__ import annotations

from pathlib import Path

from kraftacl.metadata_log.errors import os_reason


class SnapshotError(Exception):
    """Base class of snapshot errors."""


class CorruptSnapshotError(SnapshotError):
    """The file fails validation; it is never partially loaded."""

    def __init__(self, path: Path, position: int, reason: str) -> None:
        super().__init__(f"damaged snapshot {path} at byte {position}: {reason}")
        self.path = path
        self.position = position
        self.reason = reason


class SnapshotIOError(SnapshotError):
    """An OS error reading or writing a snapshot file, named (no space, too many open files, I/O), never "damaged"."""

    def __init__(self, path: Path, exc: OSError, action: str) -> None:
        super().__init__(f"cannot {action} snapshot {path}: {os_reason(exc)}")
        self.path = path
        self.errno = exc.errno


class SnapshotNameError(SnapshotError, ValueError):
    """Not a snapshot file name."""
