"""Whether a log directory is one consistent history: its segments, frames, identity, durable end and snapshots.

`check_history` builds an immutable-by-convention report from one read-only pass (no lock, nothing
changed), so it runs next to a live writer. The segment side is `metadata_log.backends.file.check`;
this adds every snapshot file checked against that log (`snapshots.binding`), and `to_json`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kraftacl.metadata_log.backends.file.check import DirScan, Finding, scan_directory
from kraftacl.metadata_log.backends.file.dir_files import is_kafka_file, is_own_snapshot
from kraftacl.snapshots.errors import SnapshotNameError
from kraftacl.snapshots.naming import SUFFIX, parse_name
from kraftacl.snapshots.store import SnapshotStore

USABLE = "usable"


@dataclass(frozen=True, slots=True)
class SnapshotRow:
    """One snapshot file: its id (from the name), what it holds, and whether this log may use it."""

    file: str
    end_offset: int | None
    epoch: int | None
    records: int | None
    status: str  # "usable", or a binding.Problem value, or "foreign" (not a kraft-acl snapshot)
    reason: str | None


class ScanView:
    """A scanned log directory as a `binding.LogView` (its consistent prefix)."""

    def __init__(self, scan: DirScan) -> None:
        self.scan = scan

    @property
    def log_id(self) -> str | None:
        return self.scan.log_id

    @property
    def legacy(self) -> bool:
        return self.scan.legacy

    def log_start_offset(self) -> int:
        return self.scan.log_start_offset

    def high_watermark(self) -> int:
        return self.scan.high_watermark

    def batch_below(self, end_offset: int) -> tuple[int, int, int]:
        return self.scan.batch_below(end_offset)


@dataclass
class HistoryReport:
    """The scan of the directory plus a row per snapshot file; `consistent` when nothing is a problem."""

    scan: DirScan
    snapshots: list[SnapshotRow]

    @property
    def problems(self) -> list[Finding]:
        """Everything that breaks the one history (segments, identity, durable end, snapshots), in that order."""
        rows = [Finding(r.file, f"{r.status}: {r.reason}") for r in self.snapshots if r.status != USABLE]
        return self.scan.problems + [r for r in rows if r.where not in self.scan.foreign]

    @property
    def consistent(self) -> bool:
        """True when the directory is one consistent history (warnings allowed)."""
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """The whole report as plain JSON values."""
        s = self.scan
        return {
            "log_dir": str(s.directory),
            "consistent": self.consistent,
            "log_id": s.log_id,
            "legacy": s.legacy,
            "log_start_offset": s.log_start_offset,
            "high_watermark": s.high_watermark,
            "durable_end": s.durable_end,
            "segments": [asdict(r) for r in s.segments],
            "snapshots": [asdict(r) for r in self.snapshots],
            "foreign_files": s.foreign,
            "problems": [asdict(f) for f in self.problems],
            "warnings": [asdict(f) for f in s.warnings],
        }


def check_history(directory: Path) -> HistoryReport:
    """Scan `directory` (read-only) and check every `.checkpoint` file in it against the log found."""
    scan = scan_directory(directory)
    store = SnapshotStore(directory)
    view = ScanView(scan)
    rows = []
    for path in sorted(p for p in directory.iterdir() if p.name.endswith(SUFFIX) and p.is_file()):
        try:
            snapshot = parse_name(path)
        except SnapshotNameError:
            rows.append(SnapshotRow(path.name, None, None, None, "foreign", "not a snapshot file name"))
            continue
        if not is_own_snapshot(path):
            kafka = " (Apache Kafka's own KRaft snapshot)" if is_kafka_file(path) else ""
            why = f"not a kraft-acl snapshot{kafka}"
            rows.append(SnapshotRow(path.name, snapshot.end_offset, snapshot.epoch, None, "foreign", why))
            continue
        problem = store.check(snapshot, view)
        status, reason = (USABLE, None) if problem is None else (problem.problem.value, problem.reason)
        records = store.records(snapshot)
        rows.append(SnapshotRow(path.name, snapshot.end_offset, snapshot.epoch, records, status, reason))
    rows.sort(key=lambda r: (r.end_offset is not None, r.end_offset or 0, r.epoch or 0, r.file))
    return HistoryReport(scan, rows)
