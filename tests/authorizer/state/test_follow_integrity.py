"""A node that follows its log never does so quietly: divergence stops it, every error is reported with since
when and retried, a failed automatic snapshot never fails an append, and `log recover` never reuses an offset."""

from __future__ import annotations

import errno
import gc
import logging
import os
import resource
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state import loader as loader_module
from kraftacl.authorizer.state.node import AclNode
from kraftacl.authorizer.state.records import batch_rows
from kraftacl.authorizer.state.recovery import RecoveryRefused, recover
from kraftacl.authorizer.state.tailer import Tailer
from kraftacl.metadata_log.backends.file.format import iter_frames, read_segment_header
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.errors import LogLostDataError
from kraftacl.snapshots import store as store_module
from kraftacl.snapshots.policy import SnapshotPolicy
from kraftacl.snapshots.store import SnapshotStore
from tests.metadata_log.faults import rewind_durable_end, small_tmpfs

SEGMENT = f"{0:020d}.log"


def acl(n: int) -> StandardAcl:
    return StandardAcl(
        ResourceType.TOPIC, f"t{n}", PatternType.LITERAL, "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW
    )


def writer_node(directory: Path, policy: SnapshotPolicy | None = None, snapshots: Path | None = None) -> AclNode:
    node = AclNode(FileLog(directory), snapshot_dir=snapshots or directory, policy=policy)
    node.start()
    return node


def create(node: AclNode, *numbers: int) -> None:
    results = node.controller.create_acls([acl(n) for n in numbers])
    assert all(r.error.code == 0 and r.acl_id for r in results), results


def reader_node(directory: Path) -> AclNode:
    node = AclNode(FileLog(directory, read_only=True), snapshot_dir=directory)
    node.start()
    return node


def cut_last_batch(directory: Path) -> None:
    """Remove the last batch exactly at its start (a tail cut at a batch boundary)."""
    segment = sorted(directory.glob("*.log"))[-1]
    with open(segment, "rb") as f:
        _, start = read_segment_header(f)
        frames = list(iter_frames(f, start, segment.stat().st_size, int(segment.name[:20])))
    os.truncate(segment, frames[-1].position)


# ---- divergence -------------------------------------------------------------------------------------------


def followed_log(d: Path) -> tuple[AclNode, Tailer]:
    """A log of two batches (t1, t2) and a node that has followed it to its end."""
    w = writer_node(d)
    create(w, 1)
    create(w, 2)
    w.close()
    node = reader_node(d)
    tailer = Tailer(node.loader)
    assert tailer.poll_once().following and node.image.provenance.next_offset == 2
    return node, tailer


def test_a_log_shorter_than_what_was_applied_stops_the_tailer(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    d = tmp_path / "log"
    node, tailer = followed_log(d)
    cut_last_batch(d)
    rewind_durable_end(d, 1)  # as if the whole history after offset 1 had been replaced
    with caplog.at_level(logging.ERROR):
        status = tailer.poll_once()
    assert status.diverged is not None and "no longer holds" in status.diverged
    assert not status.following and status.since is not None
    assert "diverged" in caplog.text
    w2 = writer_node(d)  # a writer that continues the shortened log
    create(w2, 3)
    w2.close()
    for _ in range(3):
        assert tailer.poll_once().diverged is not None
    assert {a.resource_name for a in node.image.acls.values()} == {"t1", "t2"}, "nothing after the divergence"
    node.close()


def test_another_batch_at_an_applied_offset_is_a_divergence(tmp_path: Path) -> None:
    d, alt = tmp_path / "log", tmp_path / "alt"
    node, tailer = followed_log(d)
    shutil.copytree(d, alt)  # the same log, whose last batch an operator cut and whose evidence he removed
    cut_last_batch(alt)
    (alt / "durable-end").unlink()
    w = writer_node(alt)
    create(w, 3)  # offset 1 again: the same size as t2's batch, other content, another writer epoch
    create(w, 4)
    w.close()
    shutil.copy(alt / SEGMENT, d / SEGMENT)  # the node's directory now holds that other history
    shutil.copy(alt / "durable-end", d / "durable-end")
    status = tailer.poll_once()
    assert status.diverged is not None and "another history" in status.diverged, status
    assert "ending at offset 1 (epoch 1" in status.diverged
    assert {a.resource_name for a in node.image.acls.values()} == {"t1", "t2"}, "t4 was not applied"
    assert tailer.poll_once().next_offset == 2
    node.close()


# ---- no silent failure -------------------------------------------------------------------------------------


def test_a_tailer_reports_emfile_with_since_when_retries_with_backoff_and_recovers(tmp_path: Path) -> None:
    d = tmp_path / "log"
    w = writer_node(d)
    create(w, 1)
    node = reader_node(d)
    tailer = Tailer(node.loader, interval_s=0.01, max_backoff_s=0.08)
    create(w, 2)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (3, hard))
        first = tailer.poll_once()
        second = tailer.poll_once()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert first.last_error is not None and "Too many open files (EMFILE)" in first.last_error
    assert "corrupt" not in first.last_error and first.lag is None and not first.following
    assert second.since == first.since and second.failures == 2
    assert tailer.delay_s() == 0.04
    ok = tailer.poll_once()
    assert ok.following and ok.next_offset == 2 and ok.lag == 0 and ok.since is None
    w.close()
    node.close()


