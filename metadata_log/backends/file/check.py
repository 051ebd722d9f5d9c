"""A read-only scan of a `FileLog` directory that reports everything it finds instead of stopping at the first fault.

The scan is a value built once by `scan_directory`; it opens no lock, changes nothing, and is safe
to run next to a live writer (what the writer appends while it runs may or may not be seen).

It checks what `FileLog` checks when it opens, but goes on past each fault so that `kraft-acl log
check` can say exactly where a directory stops being one consistent history:

    foreign files              files kraft-acl did not write (a writer refuses the directory)
    log-meta / durable-end     present, readable, naming one log id
    every segment              kraft-acl's magic, this log's id, starting where the log before it ends,
                               every frame whole and CRC-valid with contiguous offsets
    the end                    at or beyond the durable end (else acknowledged batches were lost);
                               a torn tail beyond it is a warning (the next writer cuts it)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kraftacl.metadata_log.backends.file import directory as file_dir
from kraftacl.metadata_log.backends.file.dir_files import foreign_entries, foreign_reason
from kraftacl.metadata_log.backends.file.meta import META_FILE, DurableEnd, LogMeta, read_meta
from kraftacl.metadata_log.backends.file.segment import Segment, frame_holding, open_segment
from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.uuids import uuid_to_text

INTERVAL = 4096


@dataclass(frozen=True, slots=True)
class Finding:
    """One fact about the directory: where (a file, or the directory) and what."""

    where: str
    what: str


@dataclass(frozen=True, slots=True)
class SegmentReport:
    """One segment as scanned: the offsets its whole batches hold, its format and log id, the fault if any."""

    file: str
    base_offset: int
    next_offset: int
    batches: int
    format: int | None
    log_id: str | None
    problem: str | None = None


@dataclass
class DirScan:
    """What `scan_directory` found; `problems` make the directory inconsistent, `warnings` do not."""

    directory: Path
    meta: LogMeta | None = None
    durable_end: int | None = None
    log_start_offset: int = 0
    high_watermark: int = 0
    segments: list[SegmentReport] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    _whole: list[Segment] = field(default_factory=list)  # the segments of the consistent prefix

    @property
    def log_id(self) -> str | None:
        """The log's identity: its log-meta's, else its first format-2 segment's."""
        if self.meta is not None:
            return self.meta.log_id
        return next((s.log_id for s in self.segments if s.log_id is not None), None)

    @property
    def legacy(self) -> bool:
        """True when the log predates identities (or has no log-meta)."""
        return self.meta is None or self.meta.legacy

    def problem(self, where: Path | str, what: str) -> None:
        self.problems.append(Finding(Path(where).name if isinstance(where, Path) else where, what))

    def warn(self, where: Path | str, what: str) -> None:
        self.warnings.append(Finding(Path(where).name if isinstance(where, Path) else where, what))

    def batch_below(self, end_offset: int) -> tuple[int, int, int]:
        """(base offset, next offset, epoch) of the batch holding `end_offset - 1`, within the consistent prefix."""
        for segment in reversed(self._whole):
            if segment.base_offset < end_offset <= segment.next_offset:
                frame = frame_holding(segment, end_offset - 1)
                return frame.base_offset, frame.next_offset, frame.epoch
        raise LogError(f"no whole batch of {self.directory} holds offset {end_offset - 1}")


def scan_directory(directory: Path) -> DirScan:
    """Scan a log directory completely (see the module docstring); never raises for what it finds."""
    scan = DirScan(directory)
    scan.foreign = foreign_entries(directory)
    for name in scan.foreign:
        scan.problem(name, foreign_reason(directory, name))
    try:
        scan.meta = read_meta(directory)
    except LogError as exc:
        scan.problem(META_FILE, str(exc))
    if scan.meta is None:
        scan.warn(META_FILE, "none: no writer that keeps log identities has opened this log yet")
    _read_durable_end(scan)
    scan.log_start_offset = scan.meta.log_start_offset if scan.meta is not None else 0
    _scan_segments(scan)
    if scan.durable_end is not None and scan.high_watermark < scan.durable_end:
        scan.problem(
            "log end",
            f"the log ends at offset {scan.high_watermark} but its durable end is {scan.durable_end}: "
            f"acknowledged batches [{scan.high_watermark}, {scan.durable_end}) were lost",
        )
    return scan


