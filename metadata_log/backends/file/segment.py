"""One `FileLog` segment in memory (committed extent, writer schema, sparse offset index), the scan that
builds it from the file telling a torn tail from corruption, and the read path over segments.

A `Segment` is mutable and owned by one `FileLog`, which changes it only under its state lock;
`Damage` and `Recovery` are immutable values.

The sparse index keeps one (base offset, position) entry per `interval` bytes of frames, plus the
first frame. To read from offset 57 the scan starts at the last entry whose base offset is <= 57:

    index_offsets    0     40    81    120         bisect_right(index_offsets, 57) - 1 = 1
    index_positions  221   4330  8447  12601       -> start at position 4330 (base offset 40) and
                                                      skip whole frames until one contains 57
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kraftacl.metadata_log.backends.file.format import (
    Frame,
    FrameError,
    decode_frame,
    find_frame_after,
    iter_frames,
    read_segment_header_full,
)
from kraftacl.metadata_log.codec import BatchSchema, Codec
from kraftacl.metadata_log.errors import CorruptLogError, DivergenceError, LogResourceError
from kraftacl.metadata_log.records import RecordBatch

READ_BUFFER = 1 << 20


@dataclass(slots=True)
class Segment:
    """The committed state of a segment file: frames in [data_start, end) hold [base_offset, next_offset)."""

    path: Path
    base_offset: int
    schema: BatchSchema
    data_start: int
    end: int
    next_offset: int
    last_epoch: int = -1
    index_offsets: list[int] = field(default_factory=list)
    index_positions: list[int] = field(default_factory=list)
    log_id: bytes | None = None  # from the header; None in a format-1 segment
    batches: int = 0  # whole frames added so far

    @property
    def empty(self) -> bool:
        """True when the segment holds no batch yet."""
        return self.next_offset == self.base_offset

    def add(self, frame: Frame, interval: int) -> None:
        """Record a committed frame; index it if `interval` bytes passed since the last entry."""
        self.add_at(frame.position, frame.size, frame.base_offset, frame.record_count, frame.epoch, interval)

    def add_at(self, position: int, size: int, base_offset: int, records: int, epoch: int, interval: int) -> None:
        """`add` of the frame of `size` bytes at `position` holding `records` records from `base_offset`."""
        if not self.index_positions or position - self.index_positions[-1] >= interval:
            self.index_offsets.append(base_offset)
            self.index_positions.append(position)
        self.end = position + size
        self.next_offset = base_offset + records
        self.last_epoch = epoch
        self.batches += 1

    def locate(self, offset: int) -> tuple[int, int]:
        """(position, base offset) of the indexed frame at or before the one holding `offset`."""
        i = bisect.bisect_right(self.index_offsets, offset) - 1
        if i < 0:
            return self.data_start, self.base_offset
        return self.index_positions[i], self.index_offsets[i]


@dataclass(frozen=True, slots=True)
class Damage:
    """A bad header or frame found by a scan; `following` is a valid frame after it, if any."""

    path: Path
    position: int
    reason: str
    torn: bool  # the bytes could be a cut-off write (and nothing valid follows)
    following: Frame | None
    file_size: int
    foreign: bool = False  # not a kraft-acl segment at all: never cut, never removed

    def describe(self) -> str:
        """The reason, plus why this is not a torn tail when a valid batch follows."""
        if self.following is None:
            return self.reason
        f = self.following
        return (
            f"{self.reason}; a valid batch (base offset {f.base_offset}) follows at byte position "
            f"{f.position}, so this is corruption in the middle of the log, not a torn tail"
        )


@dataclass(frozen=True, slots=True)
class Recovery:
    """What a writer's open cut from a torn tail: file, position, bytes removed and why."""

    path: Path
    position: int
    bytes_truncated: int
    reason: str
    removed_file: bool = False

    def __str__(self) -> str:
        action = "removed the segment" if self.removed_file else f"truncated at byte position {self.position}"
        cut = self.bytes_truncated
        return f"recovered the torn tail of {self.path}: {action}, cutting {cut} bytes ({self.reason})"


def repair_tail(damage: Damage, *, remove: bool) -> Recovery:
    """Truncate a torn tail at `damage.position` and fsync (or describe removing the whole file)."""
    if remove:
        return Recovery(damage.path, 0, damage.file_size, damage.reason, removed_file=True)
    fd = os.open(damage.path, os.O_WRONLY)
    try:
        os.ftruncate(fd, damage.position)
        os.fsync(fd)
    finally:
        os.close(fd)
    return Recovery(damage.path, damage.position, damage.file_size - damage.position, damage.reason)


def _open(path: Path, missing_ok: bool = False) -> BinaryIO:
    """Open a segment for reading; an OS error other than a missing file is named as what it is (EMFILE, EIO)."""
    try:
        return open(path, "rb", buffering=READ_BUFFER)
    except FileNotFoundError:
        if missing_ok:
            raise
        raise CorruptLogError(path, 0, "the segment file is missing") from None
    except OSError as exc:
        raise LogResourceError(path, exc, "open") from exc


def _damage(f: BinaryIO, path: Path, err: FrameError, size: int) -> Damage:
    following = find_frame_after(f, err.position) if err.torn else None
    return Damage(path, err.position, err.reason, err.torn and following is None, following, size, err.foreign)


