"""The rules a `FileLog`'s segments follow: where each starts, which log it belongs to, and what a writer may remove.

Pure functions over immutable headers and the segments scanned so far; safe from any thread.

    position   the first segment starts at the log start (`log-meta`), each next one where the one
               before it ends; anything else means segments are missing (or were added)
    identity   a format-2 segment names the log's id; format-1 segments only in a legacy log
    removal    a writer removes only its own last segment that holds no whole batch (a roll cut
               short); a file that is not kraft-acl's is never a torn tail
"""

from __future__ import annotations

from pathlib import Path

from kraftacl.metadata_log.backends.file.dir_files import is_kafka_file
from kraftacl.metadata_log.backends.file.meta import LogMeta
from kraftacl.metadata_log.backends.file.segment import Damage, Segment
from kraftacl.metadata_log.errors import CorruptLogError
from kraftacl.metadata_log.uuids import new_uuid, uuid_to_text


def check_position(path: Path, base: int, previous_end: int | None, meta: LogMeta | None) -> None:
    """CorruptLogError unless a segment starting at `base` follows the one before it (or the log start)."""
    if previous_end is not None:
        if base != previous_end:
            raise CorruptLogError(
                path, 0, f"segment starts at offset {base} but the log before it ends at {previous_end}"
            )
        return
    if meta is None or base == meta.log_start_offset:
        return
    start = meta.log_start_offset
    if base < start:
        raise CorruptLogError(path, 0, f"segment starts at offset {base}, below the log start {start} (log-meta)")
    raise CorruptLogError(
        path,
        0,
        f"the log starts at offset {start} (log-meta) but its first segment at {base}: "
        f"the segments holding offsets [{start}, {base}) are missing",
    )


def check_identity(segment: Segment, meta: LogMeta | None, before: list[Segment]) -> None:
    """CorruptLogError unless the segment belongs to this log (format 1 only in a legacy log)."""
    if segment.log_id is None:
        if meta is not None and not meta.legacy:
            raise CorruptLogError(segment.path, 0, f"a format-1 segment (no log id) in log {meta.log_id}")
        return
    expected = meta.log_id_bytes if meta is not None else None
    if expected is None:
        expected = next((s.log_id for s in before if s.log_id is not None), segment.log_id)
    if segment.log_id != expected:
        theirs, mine = uuid_to_text(segment.log_id), uuid_to_text(expected)
        raise CorruptLogError(segment.path, 0, f"the segment belongs to log {theirs}, not to this log {mine}")


def log_id_of(meta: LogMeta | None, segments: list[Segment]) -> str | None:
    """The log's identity: its log-meta's, else its first format-2 segment's (None: a log that predates them)."""
    if meta is not None:
        return meta.log_id
    ids = [s.log_id for s in segments if s.log_id is not None]
    return uuid_to_text(ids[0]) if ids else None


def new_meta(segments: list[Segment], end: int) -> LogMeta:
    """The identity a writer gives a log without `log-meta`: that of its format-2 segments, else a new one."""
    log_id = log_id_of(None, segments) or new_uuid()
    start = segments[0].base_offset if segments else end
    return LogMeta(log_id, start, legacy=any(s.log_id is None for s in segments))


def header_only(segment: Segment) -> Damage:
    """A last segment holding nothing but its header: a roll cut short, removed by a writer (with a warning)."""
    reason = "the segment holds only its header, no batch (a segment roll cut short)"
    return Damage(segment.path, 0, reason, True, None, segment.data_start)


def not_ours(damage: Damage) -> str:
    """The reason a segment is refused; for a file that is not kraft-acl's, that it is left alone."""
    if damage.foreign:
        kafka = " (Apache Kafka's own KRaft metadata)" if is_kafka_file(damage.path) else ""
        return (
            f"{damage.reason}{kafka}; kraft-acl never reads, cuts or removes such a file "
            "(move it out of the log directory)"
        )
    return damage.describe()
