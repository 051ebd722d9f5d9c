"""fold and changes against the single-process replay, on randomized logs, in real PySpark (local mode).

fold at several offsets must write the snapshot a node writes at that offset (the same ACLs with the same
ids, the same header) and that file must verify; changes must list exactly what `kraft-acl diff` lists, with
the offsets of the records.
"""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kraftacl.authorizer.errors import ImageError
from kraftacl.authorizer.state.records import acl_from_record
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec.avro import new_uuid
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from kraftacl.pipeline.errors import PipelineError
from kraftacl.pipeline.jobs import fold as fold_module
from kraftacl.pipeline.jobs.changes import changes
from kraftacl.pipeline.jobs.fold import fold, state_at
from kraftacl.pipeline.session import local_driver_memory
from kraftacl.pipeline.sources.events import ACL_FIELDS
from kraftacl.pipeline.sources.log import LogSource, load_events
from kraftacl.pipeline.sources.log_events import LogEvents
from kraftacl.snapshots.format import SnapshotReader
from kraftacl.snapshots.store import SnapshotStore
from tests.pipeline.logs import GeneratedLog, random_log
from tests.pipeline.replay import replayed_node

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedLog:
    return random_log(tmp_path_factory.mktemp("pipeline-log") / "meta", seed=18, batches=60)


@pytest.fixture(scope="module")
def events(spark: SparkSession, generated: GeneratedLog) -> LogEvents:
    return load_events(spark, LogSource(log_dir=generated.directory))


def _offsets(generated: GeneratedLog, count: int) -> list[int]:
    boundaries = generated.boundaries()
    return sorted({0, generated.high_watermark, *random.Random(7).sample(boundaries, count)})


def test_the_log_spans_several_segments(generated: GeneratedLog, events: LogEvents) -> None:
    with FileLog(generated.directory, read_only=True) as log:
        assert len(log.read_plan(0)) >= 3
    assert (events.log_start, events.high_watermark) == (0, generated.high_watermark)


def test_fold_writes_the_snapshot_a_node_writes_at_that_offset(
    generated: GeneratedLog, events: LogEvents, tmp_path: Path
) -> None:
    for offset in _offsets(generated, 2):
        epoch = max((e for base, e, _, _ in generated.batches if base < offset), default=0)
        folded = fold(events, offset, tmp_path / f"fold-{offset}.checkpoint")
        reader = SnapshotReader(folded.path)
        assert reader.verify() == folded.acls
        node = replayed_node(generated.directory, offset)
        try:
            expected = dict(node.image.acls.items())
            node.snapshots = SnapshotStore(tmp_path / f"node-{offset}")
            written = node.take_snapshot()
        finally:
            node.close()
        assert {r.id: acl_from_record(r) for r in reader.records()} == expected, f"offset {offset}"
        header, node_header = reader.header, SnapshotReader(written).header
        assert (header.end_offset, header.epoch) == (node_header.end_offset, node_header.epoch) == (offset, epoch)
        assert header.log_id == node_header.log_id == events.log_id is not None  # bound to this log (issue #15)
        if offset:  # at 0 both stamp the time of writing
            assert header.timestamp_ms == node_header.timestamp_ms


def test_fold_streams_the_state_in_snapshot_order_across_partitions_and_chunks(
    generated: GeneratedLog, events: LogEvents, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver receives the sorted state a partition at a time and writes it in chunks: none is lost,
    repeated or out of order."""
    monkeypatch.setattr(fold_module, "CHUNK_RECORDS", 7)
    offset = generated.high_watermark
    folded = fold(events, offset, tmp_path / "small-chunks.checkpoint")
    written = [record.id for record in SnapshotReader(folded.path).records()]
    ordered = state_at(events, offset).orderBy(*fold_module.SNAPSHOT_ORDER).select("id").collect()
    assert written == [row["id"] for row in ordered]
    assert len(written) > 7 * 3 and folded.acls == len(written)


def test_the_state_at_a_time_is_after_the_last_batch_written_by_then(
    generated: GeneratedLog, events: LogEvents
) -> None:
    base, _, ts, records = generated.batches[len(generated.batches) // 2]
    assert events.offset_at_time(ts) == base + len(records)
    assert events.offset_at_time(ts + 999) == base + len(records)
    assert events.offset_at_time(0) == 0


def test_changes_lists_what_diff_lists_with_the_records_offsets(generated: GeneratedLog, events: LogEvents) -> None:
    offsets = _offsets(generated, 2)
    located = generated.record_offsets()
    for start, end in pairwise(offsets):
        nodes = [replayed_node(generated.directory, o) for o in (start, end)]
        try:
            before, after = (dict(n.image.acls.items()) for n in nodes)
        finally:
            for n in nodes:
                n.close()
        rows = changes(events.events, start, end).collect()
        got = {(r["change"], r["id"]): r for r in rows}
        expected = {("added", i) for i in after.keys() - before.keys()} | {
            ("removed", i) for i in before.keys() - after.keys()
        }
        assert got.keys() == expected, f"{start} -> {end}"
        for (change, acl_id), row in got.items():
            record = AccessControlEntryRecord(acl_id, *(row[field] for field in ACL_FIELDS))
            assert acl_from_record(record) == (after if change == "added" else before)[acl_id]
            wanted = AccessControlEntryRecord if change == "added" else RemoveAccessControlEntryRecord
            offset, _, base, epoch, ts = max(
                item for item in located if item[0] < end and item[1].id == acl_id and type(item[1]) is wanted
            )
            assert (row["offset"], row["batch"], row["epoch"], row["ts"]) == (offset, base, epoch, ts)


def test_an_offset_inside_a_batch_is_refused(generated: GeneratedLog, events: LogEvents) -> None:
    base, _, _, records = next(b for b in generated.batches if len(b[3]) > 1)
    with pytest.raises(PipelineError, match=rf"inside the batch at offsets {base}\.\.{base + len(records) - 1}"):
        state_at(events, base + 1)
    with pytest.raises(PipelineError, match="beyond the high-water mark"):
        state_at(events, generated.high_watermark + 1)


def test_a_log_the_replay_refuses_is_refused_with_the_same_words(spark: SparkSession, tmp_path: Path) -> None:
    directory = tmp_path / "bad"
    acl = (2, "orders", 3, "User:alice", "*", 3, 3)
    first = new_uuid()
    with FileLog(directory) as log:
        log.append([AccessControlEntryRecord(first, *acl)])
        log.append([RemoveAccessControlEntryRecord(first), RemoveAccessControlEntryRecord(first)])
    with pytest.raises(ImageError) as replay:
        replayed_node(directory, 3).close()
    with pytest.raises(PipelineError) as folded:
        state_at(load_events(spark, LogSource(log_dir=directory)), 3)
    assert str(folded.value) == str(replay.value)


def test_a_local_driver_gets_its_heap_from_the_machine(spark: SparkSession) -> None:
    """Local mode: the driver JVM was started with a quarter of the machine's memory, not Spark's 1g."""
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()  # type: ignore[union-attr]
    assert spark.sparkContext.getConf().get("spark.driver.memory") == local_driver_memory()
    assert heap > int(local_driver_memory()[:-1]) * 0.8 * 2**30
