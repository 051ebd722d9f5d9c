"""The `FileLog` data directory: segment naming, the writer lock file, the writer epoch file, fsync.

Functions are stateless; a `WriterLock` is owned by one `FileLog` and released once (not shared).

    <dir>/.lock                       flock(LOCK_EX) held by the one writer for its lifetime; holds its pid
    <dir>/writer-epoch                the last writer epoch, decimal; bumped (and fsynced) per writer open
    <dir>/00000000000000000000.log    segments, named by the base offset of their first batch
    <dir>/log-meta, <dir>/durable-end the log's identity and durable end (`file_meta`)

A writer waits up to its lock timeout for the lock (polling), then fails naming the holder's pid.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path

from kraftacl.metadata_log.errors import CorruptLogError, LogLockedError, LogResourceError

LOCK_FILE = ".lock"
EPOCH_FILE = "writer-epoch"
SEGMENT_NAME = re.compile(r"([0-9]{20})\.log")
INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1
LOCK_POLL_S = 0.05


def segment_path(directory: Path, base_offset: int) -> Path:
    """`<dir>/<base offset, 20 digits>.log`, as Kafka names its segments."""
    return directory / f"{base_offset:020d}.log"


def list_segments(directory: Path) -> list[tuple[int, Path]]:
    """The (base offset, path) of every segment file in `directory`, in offset order."""
    found = []
    for entry in os.scandir(directory):
        match = SEGMENT_NAME.fullmatch(entry.name)
        if match and entry.is_file():
            base = int(match.group(1))
            if base > INT64_MAX:
                raise CorruptLogError(entry.path, 0, f"segment base offset {base} in the file name is beyond int64")
            found.append((base, Path(entry.path)))
    return sorted(found)


def fsync_dir(directory: Path) -> None:
    """Make created, renamed or removed directory entries durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WriterLock:
    """An exclusive `flock` on `<dir>/.lock`, waited for up to `timeout_s`, released by `release` or process death."""

    def __init__(self, directory: Path, timeout_s: float = 0.0) -> None:
        self.path = directory / LOCK_FILE
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + max(timeout_s, 0.0)
        try:
            while not _try_lock(fd):
                if time.monotonic() >= deadline:
                    raise LogLockedError(self.path, _read_pid(fd), max(timeout_s, 0.0))
                time.sleep(LOCK_POLL_S)
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


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode("ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def read_epoch(directory: Path) -> int:
    """The epoch of the last writer (0 if none ever opened the log)."""
    path = directory / EPOCH_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise LogResourceError(path, exc) from exc
    text = raw.decode("ascii", errors="replace").strip()
    if re.fullmatch(r"[0-9]{1,10}", text) is None or int(text) > INT32_MAX:
        raise CorruptLogError(path, 0, f"writer epoch {text[:40]!r} is not an integer in 0..{INT32_MAX}")
    return int(text)


def write_epoch(directory: Path, epoch: int) -> None:
    """Durably replace the epoch file: write a temp file, fsync, rename over, fsync the directory."""
    replace_durably(directory / EPOCH_FILE, f"{epoch}\n".encode("ascii"))


def replace_durably(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically and durably: `<path>.tmp`, fsync, rename over, fsync the directory."""
    tmp = path.with_name(f"{path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        raise LogResourceError(path, exc, "write") from exc