def _read_durable_end(scan: DirScan) -> None:
    try:
        found = DurableEnd(scan.directory).read()
    except LogError as exc:
        scan.problem("durable-end", str(exc))
        return
    if found is None:
        scan.warn("durable-end", "none: readers read every whole batch (no writer of this version yet)")
        return
    scan.durable_end, ident = found
    if scan.meta is not None and ident != scan.meta.log_id_bytes:
        scan.problem("durable-end", f"it names log {uuid_to_text(ident)}, not this log ({scan.meta.log_id})")


def _scan_segments(scan: DirScan) -> None:
    """Each segment on its own, in offset order; the consistent prefix ends at the first problem."""
    try:
        found = file_dir.list_segments(scan.directory)
    except LogError as exc:
        scan.problem("segments", str(exc))
        return
    expected: int | None = scan.log_start_offset if scan.meta is not None else None
    consistent = True
    for i, (base, path) in enumerate(found):
        is_last = i == len(found) - 1
        report, segment = _scan_one(scan, path, base, expected, is_last)
        scan.segments.append(report)
        if report.problem is not None:
            if path.name not in scan.foreign:  # a foreign file is one problem, said once (above)
                scan.problem(path, report.problem)
            consistent = False
        elif consistent and segment is not None and not segment.empty:
            scan._whole.append(segment)
        expected = report.next_offset
    if scan._whole:
        scan.log_start_offset = scan._whole[0].base_offset if scan.meta is None else scan.log_start_offset
        scan.high_watermark = scan._whole[-1].next_offset
    else:
        scan.high_watermark = scan.log_start_offset


def _scan_one(
    scan: DirScan, path: Path, base: int, expected: int | None, is_last: bool
) -> tuple[SegmentReport, Segment | None]:
    try:
        segment, damage = open_segment(path, base, INTERVAL)
    except LogError as exc:
        return SegmentReport(path.name, base, base, 0, None, None, str(exc)), None
    if segment is None:
        assert damage is not None
        torn = damage.torn and is_last and (scan.durable_end is None or base >= scan.durable_end)
        if torn:
            scan.warn(path, f"torn segment header ({damage.reason}): the next writer removes this file")
        return SegmentReport(path.name, base, base, 0, None, None, None if torn else damage.describe()), None
    report = SegmentReport(
        path.name,
        base,
        segment.next_offset,
        segment.batches,
        2 if segment.log_id is not None else 1,
        None if segment.log_id is None else uuid_to_text(segment.log_id),
        _position_problem(scan, base, expected) or _identity_problem(scan, segment),
    )
    if damage is not None:
        durable = scan.durable_end is None or segment.next_offset >= scan.durable_end
        if damage.torn and is_last and durable:
            scan.warn(path, f"torn tail at byte {damage.position} ({damage.reason}): the next writer cuts it")
        elif report.problem is None:
            report = _with_problem(report, damage.describe())
    elif segment.empty and is_last:
        scan.warn(path, "the segment holds only its header (a roll cut short): the next writer removes it")
    return report, segment


def _with_problem(report: SegmentReport, problem: str) -> SegmentReport:
    return SegmentReport(
        report.file, report.base_offset, report.next_offset, report.batches, report.format, report.log_id, problem
    )


def _position_problem(scan: DirScan, base: int, expected: int | None) -> str | None:
    if expected is None or base == expected:
        return None
    if not scan.segments and scan.meta is not None:
        return f"the log starts at offset {expected} (log-meta) but its first segment starts at {base}"
    return f"the segment starts at offset {base} but the log before it ends at {expected}"


def _identity_problem(scan: DirScan, segment: Segment) -> str | None:
    if segment.log_id is None:
        if scan.meta is not None and not scan.meta.legacy:
            return f"a format-1 segment (no log id) in log {scan.meta.log_id}"
        return None
    mine = scan.log_id
    theirs = uuid_to_text(segment.log_id)
    if mine is not None and theirs != mine:
        return f"the segment belongs to log {theirs}, not to this log ({mine})"
    return None
