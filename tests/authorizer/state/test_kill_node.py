"""Crash safety of a writing `AclNode`: SIGKILL it 200 times during appends and snapshot writes, check every restart."""

from __future__ import annotations

import hashlib
import itertools
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kraftacl.authorizer.state.node import AclNode
from kraftacl.authorizer.state.records import acl_from_record, record_from_acl
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.records import AccessControlEntryRecord, RecordBatch, RemoveAccessControlEntryRecord
from kraftacl.snapshots.format import SnapshotReader
from kraftacl.snapshots.naming import DELETED_SUFFIX, PART_SUFFIX, parse_name
from kraftacl.snapshots.store import SnapshotStore
from tests.authorizer.state.kill_node_writer import CONFIG, GENERATION, RETAIN_SNAPSHOTS, Request, plan
from tests.metadata_log.factories import id_at

SEED = 801_2025
ROUNDS = 200
FULL_CHECK_EVERY = 50
MIN_KILLS_IN_SNAPSHOTS = 20
REPO = Path(__file__).resolve().parents[3]

Span = tuple[int, int]


@dataclass
class Kill:
    """What one writer printed before it was killed."""

    pid: int
    ready_at: int | None = None  # the high-water mark it started at; None: killed during start-up
    acks: list[Span] = field(default_factory=list)
    open_snapshot: int | None = None  # END of a `snap-begin` with no `snap-end`: killed inside that write
    snapshots_done: int = 0


@dataclass
class Counts:
    """What the kills hit and what the checks found, over all rounds."""

    kills: int = 0
    before_ready: int = 0
    in_snapshot: int = 0
    in_snapshot_renamed: int = 0  # ... after the rename (the file was complete and in place)
    acked: int = 0
    unacked_durable: int = 0
    snapshots_verified: int = 0
    parts_seen: int = 0
    deleted_leftovers: int = 0


def spawn(directory: Path) -> subprocess.Popen[str]:
    """Start a writer; it imports, then waits for "go" on stdin."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.authorizer.state.kill_node_writer", str(directory)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(proc: subprocess.Popen[str], lines: list[str], word: str) -> bool:
    """Read lines into `lines` until one starting with `word`; False at end of output (the writer died)."""
    assert proc.stdout is not None
    while line := proc.stdout.readline():
        lines.append(line)
        if line.startswith(word):
            return True
    return False


def kill_after_random_delay(proc: subprocess.Popen[str], rng: random.Random) -> Kill:
    """Let the writer go, SIGKILL it at a random point (a third of the time inside a snapshot write)."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    lines: list[str] = []
    mode = rng.random()
    if mode < 0.1:
        time.sleep(rng.uniform(0.0, 0.05))  # opening the log, loading the snapshot, replaying the tail
    elif mode < 0.4:
        if read_until(proc, lines, "ready") and read_until(proc, lines, "snap-begin"):
            time.sleep(rng.uniform(0.0, 0.012))  # a snapshot write takes about 10 ms
    elif read_until(proc, lines, "ready"):
        time.sleep(rng.uniform(0.0, 0.05))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # Read through the same buffered wrapper as readline (communicate() would lose what it buffered).
    lines.extend(proc.stdout.read().splitlines())
    err = proc.stderr.read()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    assert proc.returncode == -signal.SIGKILL, f"the writer exited by itself ({proc.returncode}): {err}"
    kill = Kill(proc.pid)
    for line in lines:
        word, *numbers = line.split()
        if word == "ready":
            kill.ready_at = int(numbers[0])
        elif word == "ack":
            kill.acks.append((int(numbers[0]), int(numbers[1])))
        elif word == "snap-begin":
            kill.open_snapshot = int(numbers[0])
        elif word == "snap-end":
            assert kill.open_snapshot == int(numbers[0]), line
            kill.open_snapshot = None
            kill.snapshots_done += 1
    return kill


def expected_creates(request: Request) -> list[AccessControlEntryRecord]:
    """The records a create request must write, in order."""
    return [record_from_acl(id_at(request.base + i), acl) for i, acl in enumerate(request.creates)]


class Reference:
    """An independent replay of the log: batch by batch, each checked against the writer's plan."""

    def __init__(self) -> None:
        self.acls: dict[str, AccessControlEntryRecord] = {}
        self.next_offset = 0

    def apply(self, batch: RecordBatch, context: str) -> None:
        assert batch.base_offset == self.next_offset, f"{context}: batch at {batch.base_offset}, not {self.next_offset}"
        request = plan(batch.base_offset, (r.principal for r in self.acls.values()))
        records = list(batch.records)
        where = f"{context}: batch at {batch.base_offset}"
        if request.delete_generation is None:
            assert records == expected_creates(request), f"{where}: not the planned creates"
            for record in records:
                assert isinstance(record, AccessControlEntryRecord)
                assert record.id not in self.acls, f"{where}: {record.id} created twice"
                self.acls[record.id] = record
        else:
            victims = {i for i, r in self.acls.items() if r.principal == f"{GENERATION}{request.delete_generation}"}
            removed = [r.id for r in records if isinstance(r, RemoveAccessControlEntryRecord)]
            assert len(removed) == len(records), f"{where}: a delete wrote a create"
            # The controller lists a filter's matches in its index order, which this replay does not model.
            assert sorted(removed) == sorted(victims), f"{where}: not the planned delete"
            for acl_id in removed:
                del self.acls[acl_id]
        self.next_offset = batch.next_offset


