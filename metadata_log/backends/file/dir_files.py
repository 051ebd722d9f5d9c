"""Which files of a log directory kraft-acl wrote, recognised by name and magic; everything else is foreign, and
which foreign files are Apache Kafka's own KRaft metadata. The one rule every reader and writer of the project
applies (`kafka_files.files` decides with it whether a path is Kafka's metadata or a kraft-acl log).

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

Kafka's files start with a record batch whose magic byte (position 16) is 2 and not with either kraft-acl
magic; `quorum-state`, `partition.metadata` and `leader-epoch-checkpoint` are files only Kafka keeps there.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from kraftacl.metadata_log.backends.file.directory import EPOCH_FILE, LOCK_FILE
from kraftacl.metadata_log.backends.file.format import SEGMENT_MAGIC
from kraftacl.metadata_log.backends.file.meta import DURABLE_END_FILE, META_FILE
from kraftacl.metadata_log.errors import ForeignFilesError, LogResourceError
from kraftacl.metadata_log.kafka_files.batches import MAGIC as KAFKA_BATCH_MAGIC

SNAPSHOT_MAGIC = b"KACLSNAP"
_PLAIN = frozenset({EPOCH_FILE, f"{EPOCH_FILE}.tmp", META_FILE, f"{META_FILE}.tmp", DURABLE_END_FILE})
_SEGMENT = re.compile(r"[0-9]{20}\.log")
_SNAPSHOT = re.compile(r"[0-9]{20}-[0-9]{10}\.checkpoint(\.deleted)?")
_PART = re.compile(r"[0-9]{20}-[0-9]{10}-[0-9]{1,7}\.checkpoint\.part")
_PID = re.compile(rb"[0-9]{1,10}\n?")
RECOVERED = re.compile(r"recovered-[0-9]{20}(-[0-9]+)?")
KAFKA_MARKERS = ("quorum-state", "partition.metadata", "leader-epoch-checkpoint")
KAFKA_PARTITION_DIR = "__cluster_metadata-0"  # inside a metadata.log.dir
_KAFKA_INDEX = re.compile(r"[0-9]{20}\.(index|timeindex|txnindex|snapshot)")  # a Kafka segment's companions


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


def is_kafka_file(path: Path) -> bool:
    """True when the file starts like a Kafka record batch (magic 2) and not like a kraft-acl file."""
    try:
        head = _head(path, 17)
    except LogResourceError:
        return False
    return (
        head is not None
        and len(head) == 17
        and head[16] == KAFKA_BATCH_MAGIC
        and not head.startswith((SEGMENT_MAGIC, SNAPSHOT_MAGIC))
    )


def refuse_foreign(directory: Path) -> None:
    """ForeignFilesError naming every entry kraft-acl did not write (those that are Kafka's said so); writers
    call it before they create or change anything in `directory`."""
    foreign = foreign_entries(directory)
    if foreign:
        raise ForeignFilesError(directory, foreign, [n for n in foreign if is_kafka_entry(directory, n)])


def is_kafka_entry(directory: Path, name: str) -> bool:
    """True for an entry of `directory` that is Apache Kafka's own KRaft metadata (a file only Kafka keeps,
    its partition directory, a segment's index, or a file that starts like a Kafka record batch)."""
    if name in KAFKA_MARKERS or name == KAFKA_PARTITION_DIR or _KAFKA_INDEX.fullmatch(name):
        return True
    return is_kafka_file(directory / name)


def foreign_reason(directory: Path, name: str) -> str:
    """Why a foreign entry is refused, in the words every reader and writer uses."""
    kafka = " (Apache Kafka's own KRaft metadata)" if is_kafka_entry(directory, name) else ""
    return f"not written by kraft-acl{kafka}: a writer refuses this directory (move it elsewhere)"
