"""`kraft-acl log recover`: continue a file log that lost acknowledged batches, never reusing an offset.

One call holds the directory's writer lock from its first look to its last change; not thread-safe.

A log lost batches when it ends (at L) below what it is known to have acknowledged: its durable
end (D) or a whole snapshot of its own (ending at S). Recovery continues the log at N = max(L, D, S):

    S == N      lossless: snapshot S holds the state at N (the lost batches' effect is in it)
    otherwise   only with `accept_loss`: the newest state still known (snapshot S if S > L, else
                the log replayed to L) is written as the snapshot at N, and the changes made by
                the batches in [max(L, S), N) are gone

Then every segment is moved to `recovered-<N>/` (kept for inspection, never deleted) and the log
starts at N (`file_recover.rebase`): the next batch gets offset N. A tailing node that applied a
lost batch sees the log change under it and reports a divergence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.state.image import AclsImage
from kraftacl.authorizer.state.node import AclNode
from kraftacl.metadata_log.backends.file import directory as file_dir
from kraftacl.metadata_log.backends.file.dir_files import refuse_foreign
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.backends.file.meta import LogMeta
from kraftacl.metadata_log.backends.file.recover import rebase
from kraftacl.metadata_log.uuids import new_uuid
from kraftacl.snapshots.format import SnapshotHeader
from kraftacl.snapshots.naming import SnapshotId


class RecoveryRefused(AuthorizerError):
    """Recovery would lose the effect of acknowledged batches and `accept_loss` was not given."""


@dataclass(frozen=True)
class RecoveryOutcome:
    """What `recover` found and did (`new_start` None: the log was whole, nothing changed)."""

    log_end: int
    durable_end: int | None
    snapshot_end: int | None
    new_start: int | None = None
    state_from: str | None = None  # the snapshot or log prefix the state at new_start comes from
    lost_effect: tuple[int, int] | None = None  # offsets whose changes are gone (accept_loss)
    snapshot_written: Path | None = None
    archive: Path | None = None
    moved: list[str] = field(default_factory=list)


def recover(directory: Path, accept_loss: bool = False, lock_timeout_s: float = 0.0) -> RecoveryOutcome:
    """Recover `directory` (see the module docstring); RecoveryRefused when it would need `accept_loss`."""
    refuse_foreign(directory)
    lock = file_dir.WriterLock(directory, lock_timeout_s)
    try:
        with FileLog(directory, read_only=True, recovering=True) as log:
            return _recover(directory, log, accept_loss)
    finally:
        lock.release()


def _recover(directory: Path, log: FileLog, accept_loss: bool) -> RecoveryOutcome:
    node = AclNode(log, snapshot_dir=directory, retain_snapshots=0)
    assert node.snapshots is not None
    end, durable = log.high_watermark(), log.durable_end()
    lost = node.snapshots.lost_evidence(log)
    snap = lost[0] if lost is not None else None
    found = RecoveryOutcome(end, durable, None if snap is None else snap.end_offset)
    new_start = max(end, durable or 0, found.snapshot_end or 0)
    if new_start == end:
        return found
    known = max(end, found.snapshot_end or 0)
    if known < new_start and not accept_loss:
        raise RecoveryRefused(
            f"the log in {directory} ends at offset {end} and acknowledged batches up to offset {new_start}; "
            f"no snapshot holds the state after offset {known}, so the changes of batches [{known}, {new_start}) "
            f"are lost. Run again with --accept-loss to continue at offset {new_start} from the state at "
            f"offset {known} (nothing was changed)"
        )
    written = None
    if snap is not None and snap.end_offset == new_start:
        state_from = snap.file_name()
    else:
        image, state_from = _known_state(node, snap, end)
        written = _write_state(node, image, new_start, log.log_id)
    meta = log.meta if log.meta is not None else LogMeta(log.log_id or new_uuid(), log.log_start_offset(), True)
    archive, moved = rebase(directory, new_start, meta)
    lost_effect = (known, new_start) if known < new_start else None
    return RecoveryOutcome(
        end, durable, found.snapshot_end, new_start, state_from, lost_effect, written, archive, moved
    )


def _known_state(node: AclNode, snap: SnapshotId | None, end: int) -> tuple[AclsImage, str]:
    """The newest state still known: the lost-evidence snapshot (ending beyond the log), else the log replayed."""
    if snap is not None:
        assert node.snapshots is not None
        node.load_snapshot_file(node.snapshots.path(snap))
        return node.image, snap.file_name()
    node.start(to_offset=end)
    source = f"the log replayed to offset {end}"
    if node.loaded_snapshot is not None:
        source += f" (from snapshot {node.loaded_snapshot.name})"
    return node.image, source


def _write_state(node: AclNode, image: AclsImage, new_start: int, log_id: str | None) -> Path:
    """The state `image` as the snapshot at `new_start` (where the log will start)."""
    assert node.snapshots is not None
    p = image.provenance
    header = SnapshotHeader(new_start, max(p.epoch, 0), max(p.timestamp_ms, -1), log_id=log_id)
    return node.snapshots.write_chunks(header, image.chunks())