def digest(path: Path) -> str:
    return hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()


@dataclass
class Checker:
    """The checks after each kill; keeps the reference and the verified snapshots across rounds."""

    directory: Path
    counts: Counts = field(default_factory=Counts)
    reference: Reference = field(default_factory=Reference)
    verified: dict[Path, tuple[str, int]] = field(default_factory=dict)  # snapshot -> (digest, ACLs) when checked

    def check_snapshots(self, snapshots: dict[int, Path], ref: Reference, context: str) -> None:
        """Compare every not yet verified snapshot ending at the reference's offset with the reference."""
        path = snapshots.get(ref.next_offset)
        if path is None or path in self.verified:
            return
        reader = SnapshotReader(path)
        assert (reader.header.end_offset, reader.header.epoch) == (parse_name(path).end_offset, parse_name(path).epoch)
        content = {r.id: r for r in reader.records()}  # decodes every record after validating the framing
        assert content == ref.acls, f"{context}: {path.name} differs from the replay up to {ref.next_offset}"
        self.verified[path] = (digest(path), len(content))
        self.counts.snapshots_verified += 1

    def replay(self, log: FileLog, snapshots: dict[int, Path], full: bool, context: str) -> list[Span]:
        """Check and apply the batches the log holds beyond the reference (all of them when `full`)."""
        ref = Reference() if full else self.reference
        spans = []
        self.check_snapshots(snapshots, ref, context)
        for batch in log.read(ref.next_offset):
            ref.apply(batch, context)
            spans.append((batch.base_offset, batch.last_offset))
            self.check_snapshots(snapshots, ref, context)
        if full:
            assert ref.next_offset >= self.reference.next_offset
            self.reference = ref
        return spans

    def after_kill(self, kill: Kill, full: bool, context: str) -> None:
        """All the checks of one kill, in a directory no process writes to any more."""
        counts = self.counts
        counts.kills += 1
        counts.before_ready += kill.ready_at is None
        counts.acked += len(kill.acks)
        snapshots = self.list_snapshots(kill, context)
        high_watermark = self.check_log(kill, snapshots, full, context)
        self.check_restart(snapshots, high_watermark, context)
        self.check_snapshot_files(snapshots, high_watermark, context)

    def list_snapshots(self, kill: Kill, context: str) -> dict[int, Path]:
        """The snapshot files by end offset; temporaries and half-deleted files are never listed as snapshots."""
        paths = sorted(self.directory.glob("*.checkpoint"))
        snapshots = {parse_name(p).end_offset: p for p in paths}
        assert len(snapshots) == len(paths), f"{context}: two snapshots end at the same offset: {paths}"
        store = SnapshotStore(self.directory, RETAIN_SNAPSHOTS)
        assert [store.path(s) for s in store.list()] == paths, f"{context}: the store lists other files"
        parts = sorted(self.directory.glob(f"*{PART_SUFFIX}"))
        self.counts.parts_seen += len(parts)
        leftovers = len(list(self.directory.glob(f"*{DELETED_SUFFIX}")))
        self.counts.deleted_leftovers = max(self.counts.deleted_leftovers, leftovers)
        if kill.snapshots_done:  # its retention removed older temporaries: at most its own is left, cut short
            assert len(parts) <= 1 and all(p.name.endswith(f"-{kill.pid}{PART_SUFFIX}") for p in parts), parts
        return snapshots

    def check_log(self, kill: Kill, snapshots: dict[int, Path], full: bool, context: str) -> int:
        """(1) Every acknowledged batch, exactly as planned, plus at most the one in flight, whole; returns the HWM."""
        previous_end = self.reference.next_offset
        with FileLog(self.directory, read_only=True) as log:
            assert log.log_start_offset() == 0
            high_watermark = log.high_watermark()
            spans = self.replay(log, snapshots, full, context)
        assert self.reference.next_offset == high_watermark, f"{context}: the batches end before the high-water mark"
        new = [s for s in spans if s[0] >= previous_end]
        for prev, nxt in itertools.pairwise(new):
            assert nxt[0] == prev[1] + 1, f"{context}: gap between {prev} and {nxt}"
        # The batch in flight at the previous kill, beyond the durable end, was hidden from the previous check;
        # this writer kept it (it was whole, maybe acknowledged before a power loss) and started after it.
        hidden = 1 if kill.ready_at is not None and kill.ready_at != previous_end else 0
        if hidden:
            assert new[:1] and new[0][1] + 1 == kill.ready_at, f"{context}: the writer started at {kill.ready_at}"
        acked = new[hidden : hidden + len(kill.acks)]
        assert acked == kill.acks, f"{context}: acknowledged {kill.acks}, the log holds {new}"
        in_flight = new[hidden + len(kill.acks) :]
        assert len(in_flight) <= 1, f"{context}: more than one unacknowledged batch: {in_flight}"
        self.counts.unacked_durable += len(in_flight)
        if kill.open_snapshot is not None:
            self.counts.in_snapshot += 1
            self.counts.in_snapshot_renamed += kill.open_snapshot in snapshots
            if kill.ready_at is not None:  # a snapshot follows the append it covers: that batch is durable
                assert len(in_flight) == 1, f"{context}: killed in a snapshot, yet no batch in flight"
                assert new[-1][1] + 1 == kill.open_snapshot, f"{context}: snapshot {kill.open_snapshot} vs {new}"
            else:
                assert kill.open_snapshot == previous_end, f"{context}: start-up snapshot {kill.open_snapshot}"
        return high_watermark

    def check_restart(self, snapshots: dict[int, Path], high_watermark: int, context: str) -> None:
        """(2) A fresh node loads the newest snapshot, then the tail, and equals the replay."""
        node = AclNode(FileLog(self.directory, read_only=True), self.directory, CONFIG, None, RETAIN_SNAPSHOTS)
        node.start()
        try:
            newest = snapshots[max(snapshots)] if snapshots else None
            assert node.loaded_snapshot == newest, f"{context}: loaded {node.loaded_snapshot}, newest is {newest}"
            assert node.image.provenance.last_offset == high_watermark - 1, context
            expected = {i: acl_from_record(r) for i, r in self.reference.acls.items()}
            assert dict(node.image.acls) == expected, f"{context}: the restarted node differs from the replay"
        finally:
            node.close()

    def check_snapshot_files(self, snapshots: dict[int, Path], high_watermark: int, context: str) -> None:
        """(3) Every snapshot validates, covers no offset beyond the log and equals the replay (see `replay`)."""
        for end, path in snapshots.items():
            assert end <= high_watermark, f"{context}: {path.name} is ahead of the log ({high_watermark})"
            assert path in self.verified, f"{context}: {path.name} is not at a batch boundary"
            sha, size = self.verified[path]
            assert digest(path) == sha, f"{context}: {path.name} changed after it was written"
            assert SnapshotReader(path).validate() == size, f"{context}: {path.name}"
        for gone in set(self.verified) - set(snapshots.values()):
            del self.verified[gone]  # deleted by retention
        found = SnapshotStore(self.directory, RETAIN_SNAPSHOTS).latest_valid()
        newest = snapshots[max(snapshots)] if snapshots else None
        assert (found[0].path if found else None) == newest, f"{context}: the store picks {found}, not {newest}"


