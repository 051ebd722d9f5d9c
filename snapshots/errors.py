"""Errors raised by the snapshots package.

    SnapshotError                 base class
    ├── CorruptSnapshotError      a damaged or truncated file (path, byte position, reason)
    └── SnapshotNameError         a file name that is not `<20 digits>-<10 digits>.checkpoint`

Plain exception values; safe to raise from any thread.
"""

from __future__ import annotations

from pathlib import Path


class SnapshotError(Exception):
    """Base class of snapshot errors."""


class CorruptSnapshotError(SnapshotError):
    """The file fails validation; it is never partially loaded."""

    def __init__(self, path: Path, position: int, reason: str) -> None:
        super().__init__(f"damaged snapshot {path} at byte {position}: {reason}")
        self.path = path
        self.position = position
        self.reason = reason


class SnapshotNameError(SnapshotError, ValueError):
    """Not a snapshot file name."""
