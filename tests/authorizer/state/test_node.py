"""AclNode start-up the KIP-801 way on a real FileLog: snapshot, then the log tail, then ready.

Covers the initial load (even of an empty log), "not ready" before it, restart from snapshot + tail,
a damaged newest snapshot, `start(to_offset)`, a log that lost offsets no snapshot covers, and the
snapshot policy with retention.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.errors import AuthorizerNotReadyError
from kraftacl.authorizer.model.acls import (
    AclOperation,
    AclPermissionType,
    AuthorizationResult,
    PatternType,
    ResourceType,
    StandardAcl,
)
from kraftacl.authorizer.model.filters import AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter
from kraftacl.authorizer.state import loader as loader_module
from kraftacl.authorizer.state import node as node_module
from kraftacl.authorizer.state.image import SNAPSHOT_ROWS, Provenance
from kraftacl.authorizer.state.node import AclNode, StartupError
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.metadata_log import pace
from kraftacl.metadata_log.backends.file.format import encode_segment_header
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.backends.memory import MemoryLog
from kraftacl.metadata_log.codec.avro import CURRENT_SCHEMA, new_uuid
from kraftacl.snapshots import format as snapshot_format
from kraftacl.snapshots.columns import AclColumns, encode_columns
from kraftacl.snapshots.format import SnapshotHeader, SnapshotReader
from kraftacl.snapshots.naming import SnapshotId, parse_name
from kraftacl.snapshots.policy import SnapshotPolicy
from kraftacl.snapshots.store import SnapshotStore

T = ResourceType.TOPIC
OP, PERM = AclOperation, AclPermissionType
ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
ADMIN = RequestContext("User:admin", "10.0.0.1")
BOB = RequestContext("User:bob", "10.0.0.1")
CONFIG = AuthorizerConfig(super_users=frozenset({"User:admin"}))
PROBES = [Action(op, T, name) for name in ("t0", "t1", "t7", "t15", "orders", "x") for op in (OP.READ, OP.WRITE)]


def topic_acl(n: int, principal: str = "User:bob", perm: AclPermissionType = PERM.ALLOW) -> StandardAcl:
    pattern = PatternType.PREFIXED if n % 5 == 4 else PatternType.LITERAL
    return StandardAcl(T, f"t{n}", pattern, principal, "*", OP.READ if n % 2 else OP.WRITE, perm)


@dataclass
class Dirs:
    log: Path
    snaps: Path

    def node(
        self,
        *,
        read_only: bool = False,
        snapshots: bool = True,
        policy: SnapshotPolicy | None = None,
        retain_snapshots: int = 3,
    ) -> AclNode:
        snaps = self.snaps if snapshots else None
        return AclNode(FileLog(self.log, read_only=read_only), snaps, CONFIG, policy, retain_snapshots)


@pytest.fixture
def dirs(tmp_path: Path) -> Dirs:
    return Dirs(tmp_path / "log", tmp_path / "snaps")


def state(node: AclNode) -> tuple[dict[str, StandardAcl], Provenance]:
    return dict(node.image.acls), node.image.provenance


class Workload:
    """Controller requests on a started node; remembers the state after each one, by high-water mark."""

    def __init__(self, node: AclNode) -> None:
        self.node = node
        self.counter = 0
        self.states: dict[int, dict[str, StandardAcl]] = {node.backend.high_watermark(): dict(node.image.acls)}

    def step(self, creates: int = 3, delete_every: int = 0) -> None:
        acls = [topic_acl(self.counter + i) for i in range(creates)]
        self.counter += creates
        self.node.controller.create_acls(acls)
        self.remember()
        if delete_every:
            victims = [acl for acl in self.node.image.acls.values() if int(acl.resource_name[1:]) % delete_every == 0]
            if victims:
                self.node.controller.delete_acls([AclBindingFilter.of(v) for v in victims[:2]])
                self.remember()

    def remember(self) -> None:
        self.states[self.node.backend.high_watermark()] = dict(self.node.image.acls)

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step(delete_every=3)


def decisions(node: AclNode) -> list[AuthorizationResult]:
    return node.authorizer.authorize(BOB, PROBES)


# ---- initial load ---------------------------------------------------------------------------------------


def test_empty_log_completes_the_initial_load(dirs: Dirs) -> None:
    node = dirs.node()
    futures = node.authorizer.start(["EXTERNAL"])
    assert not node.authorizer.ready
    assert not futures["EXTERNAL"].done()
    with pytest.raises(AuthorizerNotReadyError):
        node.authorizer.authorize(BOB, [Action(OP.READ, T, "t0")])
    assert node.authorizer.authorize(ADMIN, [Action(OP.READ, T, "t0")]) == [ALLOWED]
    node.start()
    assert node.authorizer.ready
    assert futures["EXTERNAL"].done() and futures["EXTERNAL"].exception() is None
    assert node.authorizer.authorize(BOB, [Action(OP.READ, T, "t0")]) == [DENIED]
    assert len(node.image) == 0
    assert node.loaded_snapshot is None
    node.close()


def test_empty_log_with_allow_everyone(tmp_path: Path) -> None:
    node = AclNode(FileLog(tmp_path), None, AuthorizerConfig(allow_everyone_if_no_acl_found=True))
    with pytest.raises(AuthorizerNotReadyError):
        node.authorizer.authorize(BOB, [Action(OP.READ, T, "t0")])  # not "allowed" before the load (KIP-801)
    node.start()
    assert node.authorizer.authorize(BOB, [Action(OP.READ, T, "t0")]) == [ALLOWED]
    node.close()


def test_start_replays_everything_before_ready(dirs: Dirs) -> None:
    writer = dirs.node()
    writer.start()
    Workload(writer).run(5)
    expected = state(writer)
    want = decisions(writer)
    writer.close()
    node = dirs.node(snapshots=False)
    node.start()
    assert state(node) == expected
    assert decisions(node) == want
    assert ALLOWED in want and DENIED in want
    node.close()


# ---- restart from snapshot + tail -------------------------------------------------------------------------


def test_restart_from_snapshot_and_tail_equals_full_replay(dirs: Dirs) -> None:
    writer = dirs.node()
    writer.start()
    work = Workload(writer)
    work.run(4)
    snap = writer.take_snapshot()
    assert parse_name(snap) == SnapshotId(writer.image.provenance.next_offset, writer.image.provenance.epoch)
    work.run(4)
    expected, want = state(writer), decisions(writer)
    writer.close()

    restarted = dirs.node()
    restarted.start()
    assert restarted.loaded_snapshot == snap
    assert state(restarted) == expected
    assert decisions(restarted) == want
    restarted.close()

    full = dirs.node(snapshots=False)
    full.start()
    assert full.loaded_snapshot is None
    assert state(full) == expected
    assert decisions(full) == want
    full.close()


def test_snapshot_content_is_the_image(dirs: Dirs) -> None:
    node = dirs.node()
    node.start()
    Workload(node).run(3)
    path = node.take_snapshot()
    reader = SnapshotReader(path)
    assert reader.header.end_offset == node.backend.high_watermark()
    assert {r.id: r for r in reader.records()} == {i: record_from_acl(i, a) for i, a in node.image.acls.items()}
    node.close()


def test_a_paced_thread_writes_the_snapshot_itself_resting_between_chunks(
    dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """serve's writer and tailer are paced: a snapshot they write rests between chunks (the event loop answering
    brokers gets the GIL), in this process (no fork: its page-table copy stalled every thread of a large serve)."""
    node = dirs.node()
    node.start()
    for start in range(0, 3 * SNAPSHOT_ROWS + 5, 2000):
        node.controller.create_acls([topic_acl(n) for n in range(start, min(start + 2000, 3 * SNAPSHOT_ROWS + 5))])
    monkeypatch.setattr(os, "fork", _no_fork)
    events: list[str] = []
    ticks = itertools.count()
    monkeypatch.setattr(pace, "_clock", lambda: float(next(ticks)))  # every breathe() comes after a whole share
    monkeypatch.setattr(time, "sleep", lambda _: events.append("rest"))

    def encode(columns: AclColumns) -> bytes:
        events.append("chunk")
        return encode_columns(columns)

    monkeypatch.setattr(snapshot_format, "encode_columns", encode)
    paths: list[Path] = []

    def paced() -> None:
        pace.pace_thread(work_s=0.5, rest_s=0.001)
        paths.append(node.take_snapshot())

    thread = threading.Thread(target=paced)
    thread.start()
    thread.join()
    reader = SnapshotReader(paths[0])
    assert {r.id: r for r in reader.records()} == {i: record_from_acl(i, a) for i, a in node.image.acls.items()}
    chunks = "".join("c" if e == "chunk" else "r" for e in events)
    assert chunks.count("c") == 4 and "cc" not in chunks, chunks  # a rest between every two chunks
    node.close()


def _no_fork() -> int:
    raise AssertionError("a snapshot forked the serving process")


def test_damaged_newest_snapshot_is_skipped(dirs: Dirs, caplog: pytest.LogCaptureFixture) -> None:
    writer = dirs.node()
    writer.start()
    work = Workload(writer)
    work.run(3)
    older = writer.take_snapshot()
    work.run(3)
    newest = writer.take_snapshot()
    work.run(2)
    expected = state(writer)
    writer.close()
    data = bytearray(newest.read_bytes())
    data[len(data) * 2 // 3] ^= 0x10
    newest.write_bytes(bytes(data))

    node = dirs.node()
    with caplog.at_level(logging.WARNING):
        node.start()
    assert node.loaded_snapshot == older
    assert state(node) == expected
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(newest.name in w for w in warnings), warnings
    node.close()


# ---- start(to_offset) -------------------------------------------------------------------------------------


def test_start_to_offset_gives_the_state_at_that_offset(dirs: Dirs) -> None:
    writer = dirs.node()
    writer.start()
    work = Workload(writer)
    work.run(3)
    snap_a = writer.take_snapshot()
    work.run(3)
    snap_b = writer.take_snapshot()
    work.run(2)
    writer.close()
    a_end, b_end = parse_name(snap_a).end_offset, parse_name(snap_b).end_offset
    assert len(work.states) > 8
    for offset, expected in sorted(work.states.items()):
        node = dirs.node(read_only=True)
        node.start(to_offset=offset)
        assert dict(node.image.acls) == expected, offset
        assert node.loader.next_offset == offset
        assert node.authorizer.ready
        if offset >= b_end:
            assert node.loaded_snapshot == snap_b
        elif offset >= a_end:
            assert node.loaded_snapshot == snap_a
        else:
            assert node.loaded_snapshot is None, "a snapshot beyond to_offset must not be loaded"
        node.close()


# ---- a log that lost offsets -----------------------------------------------------------------------------


def write_snapshot(directory: Path, end_offset: int, acls: list[StandardAcl]) -> dict[str, StandardAcl]:
    by_id = {new_uuid(): a for a in acls}
    SnapshotStore(directory).write(SnapshotHeader(end_offset, 1, 0), [record_from_acl(i, a) for i, a in by_id.items()])
    return by_id


def test_log_start_above_a_missing_snapshot_refuses_to_start(tmp_path: Path) -> None:
    log = MemoryLog(log_start_offset=5)
    log.append([record_from_acl(new_uuid(), topic_acl(1))])
    node = AclNode(log, tmp_path, CONFIG)
    with pytest.raises(StartupError, match=r"starts at offset 5 .* from 0"):
        node.start()
    assert not node.authorizer.ready
    with pytest.raises(AuthorizerNotReadyError):
        node.authorizer.authorize(BOB, [Action(OP.READ, T, "t1")])
    assert node.authorizer.authorize(ADMIN, [Action(OP.READ, T, "t1")]) == [ALLOWED]


def test_log_start_above_the_snapshot_end_refuses_to_start(tmp_path: Path) -> None:
    write_snapshot(tmp_path, 3, [topic_acl(1)])
    log = MemoryLog(log_start_offset=5)
    log.append([record_from_acl(new_uuid(), topic_acl(2))])
    node = AclNode(log, tmp_path, CONFIG)
    with pytest.raises(StartupError, match=r"starts at offset 5 .* from 3"):
        node.start()
    assert not node.authorizer.ready


def test_snapshot_at_the_log_start_is_enough(tmp_path: Path) -> None:
    old = write_snapshot(tmp_path, 5, [topic_acl(1), topic_acl(2)])
    log = MemoryLog(log_start_offset=5)
    new_id = new_uuid()
    log.append([record_from_acl(new_id, topic_acl(3))])
    node = AclNode(log, tmp_path, CONFIG)
    node.start()
    assert dict(node.image.acls) == {**old, new_id: topic_acl(3)}
    assert node.image.provenance.last_offset == 5
    assert node.authorizer.ready


# ---- snapshot policy and retention ---------------------------------------------------------------------


SEGMENT_HEADER_BYTES = len(encode_segment_header(CURRENT_SCHEMA.json_text, bytes(16)))  # with the log id


def snapshot_points(sizes: list[tuple[int, int]], max_records: int, max_bytes: int) -> list[int]:
    """Where the policy must fire over batches of (records, bytes): the end offsets, worked out by hand."""
    points, offset, records, size = [], 0, 0, 0
    for count, batch_bytes in sizes:
        offset, records, size = offset + count, records + count, size + batch_bytes
        if records >= max_records or size >= max_bytes:
            points.append(offset)
            records = size = 0
    return points


@pytest.mark.parametrize(("max_records", "max_bytes"), [(10, 10**9), (10**9, 350)], ids=["records", "bytes"])
def test_policy_snapshots_every_n_records_or_bytes_and_retention(dirs: Dirs, max_records: int, max_bytes: int) -> None:
    policy = SnapshotPolicy(max_records=max_records, max_bytes=max_bytes)
    node = dirs.node(policy=policy, retain_snapshots=2)
    node.start()
    work = Workload(node)
    for _ in range(9):
        work.step(creates=4)  # 4 records per batch: by records the policy fires after 12, 24 and 36
    with FileLog(dirs.log, read_only=True) as log:
        sizes = [(len(batch.records), batch.size_bytes) for batch in log.read(0)]
    segment = sorted(dirs.log.glob("*.log"))
    assert len(segment) == 1 and sum(size for _, size in sizes) == segment[0].stat().st_size - SEGMENT_HEADER_BYTES
    points = snapshot_points(sizes, max_records, max_bytes)
    assert points == ([12, 24, 36] if max_records == 10 else [8, 16, 24, 32])
    store = SnapshotStore(dirs.snaps)
    assert [s.end_offset for s in store.list()] == points[-2:], "retention keeps the newest `retain`"
    for snapshot in store.list():
        reader = store.read(snapshot)
        assert {r.id: r for r in reader.records()} == {
            i: record_from_acl(i, a) for i, a in work.states[snapshot.end_offset].items()
        }
    assert policy.records_since == 36 - points[-1]
    node.close()


def test_no_policy_no_automatic_snapshots(dirs: Dirs) -> None:
    node = dirs.node()
    node.start()
    Workload(node).run(5)
    assert not dirs.snaps.exists() or not list(dirs.snaps.iterdir())
    node.close()


def test_loading_a_snapshot_at_start_is_not_counted_by_the_policy(dirs: Dirs) -> None:
    writer = dirs.node()
    writer.start()
    Workload(writer).run(4)
    writer.take_snapshot()
    writer.close()
    policy = SnapshotPolicy(max_records=5)
    node = dirs.node(policy=policy)
    taken: list[Provenance] = []
    original = node.take_snapshot

    def spy() -> Path:
        taken.append(node.image.provenance)
        return original()

    node.take_snapshot = spy  # type: ignore[method-assign]
    node.start()
    assert taken == [], "no log record was applied after the snapshot"
    assert policy.records_since == 0
    node.close()


def test_take_snapshot_without_a_directory_is_an_error(tmp_path: Path) -> None:
    node = AclNode(MemoryLog(), None, CONFIG)
    node.start()
    with pytest.raises(StartupError, match="no snapshot directory"):
        node.take_snapshot()


def test_read_only_node_follows_the_writer(dirs: Dirs) -> None:
    writer = dirs.node()
    writer.start()
    Workload(writer).run(2)
    reader = dirs.node(read_only=True)
    reader.start()
    assert state(reader) == state(writer)
    Workload(writer).run(2)
    writer.controller.delete_acls(
        [AclBindingFilter(ResourcePatternFilter(T, "t0", PatternType.ANY), AccessControlEntryFilter())]
    )
    reader.loader.catch_up()
    assert state(reader) == state(writer)
    reader.close()
    writer.close()


def test_heap_is_trimmed_once_loaded_and_after_a_big_rebuild_while_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def noting(call: str) -> Callable[[], bool]:
        def release_free_memory() -> bool:  # notes the call; something was released
            calls.append(call)
            return True

        return release_free_memory

    monkeypatch.setattr(node_module, "release_free_memory", noting("start"))
    monkeypatch.setattr(loader_module, "release_free_memory", noting("rebuild"))
    log = MemoryLog()
    log.append([record_from_acl(new_uuid(), topic_acl(n)) for n in range(3)])
    node = AclNode(log, None, CONFIG)
    node.start()
    assert calls == ["start"]  # the initial load's bulk build ran before ready: one trim, at the end
    log.append([record_from_acl(new_uuid(), topic_acl(n)) for n in range(3, 6)])
    node.loader.catch_up()  # a bulk rebuild too, but of 6 ACLs: not worth a trim
    assert calls == ["start"]
    for first in range(6, loader_module.TRIM_AFTER_ACLS + 6, 1000):
        log.append([record_from_acl(new_uuid(), topic_acl(n)) for n in range(first, first + 1000)])
    node.loader.catch_up()
    assert calls == ["start", "rebuild"]
    assert node.authorizer.acl_count() == loader_module.TRIM_AFTER_ACLS + 6
