"""Which files of a log directory kraft-acl wrote, recognised by name and magic; everything else is foreign.

Stateless functions that read at most a few bytes of a file; safe from any thread.

A writer (`FileLog`, and so `acls --add` and `snapshot create`) refuses a directory holding a
foreign file, and only files these rules call kraft-acl's are ever truncated, renamed or deleted.
Kafka's own metadata directory (`__cluster_metadata-0`) uses the same names for different bytes
(`00000000000000000000.log`, `<end>-<epoch>.checkpoint`, `.checkpoint.part`, `.checkpoint.deleted`),
so the name alone never decides:

    .lock                                  empty, or the writer's pid
    writer-epoch[.tmp], log-meta[.tmp], durable-end
    <20 digits>.log                        starts with b"KACS" (or, cut short, a prefix of it)
    <20>-<10>.checkpoint[.deleted]         starts with b"KACLSNAP"
    <20>-<10>-<pid>.checkpoint.part        a prefix-compatible start with b"KACLSNAP" (empty included)
    recovered-<20 digits>[-n]/             segments set aside by `kraft-acl log recover`
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from metadata_log.backends.file_dir import EPOCH_FILE, LOCK_FILE
from metadata_log.backends.file_format import SEGMENT_MAGIC
from metadata_log.backends.file_meta import DURABLE_END_FILE, META_FILE
from metadata_log.errors import LogResourceError

SNAPSHOT_MAGIC = b"KACLSNAP"
_PLAIN = frozenset({EPOCH_FILE, f"{EPOCH_FILE}.tmp", META_FILE, f"{META_FILE}.tmp", DURABLE_END_FILE})
_SEGMENT = re.compile(r"[0-9]{20}\.log")
_SNAPSHOT = re.compile(r"[0-9]{20}-[0-9]{10}\.checkpoint(\.deleted)?")
_PART = re.compile(r"[0-9]{20}-[0-9]{10}-[0-9]{1,7}\.checkpoint\.part")
_PID = re.compile(rb"[0-9]{1,10}\n?")
RECOVERED = re.compile(r"recovered-[0-9]{20}(-[0-9]+)?")


def _head(path: Path, size: int) -> bytes | None:
    """The first `size` bytes of a regular file (None if it is not one or cannot be read; never blocks on a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symbolic link: never kraft-acl's
            return None
        raise LogResourceError(path, exc, "open") from exc
    try:
        return os.pread(fd, size, 0) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError as exc:
        raise LogResourceError(path, exc) from exc
    finally:
        os.close(fd)


def is_own_segment(path: Path) -> bool:
    """A `<20 digits>.log` file that starts with kraft-acl's segment magic (or a cut-off prefix of it)."""
    head = _head(path, len(SEGMENT_MAGIC))
    return _SEGMENT.fullmatch(path.name) is not None and head is not None and SEGMENT_MAGIC.startswith(head)


def is_own_snapshot(path: Path) -> bool:
    """A `.checkpoint` (or `.checkpoint.deleted`) file with kraft-acl's snapshot magic."""
    return _SNAPSHOT.fullmatch(path.name) is not None and _head(path, len(SNAPSHOT_MAGIC)) == SNAPSHOT_MAGIC


def is_own_part(path: Path) -> bool:
    """A snapshot being written by kraft-acl (`<id>-<pid>.checkpoint.part`; empty when its writer died at once)."""
    head = _head(path, len(SNAPSHOT_MAGIC))
    return _PART.fullmatch(path.name) is not None and head is not None and SNAPSHOT_MAGIC.startswith(head)


def is_own(path: Path) -> bool:
    """True when kraft-acl wrote this directory entry (by the rules in the module docstring)."""
    name = path.name
    if path.is_symlink():
        return False
    if name in _PLAIN:
        return path.is_file()
    if name == LOCK_FILE:
        head = _head(path, 16)
        return head is not None and (head == b"" or _PID.fullmatch(head) is not None)
    if RECOVERED.fullmatch(name):
        return path.is_dir()
    return is_own_segment(path) or is_own_snapshot(path) or is_own_part(path)


def foreign_entries(directory: Path) -> list[str]:
    """The names of every entry of `directory` that kraft-acl did not write, sorted."""
    if not directory.is_dir():
        return []
    return sorted(entry.name for entry in os.scandir(directory) if not is_own(Path(entry.path)))
