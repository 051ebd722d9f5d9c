"""`FileLog`: the embedded default `LogBackend`, an append-only directory of CRC-framed segment files.

Thread-safe for one writer and any number of readers in one process: `_append_lock` serializes
appends (write + fsync), `_state_lock` guards the committed state (segments, high-water mark),
which an append publishes only after its fsync; a `read` snapshots that state and reads the files
through its own handles, so it never sees a partial batch. Across processes, one writer holds
`<dir>/.lock`; read-only openers take no lock, never repair, and follow the writer's appends up
to its last whole batch. Framing: `file_format`; directory layout: `file_dir`; recovery:
`file_segment`.

Opening as writer scans every segment. A bad header or frame in the last segment that no valid
batch follows is a torn tail (a write cut off by a crash): it is truncated, logged as a warning
and described in `recovery`. Any other bad bytes raise `CorruptLogError`: nothing is guessed.
A header-only segment left at the end (a roll cut short) is removed by a writer and ignored by a
reader, so every segment in use holds at least one batch.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Self

from metadata_log.backend import AppendResult, LogBackend
from metadata_log.backends import file_dir
from metadata_log.backends.file_format import (
    MAX_PAYLOAD_BYTES,
    Frame,
    encode_frame,
    encode_segment_header,
    write_all,
)
from metadata_log.backends.file_segment import (
    Damage,
    ReadSpan,
    Recovery,
    Segment,
    open_segment,
    plan_read,
    read_spans,
    repair_tail,
    rescan_segment,
)
from metadata_log.backends.memory import check_records, now_ms
from metadata_log.codec import DEFAULT_CODEC, Codec
from metadata_log.errors import (
    CorruptLogError,
    EncodeError,
    LogClosedError,
    LogError,
    LogIOError,
    OffsetOutOfRangeError,
    ReadOnlyLogError,
)
from metadata_log.records import MetadataRecord, RecordBatch

log = logging.getLogger(__name__)

DEFAULT_SEGMENT_BYTES = 64 << 20
DEFAULT_INDEX_INTERVAL_BYTES = 4096

__all__ = ["DEFAULT_SEGMENT_BYTES", "FileLog", "Recovery"]


class FileLog(LogBackend):
    """A log in `directory`; `segment_bytes` rolls segments, `codec` picks the writer schema."""

    def __init__(
        self,
        directory: Path | str,
        *,
        read_only: bool = False,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        codec: Codec | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.read_only = read_only
        self.recovery: Recovery | None = None
        self._segment_bytes = segment_bytes
        self._interval = index_interval_bytes
        self._codec = DEFAULT_CODEC if codec is None else codec
        self._append_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._segments: list[Segment] = []
        self._hwm = 0
        self._fd: int | None = None
        self._lock: file_dir.WriterLock | None = None
        self._failed: LogIOError | None = None
        self._closed = False
        self.epoch = 0
        try:
            if read_only:
                self._open_read_only()
            else:
                self._open_writer()
        except OSError as exc:
            self.close()
            raise LogError(f"cannot open the log in {self.directory}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def _open_read_only(self) -> None:
        if not self.directory.is_dir():
            raise LogError(f"log directory {self.directory} does not exist")
        self.epoch = file_dir.read_epoch(self.directory)
        self._load(repair=False)

    def _open_writer(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = file_dir.WriterLock(self.directory)
        self._load(repair=True)
        last_epoch = max((s.last_epoch for s in self._segments), default=0)
        self.epoch = max(file_dir.read_epoch(self.directory), last_epoch) + 1
        file_dir.write_epoch(self.directory, self.epoch)
        if self._segments:
            self._fd = os.open(self._segments[-1].path, os.O_WRONLY)

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else f"writer epoch {self.epoch}"
        return f"FileLog({str(self.directory)!r}, {mode}, high_watermark={self._hwm})"

    # -- opening and recovery -------------------------------------------------------------------

    def _load(self, *, repair: bool) -> None:
        found = file_dir.list_segments(self.directory)
        for i, (base, path) in enumerate(found):
            is_last = i == len(found) - 1
            if self._segments and base != self._segments[-1].next_offset:
                prev = self._segments[-1].next_offset
                raise CorruptLogError(path, 0, f"segment starts at offset {base} but the log before it ends at {prev}")
            segment, damage = open_segment(path, base, self._interval)
            if damage is not None and not damage.torn and is_last and not repair and segment is not None:
                damage = rescan_segment(segment, self._interval)  # a live writer may be mid-append
            if damage is not None and (not is_last or not damage.torn):
                raise CorruptLogError(path, damage.position, damage.describe())
            if damage is not None and repair:
                self._repair(segment, damage)
            if segment is not None and segment.empty:  # only ever the last: a roll cut short
                if repair:
                    self._remove(path)
                continue
            if segment is not None:
                self._segments.append(segment)
        self._hwm = self._segments[-1].next_offset if self._segments else 0

    def _repair(self, segment: Segment | None, damage: Damage) -> None:
        """Cut a torn tail back to the last whole batch (or remove a segment whose header is torn)."""
        if segment is None:
            self._remove(damage.path)
        self.recovery = repair_tail(damage, remove=segment is None)
        log.warning("%s", self.recovery)

    def _remove(self, path: Path) -> None:
        path.unlink()
        file_dir.fsync_dir(self.directory)

    def _refresh(self) -> None:
        """Read-only: pick up whole batches (and segments) a writer appended since the last look."""
        if not self._segments:
            self._load(repair=False)
            return
        while True:
            last = self._segments[-1]
            damage = rescan_segment(last, self._interval)
            nxt = file_dir.segment_path(self.directory, last.next_offset)
            if damage is None and nxt.exists():  # the writer rolled: `last` is complete
                segment, damage = open_segment(nxt, last.next_offset, self._interval)
                if segment is not None and damage is not None and not damage.torn:
                    damage = rescan_segment(segment, self._interval)
                if segment is not None and not segment.empty:
                    self._segments.append(segment)
            if damage is not None and not damage.torn:
                raise CorruptLogError(damage.path, damage.position, damage.describe())
            if self._segments[-1] is last:
                break
        self._hwm = self._segments[-1].next_offset

    # -- the LogBackend interface -----------------------------------------------------------------

    def append(self, records: Sequence[MetadataRecord], *, timestamp_ms: int | None = None) -> AppendResult:
        batch = check_records(records)
        ts = now_ms() if timestamp_ms is None else timestamp_ms
        payload = self._codec.encode(batch)
        if len(payload) > MAX_PAYLOAD_BYTES:
            raise EncodeError(None, f"the batch payload of {len(payload)} bytes exceeds {MAX_PAYLOAD_BYTES}")
        with self._append_lock:
            self._check_writable()
            base = self._hwm
            frame = encode_frame(base, len(batch), self.epoch, ts, payload)
            current = self._segments[-1] if self._segments else None
            try:
                if current is None or self._must_roll(current, len(frame)):
                    segment = self._roll(base, frame)
                else:
                    segment = current
                    self._write_at(segment, frame)
            except OSError as exc:
                self._failed = LogIOError(self._segments[-1].path if self._segments else self.directory, str(exc))
                raise self._failed from exc
            committed = Frame(segment.end, base, len(batch), self.epoch, ts, payload)
            with self._state_lock:  # publish: readers see the batch from here on
                if segment is not current:
                    self._segments.append(segment)
                segment.add(committed, self._interval)
                self._hwm = base + len(batch)
        return AppendResult(base, base + len(batch) - 1, self.epoch)

    def _must_roll(self, segment: Segment, frame_size: int) -> bool:
        too_big = segment.end + frame_size > self._segment_bytes
        return not segment.empty and (too_big or not segment.schema.same_as(self._codec.writer_schema))

    def _write_at(self, segment: Segment, frame: bytes) -> None:
        assert self._fd is not None
        try:
            write_all(self._fd, frame, segment.end)
            os.fsync(self._fd)
        except OSError:
            with contextlib.suppress(OSError):  # leave no partial frame; if this fails, reopen recovers
                os.ftruncate(self._fd, segment.end)
            raise

    def _roll(self, base: int, frame: bytes) -> Segment:
        """Create the segment for `base`: header + first frame, fsync the file, then the directory."""
        path = file_dir.segment_path(self.directory, base)
        schema = self._codec.writer_schema
        header = encode_segment_header(schema.json_text)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            write_all(fd, header + frame, 0)
            os.fsync(fd)
            file_dir.fsync_dir(self.directory)
        except OSError:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        if self._fd is not None:
            os.close(self._fd)
        self._fd = fd
        return Segment(path, base, schema, len(header), len(header), base)

    def read(self, from_offset: int = 0) -> Iterator[RecordBatch]:
        return read_spans(self.read_plan(from_offset), from_offset, self._codec)

    def high_watermark(self) -> int:
        with self._state_lock:
            self._look()
            return self._hwm

    def log_start_offset(self) -> int:
        with self._state_lock:
            self._look()
            return self._segments[0].base_offset if self._segments else self._hwm

    def read_plan(self, from_offset: int = 0) -> list[ReadSpan]:
        """The committed byte ranges `read(from_offset)` would read now, one per segment (for readers in other
        processes, e.g. the Spark jobs: each span reads with `read_spans` and needs nothing else of this log)."""
        with self._state_lock:
            self._look()
            start = self._segments[0].base_offset if self._segments else self._hwm
            if not start <= from_offset <= self._hwm:
                raise OffsetOutOfRangeError(from_offset, start, self._hwm)
            return plan_read(self._segments, from_offset) if from_offset < self._hwm else []

    def segment_paths(self) -> list[Path]:
        """The segment files the log holds, in offset order (for tools and tests)."""
        with self._state_lock:
            return [s.path for s in self._segments]

    def __enter__(self) -> Self:  # narrower than LogBackend's, so `with FileLog(...) as log` keeps the type
        return self

    def close(self) -> None:
        with self._append_lock, self._state_lock:
            if self._closed:
                return
            self._closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def _look(self) -> None:
        """Under the state lock: refuse if closed; a read-only log first picks up the writer's appends."""
        self._check_open()
        if self.read_only:
            self._refresh()

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(repr(self))

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise ReadOnlyLogError(repr(self))
        if self._failed is not None:
            raise self._failed
