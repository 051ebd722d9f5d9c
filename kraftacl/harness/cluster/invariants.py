"""What a chaos run must never show, checked against the metadata log itself (read back whole from Kafka after the
run): an acknowledged ACL change that is not in the log, an ACL added twice while live (a retried write applied
twice), a batch written under an older writer epoch after a newer one (a fenced writer that reached the log), and
an ALLOW that no state of the log at a batch boundary within the propagation window gives.

When is a state current? A batch's timestamp is taken by the controller just before it appends, and the batch is
visible to readers only once its transaction commits (a commit under way when a partition leader dies completes
seconds later, on the new leader). So the state before a revoke stays legitimately current until the revoke was
acknowledged to its client (DeleteAcls returns only after the commit), and the propagation window runs from that
acknowledgement: an ALLOW more than `window_s` after it is wrong.

Pure functions over immutable values, except `read_log`, which opens a reader on the topic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from kraftacl.authorizer.state.records import acl_from_record
from kraftacl.harness.cluster.churn import Change
from kraftacl.harness.cluster.kafka_clients import Acl, Outcome
from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLog, KafkaLogConfig
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord

Key = tuple[str, str, str, str]  # principal, operation, resource type, resource name (ALLOW, LITERAL, any host)


def key_of(acl: Acl) -> Key:
    return (acl.principal, acl.operation, acl.resource_type, acl.topic)


@dataclass(frozen=True, slots=True)
class LoggedBatch:
    """One batch as the log holds it: offsets, writer epoch, append time (seconds) and the keys it added/removed."""

    base: int
    last: int
    epoch: int
    timestamp: float
    added: tuple[tuple[str, Key], ...]
    removed: tuple[str, ...]


def read_log(config: KafkaLogConfig) -> list[LoggedBatch]:
    """Every batch of the topic, in order."""
    out = []
    with KafkaLog(config) as log:
        for batch in log.read(log.log_start_offset()):
            added, removed = [], []
            for record in batch.records:
                if isinstance(record, AccessControlEntryRecord):
                    acl = acl_from_record(record)
                    added.append(
                        (record.id, (acl.principal, acl.operation.name, acl.resource_type.name, acl.resource_name))
                    )
                elif isinstance(record, RemoveAccessControlEntryRecord):
                    removed.append(record.id)
            ts = batch.timestamp_ms / 1000
            out.append(LoggedBatch(batch.base_offset, batch.last_offset, batch.epoch, ts, tuple(added), tuple(removed)))
    return out


@dataclass
class Verdict:
    """Every violation found (empty lists: none), and what the run needed of the propagation window."""

    acknowledged_lost: list[str] = field(default_factory=list)
    applied_twice: list[str] = field(default_factory=list)
    epoch_regressions: list[str] = field(default_factory=list)
    wrong_allows: list[str] = field(default_factory=list)
    never_logged_violations: list[str] = field(default_factory=list)
    max_staleness_s: float = 0.0  # the longest an ALLOW still followed a state older than the newest at its time
    batches: int = 0


def history(batches: Sequence[LoggedBatch], verdict: Verdict) -> dict[Key, list[tuple[float, bool]]]:
    """Per key, (batch time, present after the batch) at every change of presence; records duplicate adds and
    epoch regressions in `verdict`."""
    live: dict[str, Key] = {}
    count: dict[Key, int] = {}
    changes: dict[Key, list[tuple[float, bool]]] = {}
    newest = 0
    for batch in batches:
        if batch.epoch < newest:
            verdict.epoch_regressions.append(
                f"batch at offset {batch.base} has epoch {batch.epoch} after epoch {newest}"
            )
        newest = max(newest, batch.epoch)
        for acl_id in batch.removed:
            key = live.pop(acl_id, None)
            if key is not None:
                count[key] -= 1
                if count[key] == 0:
                    changes.setdefault(key, []).append((batch.timestamp, False))
        for acl_id, key in batch.added:
            if count.get(key, 0) > 0:
                verdict.applied_twice.append(f"{key} added again at offset {batch.base} while live")
            live[acl_id] = key
            count[key] = count.get(key, 0) + 1
            if count[key] == 1:
                changes.setdefault(key, []).append((batch.timestamp, True))
    return changes


def present_at(changes: list[tuple[float, bool]], moment: float) -> bool:
    """Whether the key was present in the newest state appended at or before `moment`."""
    state = False
    for at, present in changes:
        if at > moment:
            break
        state = present
    return state


def check(
    batches: Sequence[LoggedBatch],
    changes: Sequence[Change],
    toggle: Acl,
    toggle_allows: Sequence[Outcome],
    window_s: float,
    never: Sequence[Acl] = (),
) -> Verdict:
    """Every invariant (the module docstring) over the log, the acknowledged changes and the toggle's ALLOWs."""
    verdict = Verdict(batches=len(batches))
    by_key = history(batches, verdict)
    for change in changes:
        wanted = change.op == "create"
        if present_at(by_key.get(key_of(change.acl), []), change.acked) != wanted:
            verdict.acknowledged_lost.append(f"{change.op} {change.acl} acknowledged at {change.acked:.3f}")
    for acl in never:
        if key_of(acl) in by_key:
            verdict.never_logged_violations.append(f"{acl} reached the log")
    revokes = [(c.started, c.acked) for c in changes if c.op == "delete" and key_of(c.acl) == key_of(toggle)]
    intervals = [
        (granted, _acknowledged(revoked, revokes)) for granted, revoked in _intervals(by_key.get(key_of(toggle), []))
    ]
    for outcome in toggle_allows:
        staleness = _staleness(intervals, outcome.sent, outcome.done)
        verdict.max_staleness_s = max(verdict.max_staleness_s, staleness if math.isfinite(staleness) else 0.0)
        if staleness > window_s:
            verdict.wrong_allows.append(
                f"{toggle.principal} {toggle.operation} {toggle.topic} allowed at {outcome.sent:.3f}.."
                f"{outcome.done:.3f} (no state allowed it within {window_s}s: {staleness:.3f}s)"
            )
    return verdict


def _intervals(changes: list[tuple[float, bool]]) -> list[tuple[float, float]]:
    """[granted, revoked) spans of a key (revoked = inf while still granted)."""
    spans: list[tuple[float, float]] = []
    start: float | None = None
    for at, present in changes:
        if present and start is None:
            start = at
        elif not present and start is not None:
            spans.append((start, at))
            start = None
    if start is not None:
        spans.append((start, math.inf))
    return spans


def _acknowledged(revoked: float, revokes: list[tuple[float, float]]) -> float:
    """When the revoke whose batch was timestamped `revoked` was acknowledged (its batch time if no change matches:
    the stricter bound)."""
    for started, acked in revokes:
        if started <= revoked <= acked:
            return acked
    return revoked


def _staleness(spans: list[tuple[float, float]], sent: float, done: float) -> float:
    """0 when some state current during [sent, done] grants; else how long before `sent` the last grant ended
    (inf when none had begun by `done`)."""
    best = math.inf
    for granted, revoked in spans:
        if granted > done:
            break
        if revoked >= sent:
            return 0.0
        best = min(best, sent - revoked)
    return best
