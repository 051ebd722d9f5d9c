"""The errors raised by the metadata log: codec, backends and the files they keep.

Exceptions are plain values, safe to raise and inspect from any thread.

    LogError                       anything the log refuses or cannot do
    ├── CorruptLogError            stored bytes are not a valid log (path, position, reason)
    │   └── LogLostDataError       the log ends below what it acknowledged (durable end, own snapshot)
    ├── ForeignFilesError          a writer was given a directory holding files kraft-acl did not write
    ├── DecodeError                a batch payload is not valid Avro for its schema (offset, reason)
    ├── EncodeError                a record cannot be encoded (record index, field, reason; a ValueError)
    ├── LogLockedError             another writer holds the directory lock (path, pid)
    ├── LogClosedError             the backend was closed
    ├── ReadOnlyLogError           append on a backend opened read-only
    ├── LogIOError                 an OS error while writing; the backend refuses further appends
    ├── LogResourceError           an OS error reading or opening a log file (EMFILE, EIO, ...), named as such
    ├── OffsetOutOfRangeError      read below the log start or beyond the high-water mark
    ├── InvalidUuidError           text that is not a canonical Kafka Uuid (also a ValueError)
    └── ReplayError                batches out of order (a gap, a duplicate) or a log that ends early (offset)
        └── DivergenceError        the log no longer holds what a reader applied (shorter, or another batch)

Messages name the file, the offset or position and the field at fault, so the CLI can print one
clear line.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

# Errors that may go away by themselves (a retry with backoff is worth it); the rest need an operator.
TRANSIENT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.EIO, errno.ENOSPC, errno.EAGAIN, errno.ENOMEM})


def os_reason(exc: OSError) -> str:
    """An OS error as what it is: `No space left on device (ENOSPC)`, never a bare number or "corrupt"."""
    code = exc.errno
    name = errno.errorcode.get(code, "") if code is not None else ""
    text = exc.strerror or (os.strerror(code) if code is not None else str(exc))
    return f"{text} ({name})" if name else text


class LogError(Exception):
    """Base class of every error raised by `metadata_log`."""


class CorruptLogError(LogError):
    """The log's stored bytes are not a valid log: a bad batch that is not a torn tail, a gap, ..."""

    def __init__(self, path: Path | str, position: int, reason: str) -> None:
        self.path = Path(path)
        self.position = position
        self.reason = reason
        super().__init__(f"corrupt log file {self.path} at byte position {position}: {reason}")


class LogLostDataError(CorruptLogError):
    """The log ends below an end it once acknowledged: batches were lost (a cut tail, a deleted segment).

    `end` is where the log ends now, `acknowledged` the end it is known to have reached and `evidence`
    what says so (the durable-end file, a snapshot of this log). Nothing is repaired: the operator
    decides (`kraft-acl log recover`).
    """

    def __init__(self, directory: Path | str, end: int, acknowledged: int, evidence: str) -> None:
        self.directory = Path(directory)
        self.end = end
        self.acknowledged = acknowledged
        self.evidence = evidence
        LogError.__init__(
            self,
            f"the log in {self.directory} ends at offset {end}, but {evidence} shows it held offsets up to "
            f"{acknowledged}: acknowledged batches [{end}, {acknowledged}) were lost; nothing was changed. "
            f"See `kraft-acl log check --log-dir {self.directory}`; `kraft-acl log recover --log-dir "
            f"{self.directory}` continues the log at offset {acknowledged}, never reusing an offset (from a "
            "snapshot holding the lost batches' state, or with --accept-loss)",
        )
        self.path = self.directory
        self.position = end
        self.reason = str(self)


