"""The `FileLog` data directory: segment naming, the writer lock file, the writer epoch file, fsync.

Functions are stateless; a `WriterLock` is owned by one `FileLog` and released once (not shared).

    <dir>/.lock                       flock(LOCK_EX) held by the one writer for its lifetime; holds its pid
    <dir>/writer-epoch                the last writer epoch, decimal; bumped (and fsynced) per writer open
    <dir>/00000000000000000000.log    segments, named by the base offset of their first batch
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

from metadata_log.errors import CorruptLogError, LogLockedError

LOCK_FILE = ".lock"
EPOCH_FILE = "writer-epoch"
SEGMENT_NAME = re.compile(r"(\d{20})\.log")


def segment_path(directory: Path, base_offset: int) -> Path:
    """`<dir>/<base offset, 20 digits>.log`, as Kafka names its segments."""
    return directory / f"{base_offset:020d}.log"


def list_segments(directory: Path) -> list[tuple[int, Path]]:
    """The (base offset, path) of every segment file in `directory`, in offset order."""
    found = []
    for entry in os.scandir(directory):
        match = SEGMENT_NAME.fullmatch(entry.name)
        if match and entry.is_file():
            found.append((int(match.group(1)), Path(entry.path)))
    return sorted(found)


def fsync_dir(directory: Path) -> None:
    """Make created, renamed or removed directory entries durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WriterLock:
    """An exclusive, non-blocking `flock` on `<dir>/.lock`, released by `release` or process death."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise LogLockedError(self.path, pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        """Unlock and close; idempotent. The file stays (removing it would race a new writer)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the only descriptor drops the flock


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode("ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def read_epoch(directory: Path) -> int:
    """The epoch of the last writer (0 if none ever opened the log)."""
    path = directory / EPOCH_FILE
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return 0
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptLogError(path, 0, f"cannot read the writer epoch: {exc}") from exc
    if not text.isdigit():
        raise CorruptLogError(path, 0, f"writer epoch {text!r} is not a non-negative integer")
    return int(text)


def write_epoch(directory: Path, epoch: int) -> None:
    """Durably replace the epoch file: write a temp file, fsync, rename over, fsync the directory."""
    path = directory / EPOCH_FILE
    tmp = directory / f"{EPOCH_FILE}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, f"{epoch}\n".encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(directory)
