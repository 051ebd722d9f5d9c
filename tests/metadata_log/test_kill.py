"""Crash safety of `FileLog`: SIGKILL a writer process at random points, 200 times, and check recovery.

One directory is reused across kills, so later writers recover after earlier crashes, segments roll
and kills land during startup, recovery, appends, fsyncs and segment creation. After each kill the
log is reopened (as writer on even rounds, which repairs a torn tail; read-only on odd rounds,
which leaves the repair to the next writer process) and must hold every acknowledged batch exactly,
plus at most one complete unacknowledged batch (the one in flight). Fixed seeds, printed on failure.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kraftacl.metadata_log.backends.file.format import iter_frames, read_segment_header
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.records import RecordBatch
from tests.metadata_log.factories import batch_size_at, records_for

SEED = 801_2024
ROUNDS = 200
SEGMENT_BYTES = 16 * 1024
FULL_CHECK_EVERY = 25
REPO = Path(__file__).resolve().parents[2]

Span = tuple[int, int]


def run_writer_until_killed(directory: Path, rng: random.Random) -> tuple[list[Span], int | None, str]:
    """Start the writer, SIGKILL it after a random delay; return its acks, exit status and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.metadata_log.kill_writer", str(directory), str(SEGMENT_BYTES)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    if rng.random() < 0.15:
        time.sleep(rng.uniform(0.0, 0.2))  # may land during imports, recovery or the epoch bump
        lines = []
    else:
        lines = [proc.stdout.readline()]  # "ready HWM": the log is open
        time.sleep(rng.uniform(0.0, 0.025))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # Read through the same buffered wrappers as readline above (communicate() would read the
    # raw pipes and lose lines already buffered in the wrapper).
    rest = proc.stdout.read()
    err = proc.stderr.read() if proc.stderr else ""
    proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()
    acks = []
    for line in lines + rest.splitlines():
        if line.strip() and not line.startswith("ready"):
            base, last = line.split()
            acks.append((int(base), int(last)))
    return acks, proc.returncode, err


def check_content(batch: RecordBatch, context: str) -> None:
    base = batch.base_offset
    assert len(batch.records) == batch_size_at(base, 60), f"{context}: wrong size at {base}"
    assert batch.records == tuple(records_for(base, len(batch.records))), f"{context}: content at {base}"
    assert batch.timestamp_ms == base, f"{context}: timestamp at {base}"


def verify(
    directory: Path, last_known: Span | None, acks: list[Span], writer: bool, full: bool, context: str
) -> tuple[Span | None, bool]:
    """Reopen and check the log after a kill; return the span of its last batch and if a tail was cut."""
    with FileLog(directory, read_only=not writer, segment_bytes=SEGMENT_BYTES) as log:
        recovered = log.recovery is not None
        start = 0 if full or last_known is None else last_known[0]
        batches = list(log.read(start))
        assert not batches or batches[-1].next_offset == log.high_watermark(), context
    spans = [(b.base_offset, b.last_offset) for b in batches]
    for prev, nxt in itertools.pairwise(spans):
        assert nxt[0] == prev[1] + 1, f"{context}: gap between {prev} and {nxt}"
    for b in batches:
        check_content(b, context)
    if last_known is not None:
        assert last_known in spans, f"{context}: the batch {last_known} seen before the kill is gone"
        new = spans[spans.index(last_known) + 1 :]
    else:
        new = spans
    # A batch in flight at the previous kill, beyond the durable end, was hidden from that round's reader;
    # this round's writer kept it (whole frames are never dropped), so it may come before this round's acks.
    skip = 1 if acks and new[:1] != acks[:1] else 0
    assert new[skip : skip + len(acks)] == acks, f"{context}: acknowledged {acks}, log holds {new}"
    after = new[skip + len(acks) :]
    assert len(after) <= (1 if acks else 2 - skip), f"{context}: unacknowledged batches {after} after {acks}"
    return (spans[-1] if spans else last_known), recovered


def maybe_tear_unacked_tail(directory: Path, last_known: Span | None, acks: list[Span], rng: random.Random) -> bool:
    """Half the time, cut the batch in flight (if any) mid-frame, as a kill inside write() would.

    A SIGKILL rarely lands inside the single pwrite of a frame, so without this the next writer's
    open would almost never have a torn tail to repair. Only a batch beyond the durable end (its
    fsync had not returned, so it was never acknowledged nor seen by a reader) is cut.
    """
    if rng.random() < 0.5:
        return False
    with FileLog(directory, read_only=True, recovering=True) as log:  # every whole frame, durable or not
        start = 0 if last_known is None else last_known[0]
        spans = [(b.base_offset, b.last_offset) for b in log.read(start)]
        segment = log.segment_paths()[-1] if spans else None
        durable_end = log.durable_end()
    new = spans[spans.index(last_known) + 1 :] if last_known in spans else spans
    if segment is None or not new or durable_end is None or new[-1][0] < durable_end:
        return False
    assert new[-1] not in acks, f"the acknowledged batch {new[-1]} lies beyond the durable end {durable_end}"
    with open(segment, "rb") as f:
        _, first = read_segment_header(f)
        frames = list(iter_frames(f, first, segment.stat().st_size, int(segment.name[:20])))
    last = frames[-1]
    assert (last.base_offset, last.base_offset + last.record_count - 1) == new[-1]
    os.truncate(segment, rng.randrange(last.position + 1, last.position + last.size))
    return True


def run_kills(directory: Path, seed: int, rounds: int) -> tuple[int, int, int]:
    """Kill a writer `rounds` times in `directory`, checking after each; return (acks, cut, repaired)."""
    rng = random.Random(seed)
    last_known: Span | None = None
    total_acks = torn = repaired = 0
    for round_no in range(rounds):
        acks, status, err = run_writer_until_killed(directory, rng)
        context = f"seed={seed} round={round_no}"
        assert status == -signal.SIGKILL, f"{context}: writer exited by itself ({status}): {err}"
        torn += maybe_tear_unacked_tail(directory, last_known, acks, rng)
        writer = round_no % 2 == 0
        full = round_no % FULL_CHECK_EVERY == 0 or round_no == rounds - 1
        last_known, recovered = verify(directory, last_known, acks, writer, full, context)
        repaired += recovered
        total_acks += len(acks)
    return total_acks, torn, repaired


@pytest.mark.slow
def test_sigkill_at_random_points_loses_no_acknowledged_batch(tmp_path: Path) -> None:
    """Two kill sequences run side by side (one per core), ROUNDS kills in total."""
    started = time.monotonic()
    seeds = (SEED, SEED + 1)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(run_kills, tmp_path / f"log-{s}", s, ROUNDS // 2) for s in seeds]
        results = [f.result() for f in futures]
    acks = sum(r[0] for r in results)
    torn = sum(r[1] for r in results)
    repaired = sum(r[2] for r in results)
    elapsed = time.monotonic() - started
    print(f"seeds={seeds}: {ROUNDS} kills, {acks} acked, {torn} tails torn, {repaired} repaired, {elapsed:.1f}s")
    assert acks > ROUNDS  # the kills did land while appending
    assert torn > 0