class ForeignFilesError(LogError):
    """A writer refuses a directory holding files kraft-acl did not write (Kafka's own files, anything else)."""

    def __init__(self, directory: Path | str, names: list[str], kafka: list[str] | None = None) -> None:
        self.directory = Path(directory)
        self.names = names
        self.kafka = kafka or []  # those of `names` that are Apache Kafka's own KRaft metadata
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        whose = (
            f" ({len(self.kafka)} of them Apache Kafka's own KRaft metadata, which `log dump`, `replay` and "
            "`import --from-kafka-dir` read)"
            if self.kafka
            else ""
        )
        super().__init__(
            f"log directory {self.directory} holds files kraft-acl did not write: {shown}{whose}; a writer changes "
            "nothing in such a directory (give an empty directory or a kraft-acl log directory)"
        )


class DecodeError(LogError):
    """A batch payload could not be decoded; `offset` is the base offset of the batch."""

    def __init__(self, offset: int, reason: str, path: Path | str | None = None) -> None:
        self.offset = offset
        self.reason = reason
        self.path = None if path is None else Path(path)
        where = "" if self.path is None else f" in {self.path}"
        super().__init__(f"cannot decode the batch at base offset {offset}{where}: {reason}")


class EncodeError(LogError, ValueError):
    """A record given to `append`/`encode` has a field that its schema cannot hold."""

    def __init__(self, index: int | None, reason: str) -> None:
        self.index = index
        self.reason = reason
        where = "a batch" if index is None else f"record {index} of the batch"
        super().__init__(f"cannot encode {where}: {reason}")


class LogLockedError(LogError):
    """Another writer holds the log directory's lock file."""

    def __init__(self, path: Path | str, pid: int | None, waited_s: float = 0.0) -> None:
        self.path = Path(path)
        self.pid = pid
        self.waited_s = waited_s
        holder = "another writer" if pid is None else f"another writer (pid {pid})"
        waited = f" (waited {waited_s:g} s; --lock-timeout waits longer)" if waited_s > 0 else ""
        super().__init__(
            f"log directory {self.path.parent} is locked by {holder}: lock file {self.path}{waited}; "
            "open it read-only or stop the other writer"
        )


class LogResourceError(LogError):
    """Opening or reading a log file failed for want of a resource or an I/O error (EMFILE, EIO, ENOSPC, ...).

    Never a statement about the log's bytes: the same read may succeed later (`transient`).
    """

    def __init__(self, path: Path | str, exc: OSError, action: str = "read") -> None:
        self.path = Path(path)
        self.errno = exc.errno
        super().__init__(f"cannot {action} {self.path}: {os_reason(exc)}")

    @property
    def transient(self) -> bool:
        """True when the error may go away (file handles freed, disk space made, a flaky disk)."""
        return self.errno in TRANSIENT_ERRNOS


class LogClosedError(LogError):
    """The backend was closed; open a new one."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is closed")


class ReadOnlyLogError(LogError):
    """`append` was called on a backend opened read-only."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} was opened read-only: append is not allowed")


class LogIOError(LogError):
    """Writing or syncing failed; the batch is not committed and the backend refuses more appends."""

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"I/O error on log file {self.path}: {reason}; reopen the log to recover")


class OffsetOutOfRangeError(LogError):
    """A read asked for an offset below the log start offset or beyond the high-water mark."""

    def __init__(self, offset: int, log_start_offset: int, high_watermark: int) -> None:
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.high_watermark = high_watermark
        super().__init__(
            f"offset {offset} is out of range: the log holds offsets "
            f"[{log_start_offset}, {high_watermark}) (high-water mark {high_watermark} is exclusive)"
        )


class InvalidUuidError(LogError, ValueError):
    """Text that is not the canonical 22-character URL-safe base64 form of a 16-byte Kafka Uuid."""

    def __init__(self, text: object, reason: str, field: str = "id") -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"invalid Kafka Uuid in field {field!r}: {text!r}: {reason}")


class ReplayError(LogError):
    """The log's batches are out of order (a gap, a duplicate) or end early; `offset` is where."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"replay stopped at offset {offset}: {message}")
        self.offset = offset


class DivergenceError(ReplayError):
    """The log no longer holds what a reader applied: it ends below the reader's offset, or another batch sits
    at an offset the reader applied. The reader must not apply anything after it."""