def test_an_unexpected_exception_is_caught_reported_and_the_thread_lives_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "log"
    w = writer_node(d)
    node = reader_node(d)
    calls = 0
    real = node.loader.catch_up

    def flaky(*args: object, **kwargs: object) -> int:
        nonlocal calls
        calls += 1
        if calls <= 2:
            raise RuntimeError("a bug somewhere")
        return real()

    monkeypatch.setattr(node.loader, "catch_up", flaky)
    tailer = node.tail(interval_s=0.01)
    deadline = time.monotonic() + 10
    while calls < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert tailer.status().last_error is not None or calls > 2
    create(w, 1)
    # the image moves inside catch_up, the tailer's status right after it returns: wait for both
    while not (node.image.provenance.next_offset >= 1 and tailer.status().following) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert node.image.provenance.next_offset == 1 and tailer.status().following and node.ready
    w.close()
    node.close()


def test_a_failed_automatic_snapshot_reports_the_append_done_and_never_blocks_later_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "log"
    node = writer_node(d, SnapshotPolicy(max_records=1))

    def full_disk(*args: object, **kwargs: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store_module, "write_snapshot_chunks", full_disk)
    with caplog.at_level(logging.ERROR):
        create(node, 1)  # the create succeeds: its batch is durable and applied
    assert node.snapshot_failure is not None and "No space left on device (ENOSPC)" in node.snapshot_failure
    assert "automatic snapshot at offset 1 failed" in caplog.text
    create(node, 2)
    create(node, 3)
    monkeypatch.undo()
    create(node, 4)
    assert node.snapshot_failure is None and [s.end_offset for s in SnapshotStore(d).list()] == [4]
    node.close()
    with FileLog(d, read_only=True) as log:
        assert log.high_watermark() == 4


def test_a_snapshot_directory_that_fills_up_never_fails_an_append(tmp_path: Path) -> None:
    d = tmp_path / "log"
    with small_tmpfs(tmp_path / "snaps", "16k") as snaps:
        node = writer_node(d, SnapshotPolicy(max_records=200), snapshots=snaps)
        for n in range(0, 1000, 100):
            create(node, *range(n, n + 100))
        assert node.snapshot_failure is not None and "ENOSPC" in node.snapshot_failure
        assert not list(snaps.glob("*.part")), "a failed snapshot leaves nothing half-written"
        node.close()
    with FileLog(d, read_only=True) as log:
        assert log.high_watermark() == 1000


# ---- recovery -----------------------------------------------------------------------------------------------


def test_recover_from_a_snapshot_beyond_the_log_end_loses_no_state_and_reuses_no_offset(tmp_path: Path) -> None:
    d = tmp_path / "log"
    w = writer_node(d)
    create(w, 1)
    create(w, 2)
    w.take_snapshot()  # at offset 2
    expected = dict(w.image.acls)
    w.close()
    cut_last_batch(d)
    cut_last_batch(d)  # the log now ends at 0 (below the durable end 2 and the snapshot at 2)
    with pytest.raises(LogLostDataError):
        writer_node(d)
    outcome = recover(d)
    assert (outcome.log_end, outcome.new_start, outcome.lost_effect) == (0, 2, None)
    assert outcome.moved == [SEGMENT] and outcome.archive is not None and (outcome.archive / SEGMENT).exists()
    w = writer_node(d)
    assert dict(w.image.acls) == expected
    create(w, 3)
    assert w.image.provenance.last_offset == 2, "the next batch takes offset 2, never 0 or 1 again"
    w.close()
    assert recover(d).new_start is None  # nothing left to recover


def test_recover_without_a_snapshot_needs_accept_loss(tmp_path: Path) -> None:
    d = tmp_path / "log"
    w = writer_node(d)
    for n in range(3):
        create(w, n)
    w.close()
    cut_last_batch(d)
    before = sorted(p.name for p in d.iterdir())
    with pytest.raises(RecoveryRefused, match=r"batches \[2, 3\) are lost.*--accept-loss"):
        recover(d)
    assert sorted(p.name for p in d.iterdir()) == before
    outcome = recover(d, accept_loss=True)
    assert (outcome.new_start, outcome.lost_effect) == (3, (2, 3))
    w = writer_node(d)
    assert {a.resource_name for a in w.image.acls.values()} == {"t0", "t1"}
    create(w, 9)
    assert w.image.provenance.last_offset == 3
    w.close()


