"""`kraft-acl log check` and `kraft-acl log recover`: is a log directory one consistent history, and continuing
one that lost acknowledged batches.

Stateless; `check` opens nothing for writing, `recover` holds the writer lock while it runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Protocol, TypeVar

import typer

from kraftacl.authorizer.state.recovery import RecoveryOutcome, RecoveryRefused, recover
from kraftacl.cli.errors import EXIT_FAILED, fail
from kraftacl.cli.kafka_files import kafka_files
from kraftacl.cli.log_state import check_log_dir, library_errors
from kraftacl.cli.output import Output, OutputOpt, output_option
from kraftacl.metadata_log.backends.file.check import Finding
from kraftacl.metadata_log.kafka_files.check import KIND, KafkaCheck, check_kafka
from kraftacl.snapshots.history import USABLE, HistoryReport, check_history

LogDir = Annotated[
    Path, typer.Option("--log-dir", metavar="DIR", help="the metadata log directory (segments, snapshots)")
]
LockTimeout = Annotated[
    float, typer.Option("--lock-timeout", metavar="SECONDS", help="how long to wait for another writer's lock")
]
SHOWN_SEGMENTS = 6  # the first and last three; every segment with a problem is shown too


def check_command(log_dir: LogDir, output: OutputOpt = Output.table) -> None:
    """Whether the segments, their batches, the log identity, the durable end and the snapshots form one
    consistent history, and exactly where not (exit 1). Read-only: works next to a running writer.

    Apache Kafka's own KRaft metadata (a metadata.log.dir or `__cluster_metadata-0`) is checked as the other
    commands read it: every batch's CRC-32C and records, offsets contiguous across segments, every snapshot
    whole, the log start covered by a snapshot. The first line says which kind of log was checked.

    \b
    Example:
      kraft-acl log check --log-dir data/meta
      kraft-acl log check --log-dir /var/lib/kafka/meta -o json
    """
    check_log_dir(log_dir)
    kafka = kafka_files(log_dir)
    if kafka is not None:
        with library_errors():
            found = check_kafka(kafka)
        if output.is_json:
            typer.echo(json.dumps(found.to_json()))
        else:
            typer.echo("\n".join(_kafka_lines(log_dir, found)))
        if not found.consistent:
            raise typer.Exit(EXIT_FAILED)
        return
    with library_errors():
        report = check_history(log_dir)
    if output.is_json:
        typer.echo(json.dumps({"kind": "kraft-acl", **report.to_json()}))
    else:
        typer.echo("\n".join(_check_lines(report)))
    if not report.consistent:
        raise typer.Exit(EXIT_FAILED)


def _check_lines(report: HistoryReport) -> list[str]:
    s = report.scan
    identity = f"{s.log_id}{' (legacy: predates log identities)' if s.legacy else ''}" if s.log_id else "none"
    durable = "none" if s.durable_end is None else str(s.durable_end)
    lines = [
        f"Log directory: {s.directory} (kraft-acl's embedded log)",
        f"Log id: {identity}",
        f"Offsets: log start {s.log_start_offset}, end {s.high_watermark}, durable end {durable}",
        f"Segments: {len(s.segments)}",
    ]
    lines += _segments(
        s.segments, lambda seg: f"{seg.batches} batches, format {seg.format}", lambda seg: seg.problem is not None
    )
    usable = sum(r.status == USABLE for r in report.snapshots)
    lines.append(f"Snapshots: {len(report.snapshots)} ({usable} usable)")
    for row in report.snapshots:
        state = f"usable, {row.records} records" if row.status == USABLE else f"{row.status.upper()}: {row.reason}"
        lines.append(f"  {row.file}  {state}")
    lines += _findings(report.problems, s.warnings)
    if report.consistent:
        held = f"offsets {s.log_start_offset}..{s.high_watermark - 1}" if s.high_watermark > s.log_start_offset else ""
        lines.append(f"OK: one consistent history{', ' if held else ''}{held or ' (no batch yet)'}")
    else:
        lines.append(f"NOT one consistent history: {len(report.problems)} problem(s); see docs/cli.md 'log check'")
    return lines


def _kafka_lines(log_dir: Path, k: KafkaCheck) -> list[str]:
    lines = [
        f"Log directory: {log_dir} ({KIND}, read-only: {k.directory})",
        f"Offsets: log start {k.log_start}, end {k.end}",
        f"Segments: {len(k.segments)}",
    ]
    lines += _segments(k.segments, lambda seg: f"{seg.batches} batches, {seg.records} records", lambda seg: False)
    lines.append(f"Snapshots: {len(k.snapshots)} ({sum(s.valid for s in k.snapshots)} valid)")
    for snap in k.snapshots:
        state = f"valid, {snap.records} records" if snap.valid else f"DAMAGED: {snap.error}"
        lines.append(f"  {snap.file}  {state}")
    lines += _findings(k.problems, k.warnings)
    if k.consistent:
        held = f"offsets {k.log_start}..{k.end - 1}" if k.end > k.log_start else "no batch yet"
        lines.append(f"OK: one consistent history of Kafka's metadata, {held}")
    else:
        lines.append(f"NOT one consistent history: {len(k.problems)} problem(s) in Kafka's metadata files")
    return lines


class _Segment(Protocol):
    """A segment row of either report (kraft-acl's scan, Kafka's check), as the listing reads it."""

    @property
    def file(self) -> str: ...

    @property
    def base_offset(self) -> int: ...

    @property
    def next_offset(self) -> int: ...


S = TypeVar("S", bound=_Segment)


def _segments(segments: Sequence[S], detail: Callable[[S], str], faulty: Callable[[S], bool]) -> list[str]:
    """One line per segment: the first and last three, every faulty one, and how many more between them."""
    lines = []
    for i, seg in enumerate(segments):
        edge = i < SHOWN_SEGMENTS // 2 or i >= len(segments) - SHOWN_SEGMENTS // 2
        if edge or faulty(seg):
            span = f"offsets {seg.base_offset}..{seg.next_offset - 1}" if seg.next_offset > seg.base_offset else "empty"
            lines.append(f"  {seg.file}  {span}, {detail(seg)}")
        elif i == SHOWN_SEGMENTS // 2:
            lines.append(f"  ... {len(segments) - SHOWN_SEGMENTS} more")
    return lines


def _findings(problems: Sequence[Finding], warnings: Sequence[Finding]) -> list[str]:
    lines = []
    for title, findings in (("Problems", problems), ("Warnings", warnings)):
        if findings:
            lines.append(f"{title}: {len(findings)}")
            lines.extend(f"  {f.where}: {f.what}" for f in findings)
    return lines


def recover_command(
    log_dir: LogDir,
    accept_loss: Annotated[
        bool,
        typer.Option("--accept-loss", help="continue even when no snapshot holds the lost batches' changes"),
    ] = False,
    lock_timeout: LockTimeout = 5.0,
    output: Annotated[Output, output_option("table (what was done, in words) or json")] = Output.table,
) -> None:
    """Continue a log that lost acknowledged batches at the offset it had reached, from its newest known
    state; segments are moved to recovered-<offset>/, never deleted, and no offset is reused.

    \b
    Example:
      kraft-acl log recover --log-dir data/meta
    """
    check_log_dir(log_dir)
    try:
        with library_errors():
            outcome = recover(log_dir, accept_loss, lock_timeout)
    except RecoveryRefused as exc:
        fail(str(exc))
    if output.is_json:
        typer.echo(json.dumps(_outcome_json(outcome)))
        return
    typer.echo("\n".join(_recover_lines(log_dir, outcome)))


def _outcome_json(o: RecoveryOutcome) -> dict[str, object]:
    return {
        "log_end": o.log_end,
        "durable_end": o.durable_end,
        "snapshot_end": o.snapshot_end,
        "new_start": o.new_start,
        "state_from": o.state_from,
        "lost_effect": None if o.lost_effect is None else list(o.lost_effect),
        "snapshot_written": None if o.snapshot_written is None else str(o.snapshot_written),
        "archive": None if o.archive is None else str(o.archive),
        "moved": o.moved,
    }


def _recover_lines(log_dir: Path, o: RecoveryOutcome) -> list[str]:
    if o.new_start is None:
        return [f"Nothing to recover: the log in {log_dir} ends at offset {o.log_end} and lost no acknowledged batch"]
    lines = [f"The log ended at offset {o.log_end}; it had acknowledged batches up to offset {o.new_start}."]
    if o.lost_effect is not None:
        lines.append(f"The changes of batches [{o.lost_effect[0]}, {o.lost_effect[1]}) are lost (--accept-loss).")
    if o.snapshot_written is not None:
        lines.append(f"Wrote {o.snapshot_written.name}: the state from {o.state_from}.")
    else:
        lines.append(f"The state at offset {o.new_start} is in {o.state_from}.")
    if o.archive is not None:
        lines.append(f"Moved {len(o.moved)} segment(s) to {o.archive}.")
    lines.append(f"The log now starts at offset {o.new_start}: the next batch gets offset {o.new_start}.")
    return lines
