"""`FileLog`: the embedded default `LogBackend`, an append-only directory of CRC-framed segment files.

Thread-safe for one writer and any number of readers in one process: `_append_lock` serializes
appends (write + fsync), `_state_lock` guards the committed state (segments, high-water mark),
which an append publishes only after its fsync; a `read` snapshots that state and reads the files
through its own handles, so it never sees a partial batch. Across processes, one writer holds
`<dir>/.lock` (waiting up to `lock_timeout_s` for it); after each fsync it publishes the durable
end in `<dir>/durable-end`, and read-only openers (no lock, never repair) stop there, so no reader
anywhere serves a batch before its fsync returned. Framing: `file_format`; directory layout:
`file_dir`; identity (a random id in `log-meta` and every segment header) and durable end:
`file_meta`; what segments must be: `file_layout`; which files are ours: `dir_files`; scans and
recovery: `file_segment`.

Opening as writer refuses a directory holding files kraft-acl did not write, then scans every
segment. A bad header or frame in the last segment that no valid batch follows, beyond the durable
end, is a torn tail (a write cut off by a crash): it is truncated, logged as a warning and described
in `recovery`; so is a last segment holding only its header (a roll cut short). A log found ending
below its durable end lost acknowledged batches: `LogLostDataError`, nothing is changed (`kraft-acl
log recover` decides). Any other bad bytes raise `CorruptLogError`: nothing is guessed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Self

from kraftacl.metadata_log.backend import AppendResult, LogBackend
from kraftacl.metadata_log.backends.file import directory as file_dir
from kraftacl.metadata_log.backends.file import layout as file_layout
from kraftacl.metadata_log.backends.file.dir_files import foreign_entries, foreign_reason, refuse_foreign
from kraftacl.metadata_log.backends.file.format import (
    FRAME_HEADER_SIZE,
    MAX_PAYLOAD_BYTES,
    encode_segment_header,
    frame_head,
    write_all,
)
from kraftacl.metadata_log.backends.file.meta import DurableEnd, LogMeta, read_meta, write_meta
from kraftacl.metadata_log.backends.file.segment import (
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
from kraftacl.metadata_log.backends.memory import check_records, now_ms
from kraftacl.metadata_log.codec import DEFAULT_CODEC, Codec
from kraftacl.metadata_log.errors import (
    CorruptLogError,
    DivergenceError,
    EncodeError,
    LogClosedError,
    LogError,
    LogIOError,
    LogLostDataError,
    OffsetOutOfRangeError,
    ReadOnlyLogError,
    os_reason,
)
from kraftacl.metadata_log.records import MetadataRecord, RecordBatch

log = logging.getLogger(__name__)

DEFAULT_SEGMENT_BYTES = 64 << 20
DEFAULT_INDEX_INTERVAL_BYTES = 4096
INT32_MAX = (1 << 31) - 1

__all__ = ["DEFAULT_SEGMENT_BYTES", "FileLog", "Recovery"]


class FileLog(LogBackend):
    """A log in `directory`; `segment_bytes` rolls segments, `codec` picks the writer schema.

    `lock_timeout_s`: how long a writer waits for another writer's lock. `recovering` (read-only
    only): read every whole batch, ignoring the durable end and not refusing a log that lost
    acknowledged batches (for `log check`, `log recover` and salvage).
    """

    def __init__(
        self,
        directory: Path | str,
        *,
        read_only: bool = False,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        codec: Codec | None = None,
        lock_timeout_s: float = 0.0,
        recovering: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.read_only = read_only
        self.recovery: Recovery | None = None
        self.meta: LogMeta | None = None
        self._recovering = recovering and read_only
        self._segment_bytes = segment_bytes
        self._interval = index_interval_bytes
        self._codec = DEFAULT_CODEC if codec is None else codec
        self._append_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._segments: list[Segment] = []
        self._hwm = 0
        self._fd: int | None = None
        self._lock: file_dir.WriterLock | None = None
        self._durable = DurableEnd(self.directory)
        self._failed: LogIOError | None = None
        self._closed = False
        self.epoch = 0
        try:
            if read_only:
                self._open_read_only()
            else:
                self._open_writer(lock_timeout_s)
        except OSError as exc:
            self.close()
            where = f" ({exc.filename})" if exc.filename else ""
            raise LogError(f"cannot open the log in {self.directory}: {os_reason(exc)}{where}") from exc
        except BaseException:
            self.close()
            raise

    def _open_read_only(self) -> None:
        if not self.directory.is_dir():
            raise LogError(f"log directory {self.directory} does not exist")
        self._refuse_not_a_log()
        self.epoch = file_dir.read_epoch(self.directory)
        self.meta = read_meta(self.directory)
        limit = self._durable_end()  # before listing segments: every one it counts on exists by then
        self._load(limit)
        self._check_not_lost(limit)

    def _refuse_not_a_log(self) -> None:
        """A reader given a directory that holds entries and none of them kraft-acl's (a mistyped --log-dir) fails
        naming them, rather than reading an empty log; an empty directory is an empty log, and a log with a
        stray file beside it is read (`log check` names the stray file)."""
        foreign = foreign_entries(self.directory)
        if foreign and len(foreign) == sum(1 for _ in os.scandir(self.directory)):
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise LogError(
                f"{self.directory} holds no kraft-acl metadata log: {shown}: "
                f"{foreign_reason(self.directory, foreign[0]).partition(':')[0]}"
            )

    def _open_writer(self, lock_timeout_s: float) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        refuse_foreign(self.directory)  # before the lock file: nothing is created or changed in such a directory
        self._lock = file_dir.WriterLock(self.directory, lock_timeout_s)
        self.meta = read_meta(self.directory)
        limit = self._durable_end()
        repairs = self._load(None)
        self._check_not_lost(limit)
        for segment, damage in repairs:
            self._repair(segment, damage)
        self._ensure_meta()
        last_epoch = max((s.last_epoch for s in self._segments), default=0)
        self.epoch = max(file_dir.read_epoch(self.directory), last_epoch) + 1
        if self.epoch > INT32_MAX:
            raise LogError(f"the writer epoch of {self.directory} would pass {INT32_MAX}: the log cannot take a writer")
        file_dir.write_epoch(self.directory, self.epoch)
        if self._segments:
            self._fd = os.open(self._segments[-1].path, os.O_WRONLY)
            os.fsync(self._fd)  # whole batches a killed writer left beyond the durable end are durable from here on
        self._durable.publish(self._hwm, self._log_id_bytes(), sync=True)

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else f"writer epoch {self.epoch}"
        return f"FileLog({str(self.directory)!r}, {mode}, high_watermark={self._hwm})"

    # -- identity ---------------------------------------------------------------------------------

    @property
    def log_id(self) -> str | None:
        """This log's identity (Kafka Uuid text), None for a log no writer of this version has opened."""
        return file_layout.log_id_of(self.meta, self._segments)

    @property
    def legacy(self) -> bool:
        """True when the log predates identities: its format-1 segments and id-less snapshots are its own."""
        return self.meta.legacy if self.meta is not None else True

    def _log_id_bytes(self) -> bytes:
        assert self.meta is not None
        return self.meta.log_id_bytes

    def _ensure_meta(self) -> None:
        """Writer: give a log without `log-meta` its identity (new, or that of its format-2 segments)."""
        if self.meta is None:
            self.meta = file_layout.new_meta(self._segments, self._hwm)
            write_meta(self.directory, self.meta)
            if self._segments:
                log.warning("%s had no log-meta: its identity is now %s", self.directory, self.meta.log_id)

    def durable_end(self) -> int | None:
        """The durable end the writer last published (None: none yet); below it every batch is fsynced."""
        found = self._durable.read()
        return None if found is None else found[0]

    def _durable_end(self) -> int | None:
        """The read limit: the published durable end (None for `recovering` or when no writer published one)."""
        return None if self._recovering else self._durable.read_for(self.meta)

    def _check_not_lost(self, durable_end: int | None) -> None:
        if durable_end is not None and self._hwm < durable_end:
            raise LogLostDataError(
                self.directory, self._hwm, durable_end, f"its durable-end file ({self._durable.path})"
            )

    # -- opening and recovery -------------------------------------------------------------------

    def _load(self, limit: int | None) -> list[tuple[Segment | None, Damage]]:
        """Scan every segment (frames below `limit`); return the torn tail repairs a writer may make."""
        repairs: list[tuple[Segment | None, Damage]] = []
        found = file_dir.list_segments(self.directory)
        for i, (base, path) in enumerate(found):
            is_last = i == len(found) - 1
            file_layout.check_position(
                path, base, self._segments[-1].next_offset if self._segments else None, self.meta
            )
            segment, damage = open_segment(path, base, self._interval, limit)
            legacy_reader = limit is None and self.read_only and not self._recovering
            if damage is not None and not damage.torn and is_last and legacy_reader and segment is not None:
                damage = rescan_segment(segment, self._interval)  # a live writer may be mid-append
            if damage is not None and (not is_last or not damage.torn):
                raise CorruptLogError(path, damage.position, file_layout.not_ours(damage))
            if segment is not None:
                file_layout.check_identity(segment, self.meta, self._segments)
            if segment is not None and segment.empty:  # only ever the last: a roll cut short, its file goes
                repairs.append((None, damage or file_layout.header_only(segment)))
            elif damage is not None:
                repairs.append((segment, damage))
            if segment is not None and not segment.empty:
                self._segments.append(segment)
        self._hwm = self._segments[-1].next_offset if self._segments else self._start_offset()
        return repairs

    def _start_offset(self) -> int:
        return self.meta.log_start_offset if self.meta is not None else 0

    def _repair(self, segment: Segment | None, damage: Damage) -> None:
        """Cut a torn tail back to the last whole batch (or remove a last segment that holds no whole batch)."""
        if segment is None:
            self._remove(damage.path)
        self.recovery = repair_tail(damage, remove=segment is None)
        log.warning("%s", self.recovery)

    def _remove(self, path: Path) -> None:
        path.unlink()
        file_dir.fsync_dir(self.directory)

    def _refresh(self) -> None:
        """Read-only: pick up whole batches (and segments) a writer made durable since the last look."""
        limit = self._durable_end()
        if limit is not None and limit < self._hwm:
            raise DivergenceError(
                f"the durable end of {self.directory} moved back to {limit}, below offset {self._hwm} this reader "
                "served: the log no longer holds those batches",
                limit,
            )
        if not self._segments:
            self._load(limit)
            self._check_not_lost(limit)
            return
        while True:
            last = self._segments[-1]
            damage = rescan_segment(last, self._interval, limit)
            if damage is not None and (limit is not None or not damage.torn):
                raise CorruptLogError(damage.path, damage.position, damage.describe())
            if damage is not None or (limit is not None and last.next_offset >= limit):
                break
            segment = self._open_next(last.next_offset, limit)
            if segment is None:
                break
            self._segments.append(segment)
        self._hwm = self._segments[-1].next_offset
        self._check_not_lost(limit)

    def _open_next(self, base: int, limit: int | None) -> Segment | None:
        """The segment the writer rolled to at `base`, once it holds a whole durable batch."""
        path = file_dir.segment_path(self.directory, base)
        if not path.exists():
            return None
        segment, damage = open_segment(path, base, self._interval, limit)
        if segment is not None and damage is not None and not damage.torn and limit is None:
            damage = rescan_segment(segment, self._interval)
        if damage is not None and (damage.foreign or not damage.torn or limit is not None):
            raise CorruptLogError(path, damage.position, file_layout.not_ours(damage))
        if segment is None or segment.empty:
            return None
        file_layout.check_identity(segment, self.meta, self._segments)
        return segment

    # -- the LogBackend interface -----------------------------------------------------------------

    def append(self, records: Sequence[MetadataRecord], *, timestamp_ms: int | None = None) -> AppendResult:
        batch = check_records(records)
        ts = now_ms() if timestamp_ms is None else timestamp_ms
        # in pieces: a 200k-record batch is never joined into one 20 MB object (each copy or free of it is a
        # single C call of several ms, which the event loop answering decisions would wait for)
        pieces = self._codec.encode_pieces(batch)
        size = sum(map(len, pieces))
        if size > MAX_PAYLOAD_BYTES:
            raise EncodeError(None, f"the batch payload of {size} bytes exceeds {MAX_PAYLOAD_BYTES}")
        with self._append_lock:
            self._check_writable()
            base = self._hwm
            frame = [frame_head(base, len(batch), self.epoch, ts, pieces), *pieces]
            current = self._segments[-1] if self._segments else None
            path = self.directory
            try:
                if current is None or self._must_roll(current, FRAME_HEADER_SIZE + size):
                    path = file_dir.segment_path(self.directory, base)
                    segment = self._roll(base, frame)
                else:
                    path, segment = current.path, current
                    self._write_at(segment, frame)
                path = self._durable.path
                self._durable.publish(base + len(batch), self._log_id_bytes())  # after the fsync: readers may go on
            except OSError as exc:
                self._failed = LogIOError(path, os_reason(exc))
                raise self._failed from exc
            with self._state_lock:  # publish: readers see the batch from here on
                if segment is not current:
                    self._segments.append(segment)
                segment.add_at(segment.end, FRAME_HEADER_SIZE + size, base, len(batch), self.epoch, self._interval)
                self._hwm = base + len(batch)
        return AppendResult(base, base + len(batch) - 1, self.epoch)

    @property
    def write_error(self) -> LogIOError | None:
        """Why appends are refused (a failed write or sync) until `reopen` succeeds; None while writable."""
        return self._failed

    def reopen(self) -> None:
        """After a failed append (disk full, I/O error): read the directory again up to the durable end, cut
        what the failed append left beyond it, publish the end again, and take appends again. Raises
        LogIOError (and stays failed) while the cause remains; a no-op on a healthy writer."""
        with self._append_lock, self._state_lock:
            self._check_open()
            if self.read_only or self._failed is None:
                return
            path = self.directory
            try:
                limit = self._durable_end()
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                self._segments = []
                self._load(limit)
                kept = {segment.path for segment in self._segments}
                for _, seg_path in file_dir.list_segments(self.directory):
                    if seg_path not in kept:
                        path = seg_path
                        self._remove(seg_path)  # rolled by the failed append: none of its batches is durable
                self._check_not_lost(limit)
                if self._segments:
                    last = self._segments[-1]
                    path = last.path
                    self._fd = os.open(last.path, os.O_WRONLY)
                    os.ftruncate(self._fd, last.end)  # bytes of the failed append beyond the durable end
                    os.fsync(self._fd)
                path = self._durable.path
                self._durable.publish(self._hwm, self._log_id_bytes(), sync=True)
            except OSError as exc:
                self._failed = LogIOError(path, os_reason(exc))
                raise self._failed from exc
            self._failed = None

    def _must_roll(self, segment: Segment, frame_size: int) -> bool:
        too_big = segment.end + frame_size > self._segment_bytes
        return not segment.empty and (too_big or not segment.schema.same_as(self._codec.writer_schema))

    def _write_at(self, segment: Segment, frame: list[bytes]) -> None:
        assert self._fd is not None
        try:
            write_all(self._fd, frame, segment.end)
            os.fsync(self._fd)
        except OSError:
            with contextlib.suppress(OSError):  # leave no partial frame; if this fails, reopen recovers
                os.ftruncate(self._fd, segment.end)
            raise

    def _roll(self, base: int, frame: list[bytes]) -> Segment:
        """Create the segment for `base`: header + first frame, fsync the file, then the directory."""
        path = file_dir.segment_path(self.directory, base)
        schema = self._codec.writer_schema
        header = encode_segment_header(schema.json_text, self._log_id_bytes())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            write_all(fd, [header, *frame], 0)
            os.fsync(fd)
            file_dir.fsync_dir(self.directory)
        except OSError:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        if self._fd is not None:
            os.close(self._fd)
        self._fd = fd
        return Segment(path, base, schema, len(header), len(header), base, log_id=self._log_id_bytes())

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
            self._durable.close()
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