def test_what_retention_removes_after_automatic_snapshots_is_recorded(tmp_path: Path) -> None:
    d = tmp_path / "log"
    node = AclNode(FileLog(d), snapshot_dir=d, policy=SnapshotPolicy(max_records=1), retain_snapshots=1)
    node.start()
    for n in range(3):
        create(node, n)
    assert node.retention_deleted == [f"{1:020d}-0000000001.checkpoint", f"{2:020d}-0000000001.checkpoint"]
    assert [p.name for p in d.glob("*.checkpoint")] == [f"{3:020d}-0000000001.checkpoint"]
    node.close()


# ---- poke -------------------------------------------------------------------------------------------------


def test_a_poked_tailer_reads_new_records_at_once_not_after_its_interval(tmp_path: Path) -> None:
    w = writer_node(tmp_path)
    create(w, 1)
    node = reader_node(tmp_path)
    tailer = Tailer(node.loader, interval_s=3600).start()
    try:
        deadline = time.monotonic() + 10
        while tailer.status().started_monotonic == 0 and time.monotonic() < deadline:
            time.sleep(0.01)  # its first poll, at start (on a busy host the thread may start after the next write)
        create(w, 2)
        time.sleep(0.3)
        assert node.image.provenance.next_offset == 1, "the next poll is an hour away"
        tailer.poke()
        deadline = time.monotonic() + 10
        while node.image.provenance.next_offset < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert node.image.provenance.next_offset == 2
        create(w, 3)
        tailer.poke()  # a poke after the last poll is not lost
        deadline = time.monotonic() + 10
        while node.image.provenance.next_offset < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert node.image.provenance.next_offset == 3
    finally:
        tailer.stop(timeout=5)
        node.close()
        w.close()
    assert tailer._thread is not None and not tailer._thread.is_alive(), "stop wakes a tailer waiting an hour"


def watched_follower(
    directory: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[AclNode, AclNode, Tailer, list[tuple[int, bool]], list[int]]:
    """A writer, a follower with its (unstarted) tailer, BULK_RECORDS at 3, and what the follower's catch-ups do:
    (records of each batch replayed, whether the collector was on meanwhile), and its image's size at each freeze."""
    w = writer_node(directory)
    node = reader_node(directory)
    seen: list[tuple[int, bool]] = []
    freezes: list[int] = []

    def watched(records: Any) -> Any:
        seen.append((len(records), gc.isenabled()))
        return batch_rows(records)

    monkeypatch.setattr(loader_module, "batch_rows", watched)
    monkeypatch.setattr(loader_module, "BULK_RECORDS", 3)
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(len(node.image.acls)))
    return w, node, Tailer(node.loader, interval_s=3600), seen, freezes


def test_a_large_batch_is_applied_with_the_collector_paused_then_frozen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follower applying a batch of BULK_RECORDS or more (another serve's import) runs no collection meanwhile (it
    would hold the GIL the event loop needs), publishes it at once, and freezes what it made; smaller batches are
    applied as before, and the collector is on again after either."""
    w, node, tailer, seen, freezes = watched_follower(tmp_path, monkeypatch)
    try:
        assert gc.isenabled()
        create(w, 1, 2)
        seen.clear()  # the writer's own apply (this process) is not the follower's
        tailer.poll_once()
        assert node.image.provenance.next_offset == 2 and seen == [(2, True)] and freezes == []
        create(w, 3, 4, 5)
        seen.clear()
        freezes.clear()
        tailer.poll_once()
        assert node.image.provenance.next_offset == 5 and len(node.image.acls) == 5
        assert seen == [(3, False)] and freezes == [5] and gc.isenabled()
    finally:
        node.close()
        w.close()


def test_batches_after_a_large_one_stay_under_the_pause_and_are_published_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk import the Kafka topic carries as several batches of one transaction, read in one catch-up: from the
    first large batch on, the collector stays paused, the whole run is published once (one bulk index build, not
    one change-by-change index update per batch), and what it made is frozen once."""
    w, node, tailer, seen, freezes = watched_follower(tmp_path, monkeypatch)
    publishes: list[int] = []
    node.loader.publishers.append(type("Count", (), {"publish": lambda _, u: publishes.append(len(u.image.acls))})())
    try:
        create(w, 1)
        tailer.poll_once()
        create(w, 2)  # small, then large, small, large: read in one catch-up
        create(w, 3, 4, 5)
        create(w, 6)
        create(w, 7, 8, 9)
        seen.clear()  # the writer's own applies (this process) are not the follower's
        freezes.clear()
        tailer.poll_once()
        assert node.image.provenance.next_offset == 9 and len(node.image.acls) == 9
        assert seen == [(1, True), (3, False), (1, False), (3, False)], "paused from the first large batch on"
        assert publishes == [1, 9] and freezes == [9] and gc.isenabled()
    finally:
        node.close()
        w.close()
