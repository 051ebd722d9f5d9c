"""Property: whatever happens to two file logs (appends, snapshots, writers killed mid-append, tails cut, segments
deleted, snapshots copied from one log to the other, recoveries), every state a reader or a node serves is the
replay of one prefix of the batches that log acknowledged, or the command refuses.

A model keeps each log's acknowledged history (batches since its base: offset 0 and the empty state, or where an
accepted-loss recovery re-based it). A batch whose writer "died" before publishing it is pending: no reader may
see it; the next writer keeps it if it is whole (it may have been acknowledged before a power loss) and then it
joins the history. After each step both logs are read by a fresh node, a tailing node and a raw batch read.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.state.node import AclNode
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.authorizer.state.recovery import recover
from kraftacl.authorizer.state.tailer import Tailer
from kraftacl.metadata_log.backends.file.format import FrameError, iter_frames, read_segment_header
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord
from kraftacl.snapshots import store as store_module
from kraftacl.snapshots.errors import SnapshotError
from tests.metadata_log.factories import id_at
from tests.metadata_log.faults import rewind_durable_end

REFUSALS = (LogError, SnapshotError, AuthorizerError)
SEGMENT_BYTES = 700
State = dict[str, AccessControlEntryRecord]


@dataclass
class LogModel:
    """What one log acknowledged, and what happened to its files."""

    salt: int
    base_offset: int = 0
    base_state: State = field(default_factory=dict)
    batches: list[tuple[int, list[MetadataRecord]]] = field(default_factory=list)
    pending: tuple[int, list[MetadataRecord], bool] | None = None  # (base, records, torn)

    @property
    def end(self) -> int:
        return self.batches[-1][0] + len(self.batches[-1][1]) if self.batches else self.base_offset

    def state_at(self, offset: int) -> State | None:
        """The replay of the acknowledged prefix ending at `offset`, or None if no batch ends there."""
        if offset == self.base_offset:
            return dict(self.base_state)
        state = dict(self.base_state)
        for base, records in self.batches:
            for record in records:
                if isinstance(record, AccessControlEntryRecord):
                    state[record.id] = record
                else:
                    del state[record.id]
            if base + len(records) == offset:
                return state
        return None

    def adopt_pending(self) -> None:
        """A writer opened: a whole pending batch is kept (durable from now on), a torn one is cut."""
        if self.pending is not None and not self.pending[2]:
            self.batches.append((self.pending[0], self.pending[1]))
        self.pending = None

    def next_records(self, size: int, removes: int) -> list[MetadataRecord]:
        live = sorted(self.state_at(self.end) or {})
        out: list[MetadataRecord] = [RemoveAccessControlEntryRecord(i) for i in live[:removes]]
        for n in range(self.end + len(out), self.end + size):
            out.append(
                AccessControlEntryRecord(id_at(self.salt + n), 2, f"t{self.salt + n}", 3, f"User:u{n % 3}", "*", 3, 3)
            )
        return out or [out_of(self)]


def out_of(model: LogModel) -> MetadataRecord:
    n = model.end
    return AccessControlEntryRecord(id_at(model.salt + n), 2, f"t{model.salt + n}", 3, "User:u", "*", 3, 3)


@dataclass
class Follower:
    """A node tailing one log since some step; once it diverges it must never change again."""

    node: AclNode
    tailer: Tailer
    frozen: State | None = None


class World:
    def __init__(self, root: Path) -> None:
        self.dirs = [root / "a", root / "b"]
        self.models = [LogModel(0), LogModel(10_000_000)]
        self.followers: list[Follower | None] = [None, None]

    # -- steps ---------------------------------------------------------------------------------------------

    def writer(self, i: int) -> FileLog | None:
        try:
            log = FileLog(self.dirs[i], segment_bytes=SEGMENT_BYTES)
        except REFUSALS:
            return None
        self.models[i].adopt_pending()
        return log

    def append(self, i: int, size: int, removes: int) -> None:
        log = self.writer(i)
        if log is None:
            return
        model = self.models[i]
        with log:
            records = model.next_records(size, removes)
            assert log.append(records).base_offset == model.end
            model.batches.append((model.end, records))

    def kill(self, i: int, size: int, torn: bool) -> None:
        """The writer dies after writing a batch, before its fsync returned (optionally mid-write)."""
        log = self.writer(i)
        if log is None:
            return
        model = self.models[i]
        with log:
            records = model.next_records(size, 0)
            log.append(records)
            segment = log.segment_paths()[-1]
        rewind_durable_end(self.dirs[i], model.end)
        if torn:
            frames = frames_of(segment)
            os.truncate(segment, frames[-1][0] + (frames[-1][1] - frames[-1][0]) // 2)
        model.pending = (model.end, records, torn)

    def snapshot(self, i: int) -> None:
        try:
            node = AclNode(FileLog(self.dirs[i], read_only=True), snapshot_dir=self.dirs[i], retain_snapshots=2)
        except REFUSALS:
            return
        try:
            node.start()
            if node.image.provenance.next_offset > 0:
                node.take_snapshot()
        except REFUSALS:
            pass
        finally:
            node.close()

    def truncate(self, i: int, batches: int) -> None:
        """Cut the last `batches` whole batches of the files (an operator's or a disk's doing)."""
        model = self.models[i]
        for _ in range(batches):
            segments = sorted(self.dirs[i].glob("*.log"))
            if not segments:
                return
            frames = frames_of(segments[-1])
            if len(frames) <= 1:
                segments[-1].unlink()
            else:
                os.truncate(segments[-1], frames[-1][0])
            if model.pending is not None:
                model.pending = None

    def delete_segment(self, i: int, which: float) -> None:
        segments = sorted(self.dirs[i].glob("*.log"))
        if segments:
            segments[int(which * len(segments))].unlink()
            self.models[i].pending = None

    def copy_snapshot(self, i: int) -> None:
        snapshots = sorted(self.dirs[i].glob("*.checkpoint"))
        if snapshots and self.dirs[1 - i].is_dir():
            (self.dirs[1 - i] / snapshots[-1].name).write_bytes(snapshots[-1].read_bytes())

    def recover(self, i: int, accept_loss: bool) -> None:
        try:
            outcome = recover(self.dirs[i], accept_loss=accept_loss)
        except REFUSALS:
            return
        if outcome.new_start is None:
            return
        model = self.models[i]
        known = outcome.lost_effect[0] if outcome.lost_effect else outcome.new_start
        state = model.state_at(known)
        assert state is not None, f"recovery rebuilt the state at {known}, which no acknowledged batch ends at"
        model.base_offset, model.base_state, model.batches = outcome.new_start, state, []

    # -- what is served ---------------------------------------------------------------------------------------

    def check(self) -> None:
        for i in (0, 1):
            if self.dirs[i].is_dir():
                self.check_fresh_node(i)
                self.check_batches(i)
                self.check_follower(i)

    def served(self, i: int, offset: int, state: State, who: str) -> None:
        expected = self.models[i].state_at(offset)
        assert expected is not None, f"{who} of log {i} serves offset {offset}: no acknowledged batch ends there"
        assert state == expected, f"{who} of log {i} at offset {offset} serves another state"

    def check_fresh_node(self, i: int) -> None:
        try:
            node = AclNode(FileLog(self.dirs[i], read_only=True), snapshot_dir=self.dirs[i])
        except REFUSALS:
            return
        try:
            node.start()
            self.served(i, node.image.provenance.next_offset, image_state(node), "a fresh node")
        except REFUSALS:
            pass
        finally:
            node.close()

    def check_batches(self, i: int) -> None:
        """A raw read returns exactly acknowledged batches (none pending, none of another history)."""
        try:
            with FileLog(self.dirs[i], read_only=True) as log:
                found = [(b.base_offset, list(b.records)) for b in log.read(log.log_start_offset())]
        except REFUSALS:
            return
        model = self.models[i]
        acked = {base: records for base, records in model.batches}
        for base, records in found:
            assert acked.get(base) == records, f"log {i}: a reader saw a batch at {base} that was not acknowledged"

    def check_follower(self, i: int) -> None:
        follower = self.followers[i]
        if follower is None:
            try:
                node = AclNode(FileLog(self.dirs[i], read_only=True), snapshot_dir=self.dirs[i])
                node.start()
            except REFUSALS:
                return
            follower = self.followers[i] = Follower(node, Tailer(node.loader))
        status = follower.tailer.poll_once()
        state = image_state(follower.node)
        if follower.frozen is not None:
            assert state == follower.frozen, f"the follower of log {i} changed after it stopped following"
        elif status.diverged is not None:
            follower.frozen = state
        elif status.following:
            self.served(i, status.next_offset, state, "a tailing node")

    def close(self) -> None:
        for follower in self.followers:
            if follower is not None:
                follower.node.close()


def image_state(node: AclNode) -> State:
    return {i: record_from_acl(i, a) for i, a in node.image.acls.items()}


def frames_of(segment: Path) -> list[tuple[int, int]]:
    """(start, end) byte positions of the whole frames of a segment, up to a torn tail."""
    found: list[tuple[int, int]] = []
    with open(segment, "rb") as f:
        _, start = read_segment_header(f)
        try:
            for frame in iter_frames(f, start, segment.stat().st_size, int(segment.name[:20])):
                found.append((frame.position, frame.position + frame.size))
        except FrameError:
            pass
    return found


LOG = st.integers(0, 1)
STEP = st.one_of(
    st.tuples(st.just("append"), LOG, st.integers(1, 6), st.integers(0, 2)),
    st.tuples(st.just("append"), LOG, st.integers(1, 6), st.integers(0, 2)),
    st.tuples(st.just("snapshot"), LOG),
    st.tuples(st.just("kill"), LOG, st.integers(1, 6), st.booleans()),
    st.tuples(st.just("truncate"), LOG, st.integers(1, 3)),
    st.tuples(st.just("delete_segment"), LOG, st.floats(0, 0.999)),
    st.tuples(st.just("copy_snapshot"), LOG),
    st.tuples(st.just("recover"), LOG, st.booleans()),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(STEP, min_size=1, max_size=14))
def test_every_served_state_is_a_prefix_of_the_acknowledged_history(steps: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp))
        try:
            world.append(0, 3, 0)
            world.append(1, 3, 0)
            for name, *args in steps:
                getattr(world, str(name))(*args)
                world.check()
        finally:
            world.close()


def test_the_harness_catches_a_reader_that_serves_a_batch_before_it_is_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World(tmp_path)
    try:
        world.append(0, 3, 0)
        world.kill(0, 2, torn=False)  # a whole batch beyond the durable end: no reader may see it yet
        world.check()
        monkeypatch.setattr(FileLog, "_durable_end", lambda self: None)  # readers that ignore the durable end
        with pytest.raises(AssertionError, match=r"not acknowledged|no acknowledged batch ends there"):
            world.check()
    finally:
        world.close()


def test_the_harness_catches_a_node_that_loads_another_logs_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World(tmp_path)
    try:
        world.append(0, 3, 0)
        world.append(1, 3, 0)
        world.snapshot(1)
        world.copy_snapshot(1)  # log b's snapshot at offset 3, copied into log a's directory
        world.check()
        monkeypatch.setattr(store_module, "unusable", lambda header, view: None)  # no binding check
        with pytest.raises(AssertionError, match="a fresh node of log 0 at offset 3 serves another state"):
            world.check_fresh_node(0)
    finally:
        world.close()