def open_segment(
    path: Path, base_offset: int, interval: int, limit: int | None = None
) -> tuple[Segment | None, Damage | None]:
    """Scan a segment file: its header, then every frame below `limit` (the durable end, None: every whole one).

    The segment is None if its header is bad (or not kraft-acl's: `Damage.foreign`).
    """
    with _open(path) as f:
        size = os.fstat(f.fileno()).st_size
        try:
            header = read_segment_header_full(f)
        except FrameError as err:
            return None, _damage(f, path, err, size)
        try:
            schema = BatchSchema.from_json(header.schema_json)
        except ValueError as err:
            return None, Damage(path, 0, f"writer schema in the segment header: {err}", False, None, size)
        start = header.data_start
        segment = Segment(path, base_offset, schema, start, start, base_offset, log_id=header.log_id)
        return segment, scan_tail(segment, f, size, interval, limit)


def scan_tail(segment: Segment, f: BinaryIO, size: int, interval: int, limit: int | None = None) -> Damage | None:
    """Add the whole, valid frames in [segment.end, size) below `limit` to `segment`; return the damage that
    stopped it. Nothing at or beyond `limit` is read: a batch being written there is none of our business."""
    frames = iter_frames(f, segment.end, size, segment.next_offset)
    try:
        while limit is None or segment.next_offset < limit:
            frame = next(frames, None)
            if frame is None:
                break
            if limit is not None and frame.next_offset > limit:
                reason = f"batch {frame.base_offset}..{frame.next_offset - 1} crosses the durable end {limit}"
                return Damage(segment.path, frame.position, reason, False, None, size)
            segment.add(frame, interval)
    except FrameError as err:
        return _damage(f, segment.path, err, size)
    return None


def rescan_segment(segment: Segment, interval: int, limit: int | None = None, retries: int = 3) -> Damage | None:
    """Read-only follow: add frames a live writer made durable (below `limit`) since the last scan.

    A segment that shrank below what was read from it, or vanished, is a DivergenceError: this reader
    served batches the log no longer holds. Without a durable end (a log no writer of this version opened), a frame
    being written when we look is partial; if it completes and the writer appends more before
    `find_frame_after` runs, it looks like mid-log damage, so damage is re-read after a short pause.
    """
    damage: Damage | None = None
    for attempt in range(retries):
        try:
            with _open(segment.path, missing_ok=True) as f:
                size = os.fstat(f.fileno()).st_size
                if size < segment.end:
                    raise DivergenceError(
                        f"{segment.path} shrank to {size} bytes, below the {segment.end} bytes already read: the log "
                        f"no longer holds batches it served (up to offset {segment.next_offset})",
                        segment.next_offset,
                    )
                if size == segment.end or (limit is not None and segment.next_offset >= limit):
                    return None
                damage = scan_tail(segment, f, size, interval, limit)
        except FileNotFoundError as exc:
            raise DivergenceError(
                f"{segment.path} was removed: the log no longer holds batches it served", segment.base_offset
            ) from exc
        if damage is None or damage.torn:
            return damage
        time.sleep(0.02 * (attempt + 1))
    return damage


def frame_holding(segment: Segment, offset: int) -> Frame:
    """The committed frame of `segment` that holds `offset` (found from the sparse index; nothing is decoded)."""
    position, base = segment.locate(offset)
    with _open(segment.path) as f:
        try:
            for frame in iter_frames(f, position, segment.end, base):
                if frame.next_offset > offset:
                    return frame
        except FrameError as err:
            raise CorruptLogError(segment.path, err.position, f"committed batch is damaged: {err.reason}") from err
    raise CorruptLogError(segment.path, segment.end, f"no batch holds offset {offset}")


@dataclass(frozen=True, slots=True)
class ReadSpan:
    """A committed byte range of one segment to read: [start, end), whose first frame has `base_offset`."""

    path: Path
    schema: BatchSchema
    start: int
    base_offset: int
    end: int


def plan_read(segments: list[Segment], from_offset: int) -> list[ReadSpan]:
    """Snapshot what to read for `from_offset` (call under the owner's state lock).

    The first span starts at the sparse-index entry at or before `from_offset`; later segments are
    read whole, up to their committed end at this moment.
    """
    first = bisect.bisect_right([s.base_offset for s in segments], from_offset) - 1
    spans = []
    for i, segment in enumerate(segments[max(first, 0) :]):
        position, base = segment.locate(from_offset) if i == 0 else (segment.data_start, segment.base_offset)
        spans.append(ReadSpan(segment.path, segment.schema, position, base, segment.end))
    return spans


def read_spans(spans: list[ReadSpan], from_offset: int, codec: Codec) -> Iterator[RecordBatch]:
    """Yield the decoded batches of `spans`, skipping whole batches that end before `from_offset`."""
    for span in spans:
        with _open(span.path) as f:
            try:
                for frame in iter_frames(f, span.start, span.end, span.base_offset):
                    if frame.next_offset <= from_offset:
                        continue
                    yield decode_frame(codec, frame, span.schema, span.path)
            except FrameError as err:  # committed bytes changed under us: corruption, not a torn tail
                raise CorruptLogError(span.path, err.position, f"committed batch is damaged: {err.reason}") from err
            except OSError as exc:  # EIO and friends: the disk, not the log's bytes
                raise LogResourceError(span.path, exc) from exc
