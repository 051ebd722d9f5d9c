"""`kraft-acl log check` on Apache Kafka's own KRaft metadata: every segment's batches read and decoded as the rest
of the CLI reads them (CRC-32C, batch framing, records), offsets contiguous within and across segments, every
`.checkpoint` snapshot whole (header, footer, every CRC), and the log start covered by a snapshot.

Read-only and stateless: each call opens the files, reads them and closes them; the report is a frozen value.
Where the rest of the CLI stops at the first damage, the check goes on and lists every problem it finds (each
segment is read up to its first damaged batch; the next segment is read on its own).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kraftacl.metadata_log.backends.file.check import Finding  # the same fact type `log check` reports for its own logs
from kraftacl.metadata_log.errors import CorruptLogError
from kraftacl.metadata_log.kafka_files.batches import TornTail
from kraftacl.metadata_log.kafka_files.files import KafkaMetadataFiles, SnapshotFile
from kraftacl.metadata_log.kafka_files.reader import decode_batch, file_batches, read_snapshot

KIND = "Apache Kafka's own KRaft metadata"


@dataclass(frozen=True, slots=True)
class SegmentRow:
    """One `.log` segment as read: its offsets (`next_offset == base_offset` when it holds no whole batch)."""

    file: str
    base_offset: int
    next_offset: int
    batches: int
    records: int


@dataclass(frozen=True, slots=True)
class SnapshotRow:
    """One `.checkpoint`: whole and readable (`valid`) with its record count, or what is damaged."""

    file: str
    end_offset: int
    epoch: int
    valid: bool
    records: int | None
    error: str | None


@dataclass(frozen=True)
class KafkaCheck:
    """What `log check` found in Kafka's files; `consistent` when there is no problem (warnings are allowed)."""

    directory: str
    segments: list[SegmentRow]
    snapshots: list[SnapshotRow]
    problems: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.problems

    @property
    def log_start(self) -> int:
        return self.segments[0].base_offset if self.segments else 0

    @property
    def end(self) -> int:
        """The offset after the last whole batch (0 for a log without a batch)."""
        return self.segments[-1].next_offset if self.segments else 0

    def to_json(self) -> dict[str, object]:
        """The report as `log check -o json` prints it."""
        return {
            "kind": "kafka",
            "directory": self.directory,
            "log_start": self.log_start,
            "end": self.end,
            "segments": [asdict(s) for s in self.segments],
            "snapshots": [asdict(s) for s in self.snapshots],
            "problems": [asdict(f) for f in self.problems],
            "warnings": [asdict(f) for f in self.warnings],
            "consistent": self.consistent,
        }


def check_kafka(files: KafkaMetadataFiles) -> KafkaCheck:
    """Check every segment and snapshot of Kafka's metadata at `files` (see the module's docstring)."""
    report = KafkaCheck(str(files.directory), [], [])
    expected: int | None = None
    for number, (base, path) in enumerate(files.segments):
        last = number + 1 == len(files.segments)
        torn: list[TornTail] = []
        batches = records = 0
        next_offset = base
        try:
            for batch in file_batches(path, torn if last else None):
                if expected is not None and batch.base_offset != expected:
                    what = "gap" if batch.base_offset > expected else "overlap"
                    report.problems.append(
                        Finding(
                            f"{path.name} byte {batch.position}",
                            f"{what}: expected a batch at offset {expected}, found {batch.base_offset}",
                        )
                    )
                elif expected is None and batch.base_offset != base:
                    report.problems.append(
                        Finding(
                            f"{path.name} byte {batch.position}",
                            f"the segment's name says base offset {base}, its first batch is at {batch.base_offset}",
                        )
                    )
                records += len(decode_batch(batch).entries)
                batches += 1
                expected = next_offset = batch.next_offset
        except CorruptLogError as exc:
            report.problems.append(Finding(f"{path.name} byte {exc.position}", exc.reason))
            expected = None  # the next segment is read on its own; its first batch is not compared
        for tail in torn:
            report.warnings.append(
                Finding(
                    f"{path.name} byte {tail.position}",
                    f"{tail.size} bytes of an unfinished batch at the end of the newest segment (a running broker "
                    "may be writing it; readers stop before it)",
                )
            )
        report.segments.append(SegmentRow(path.name, base, next_offset, batches, records))
    for snapshot in files.snapshots:
        report.snapshots.append(_snapshot_row(snapshot))
    _check_coverage(report)
    return report


def _snapshot_row(snapshot: SnapshotFile) -> SnapshotRow:
    name = snapshot.path.name
    try:
        whole = read_snapshot(snapshot)
    except CorruptLogError as exc:
        return SnapshotRow(name, snapshot.end_offset, snapshot.epoch, False, None, f"byte {exc.position}: {exc.reason}")
    return SnapshotRow(name, snapshot.end_offset, snapshot.epoch, True, whole.record_count, None)


def _check_coverage(report: KafkaCheck) -> None:
    """The offsets below the log start survive only in a snapshot: one must end at or after it (Kafka deletes a
    segment only once a snapshot covers it); a damaged snapshot is a problem, one beyond the log a warning."""
    for row in report.snapshots:
        if not row.valid:
            report.problems.append(Finding(row.file, f"damaged snapshot: {row.error}"))
        elif report.segments and row.end_offset > report.end:
            report.warnings.append(
                Finding(row.file, f"ends at offset {row.end_offset}, beyond the log's last batch (end {report.end})")
            )
    if report.log_start > 0 and not any(r.valid and r.end_offset >= report.log_start for r in report.snapshots):
        report.problems.append(
            Finding(
                report.segments[0].file,
                f"the log starts at offset {report.log_start} and no whole snapshot ends at or after it: the state "
                f"below offset {report.log_start} is lost",
            )
        )
