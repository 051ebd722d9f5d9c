"""A `FileLog` directory's identity and history markers: `log-meta` (log id, log start) and `durable-end`.

`LogMeta` is an immutable value; `DurableEnd` is owned by one `FileLog` (its writer updates it under
the append lock, a reader only reads it). Both files are kraft-acl's own (`dir_files` knows them).

    <dir>/log-meta       JSON {"format": 1, "log_id": "<Kafka Uuid text>", "log_start_offset": N, "legacy": bool}
                         written once when the log is created (or first opened by a writer that knows
                         identities), and by `kraft-acl log recover`; temp file, fsync, rename, fsync dir
    <dir>/durable-end    32 bytes: b"KACE" | end offset int64 | log id (16 bytes) | CRC-32 of the 28 before

`legacy` marks a log that held segments before log identities existed: its format-1 segments and
its snapshots without a log id are still its own. The durable end is the exclusive end of what the
writer has fsynced: it is written (one `pwrite`, no fsync) after every append's fsync, so it never
runs ahead of the data. Readers in other processes stop there, so no reader ever serves a batch
whose fsync has not returned; and a log found ending below it lost acknowledged batches.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftacl.metadata_log import strict_json
from kraftacl.metadata_log.backends.file import directory as file_dir
from kraftacl.metadata_log.errors import CorruptLogError, LogResourceError
from kraftacl.metadata_log.uuids import UUID_TEXT, text_to_uuid, uuid_to_text

META_FILE = "log-meta"
DURABLE_END_FILE = "durable-end"
META_FORMAT = 1
_END = struct.Struct(">4sq16sI")
_END_MAGIC = b"KACE"
INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class LogMeta:
    """What a log directory is: its identity, the first offset it holds, and whether it predates identities."""

    log_id: str
    log_start_offset: int = 0
    legacy: bool = False

    @property
    def log_id_bytes(self) -> bytes:
        """The 16 raw bytes of the log id (as segment headers and the durable-end file hold it)."""
        return text_to_uuid(self.log_id)


def read_meta(directory: Path) -> LogMeta | None:
    """The directory's `log-meta`, or None if it has none; CorruptLogError names a bad field."""
    path = directory / META_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LogResourceError(path, exc) from exc
    try:
        fields = strict_json.loads(raw)
    except ValueError as exc:
        raise CorruptLogError(path, 0, f"not a log-meta JSON object: {exc}") from exc
    if not isinstance(fields, dict):
        raise CorruptLogError(path, 0, "not a log-meta JSON object")
    return LogMeta(
        _log_id(path, fields.get("log_id")),
        _int_field(path, fields, "log_start_offset", INT64_MAX),
        _bool_field(path, fields, "legacy"),
    )


def _log_id(path: Path, value: Any) -> str:
    if type(value) is not str or UUID_TEXT.fullmatch(value) is None:
        raise CorruptLogError(path, 0, f"field 'log_id' = {value!r} is not a Kafka Uuid text")
    return value


def _int_field(path: Path, fields: dict[str, Any], name: str, highest: int) -> int:
    value = fields.get(name)
    if type(value) is not int or not 0 <= value <= highest:
        raise CorruptLogError(path, 0, f"field {name!r} = {value!r} is not an integer in 0..{highest}")
    return value


def _bool_field(path: Path, fields: dict[str, Any], name: str) -> bool:
    value = fields.get(name, False)
    if type(value) is not bool:
        raise CorruptLogError(path, 0, f"field {name!r} = {value!r} is not true or false")
    return value


def write_meta(directory: Path, meta: LogMeta) -> None:
    """Durably replace `log-meta` (temp file, fsync, rename over, fsync the directory)."""
    text = json.dumps(
        {
            "format": META_FORMAT,
            "log_id": meta.log_id,
            "log_start_offset": meta.log_start_offset,
            "legacy": meta.legacy,
        }
    )
    file_dir.replace_durably(directory / META_FILE, (text + "\n").encode("ascii"))


class DurableEnd:
    """The `durable-end` file of one directory: a writer publishes through it, a reader follows it."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / DURABLE_END_FILE
        self._fd: int | None = None

    def read(self, retries: int = 3) -> tuple[int, bytes] | None:
        """(end offset, log id) as last published, or None when the file does not exist (yet)."""
        for _ in range(retries):
            try:
                with open(self.path, "rb") as f:
                    data = f.read(_END.size + 1)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise LogResourceError(self.path, exc) from exc
            parsed = _parse_end(data)
            if parsed is not None:
                return parsed
            # a pwrite racing this read can show a mix of two values: the CRC tells, and a retry sees one
        raise CorruptLogError(self.path, 0, f"not a durable-end record ({len(data)} bytes, bad magic or CRC)")

    def read_for(self, meta: LogMeta | None) -> int | None:
        """The published end, checked to name the log `meta` describes (None when none was published)."""
        found = self.read()
        if found is None:
            return None
        end, ident = found
        if meta is not None and ident != meta.log_id_bytes:
            reason = f"durable-end names log {uuid_to_text(ident)}, not {meta.log_id}"
            raise CorruptLogError(self.path, 0, reason)
        return end

    def publish(self, end_offset: int, log_id: bytes, *, sync: bool = False) -> None:
        """Writer: record that every batch below `end_offset` is durable (one pwrite; fsync when `sync`)."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        body = struct.pack(">4sq16s", _END_MAGIC, end_offset, log_id)
        os.pwrite(self._fd, body + struct.pack(">I", zlib.crc32(body)), 0)
        if sync:
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the writer's descriptor (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def _parse_end(data: bytes) -> tuple[int, bytes] | None:
    if len(data) != _END.size:
        return None
    magic, end, log_id, crc = _END.unpack(data)
    if magic != _END_MAGIC or zlib.crc32(data[:-4]) != crc or end < 0:
        return None
    return end, log_id