def kill_rounds(directory: Path, seed: int, rounds: int) -> Counts:
    """Kill a writer `rounds` times in `directory`, checking after each kill."""
    rng = random.Random(seed)
    checker = Checker(directory)
    proc = spawn(directory)
    try:
        for round_no in range(rounds):
            kill = kill_after_random_delay(proc, rng)
            proc = spawn(directory)  # imports while the checks run; touches nothing before "go"
            full = round_no % FULL_CHECK_EVERY == FULL_CHECK_EVERY - 1 or round_no == rounds - 1
            checker.after_kill(kill, full, f"seed={seed} round={round_no}")
    finally:
        proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    return checker.counts


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigkill_of_a_node_during_appends_and_snapshots_loses_nothing(tmp_path: Path) -> None:
    """One directory (log and snapshots together) persists across the kills.

    The state grows round after round and every writer starts from the snapshots and the log its
    killed predecessors left. The writer's requests are a pure function of the log offset and the
    state there (`kill_node_writer.plan`). After each kill: the log, opened read-only, holds every
    acknowledged batch with exactly the planned records, plus at most the one in-flight batch, whole;
    a fresh node (newest snapshot + tail) equals an independent replay of the log from offset 0;
    every `.checkpoint` validates and equals that replay at its end offset; no temporary file is
    listed or loaded as a snapshot. About a third of the kills wait for a snapshot write to begin,
    so that many land inside one. Fixed seed, printed in every failure message.
    """
    started = time.monotonic()
    counts = kill_rounds(tmp_path / "node", SEED, ROUNDS)
    elapsed = time.monotonic() - started
    print(f"seed={SEED}: {counts} in {elapsed:.1f}s")
    assert counts.kills == ROUNDS
    assert counts.in_snapshot >= MIN_KILLS_IN_SNAPSHOTS, "too few kills landed inside a snapshot write"
    assert counts.acked > ROUNDS  # the kills did land while appending
    assert counts.snapshots_verified >= MIN_KILLS_IN_SNAPSHOTS
