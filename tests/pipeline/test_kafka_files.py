"""The jobs on Apache Kafka's own KRaft files, in real PySpark: fold equals `read_state` (the library's replay of
Kafka's files) at many offsets of generated logs with metadata transactions, snapshots and lost segments;
changes equals the difference of two such states; the golden `.checkpoint`; damage named as the library names it.
"""

from __future__ import annotations

import random
import shutil
from itertools import pairwise
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.history.metadata_source import read_state
from kraftacl.authorizer.state.records import acl_from_record
from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.kafka_files.files import PARTITION_DIR
from kraftacl.metadata_log.records import AccessControlEntryRecord
from kraftacl.pipeline.errors import PipelineError
from kraftacl.pipeline.jobs.changes import changes
from kraftacl.pipeline.jobs.fold import fold, state_at
from kraftacl.pipeline.sources.events import ACL_FIELDS
from kraftacl.pipeline.sources.log import LogSource, load_events
from kraftacl.pipeline.sources.log_events import LogEvents
from kraftacl.snapshots.format import SnapshotReader
from tests.authorizer.history.test_kafka_state import BOUNDARIES, EXPECTED, LOG, A, B
from tests.metadata_log import kafka_files as kf
from tests.pipeline.kafka_logs import KafkaGenerated, random_kafka_log

pytestmark = pytest.mark.spark
GOLDEN = Path("/work/shared/spec/golden/00000000000000000004-0000000001.checkpoint")


def _load(spark: SparkSession, path: Path) -> LogEvents:
    return load_events(spark, LogSource(log_dir=path))


def _state(events: LogEvents, offset: int) -> dict[str, object]:
    rows = state_at(events, offset).collect()
    return {r["id"]: acl_from_record(AccessControlEntryRecord(r["id"], *(r[f] for f in ACL_FIELDS))) for r in rows}


def _expected(path: Path, offset: int) -> dict[str, object]:
    return dict(read_state(path, offset).image.acls.items())


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> KafkaGenerated:
    return random_kafka_log(tmp_path_factory.mktemp("kafka-log"), seed=18, batches=50)


@pytest.fixture(scope="module")
def events(spark: SparkSession, generated: KafkaGenerated) -> LogEvents:
    return _load(spark, generated.directory.parent)


def _offsets(generated: KafkaGenerated, count: int, seed: int = 7) -> list[int]:
    picked = random.Random(seed).sample(generated.boundaries(), count)
    return sorted({0, generated.high_watermark, *picked})


def test_fold_equals_the_librarys_replay_of_kafka_files(
    generated: KafkaGenerated, events: LogEvents, tmp_path: Path
) -> None:
    root = generated.directory.parent
    assert events.high_watermark == generated.high_watermark == read_state(root).high_watermark
    inside = [b for b in generated.boundaries() if read_state(root, b).notes]  # states with a transaction open
    assert inside, "the generated log has states inside a transaction"
    for offset in sorted({*_offsets(generated, 5), *inside[:2]}):
        assert _state(events, offset) == _expected(root, offset), f"offset {offset}"
    offset = _offsets(generated, 1, seed=3)[1]
    folded = fold(events, offset, tmp_path / "state.checkpoint")
    reader = SnapshotReader(folded.path)
    assert reader.verify() == folded.acls
    assert {r.id: acl_from_record(r) for r in reader.records()} == _expected(root, offset)
    provenance = read_state(root, offset).image.provenance
    assert (reader.header.end_offset, reader.header.epoch, reader.header.timestamp_ms) == (
        provenance.next_offset,
        provenance.epoch,
        provenance.timestamp_ms,
    )


def test_changes_is_the_difference_of_the_two_states(generated: KafkaGenerated, events: LogEvents) -> None:
    root = generated.directory.parent
    for start, end in pairwise(_offsets(generated, 3, seed=11)):
        before, after = _expected(root, start), _expected(root, end)
        view = events.for_states(start, end)
        rows = changes(view.events, view.cut(start), view.cut(end)).collect()
        got = {(r["change"], r["id"]) for r in rows}
        assert got == {("added", i) for i in after.keys() - before.keys()} | {
            ("removed", i) for i in before.keys() - after.keys()
        }, f"{start} -> {end}"


def test_transactions_apply_at_their_end_and_never_when_aborted_or_unfinished(
    spark: SparkSession, tmp_path: Path
) -> None:
    kf.write_log(tmp_path / PARTITION_DIR, LOG)  # the #16 log: committed, aborted and unfinished transactions
    events = _load(spark, tmp_path)
    for offset in BOUNDARIES:
        assert set(_state(events, offset)) == {r.id for r in EXPECTED[offset]}, offset
    with pytest.raises(PipelineError, match=r"offset 3 is inside the batch at offsets 2\.\.4: .* use 2 or 5"):
        state_at(events, 3)


def test_a_snapshot_is_the_base_and_lost_segments_are_refused_as_the_library_refuses_them(
    spark: SparkSession, generated: KafkaGenerated, tmp_path: Path
) -> None:
    root = tmp_path / "snap"
    shutil.copytree(generated.directory, root / PARTITION_DIR)
    first_kept = generated.segment_bases[1]
    candidates = [b for b in generated.boundaries() if b >= first_kept and not read_state(root, b).notes]
    at = candidates[0]
    kf.write_snapshot(root / PARTITION_DIR, at, [acl for acl in _records(root, at)], epoch=2, timestamp=kf.T0 + 5)
    (root / PARTITION_DIR / f"{0:020d}.log").unlink()  # retention removed the first segment
    events = _load(spark, root)
    for offset in sorted({at, *random.Random(5).sample([b for b in generated.boundaries() if b >= at], 2)}):
        assert _state(events, offset) == _expected(root, offset), f"offset {offset}"
    folded = fold(events, at, tmp_path / "at.checkpoint")
    assert (folded.header.end_offset, folded.header.epoch, folded.header.timestamp_ms) == (at, 2, kf.T0 + 5)
    below = next(b for b in generated.boundaries() if 0 < b < first_kept)
    with pytest.raises(AuthorizerError, match="are gone"):
        read_state(root, below)
    with pytest.raises(PipelineError, match=f"starts at offset {first_kept} and no snapshot ends between 0 and"):
        state_at(events, below)


def _records(root: Path, offset: int) -> list[AccessControlEntryRecord]:
    return list(read_state(root, offset).image.records())


def test_the_golden_checkpoint_folds_to_what_the_library_reads(spark: SparkSession, tmp_path: Path) -> None:
    directory = tmp_path / PARTITION_DIR
    directory.mkdir()
    shutil.copy(GOLDEN, directory / GOLDEN.name)
    events = _load(spark, directory)
    folded = fold(events, 4, tmp_path / "golden.checkpoint")
    reader = SnapshotReader(folded.path)
    assert reader.verify() == folded.acls > 0
    assert {r.id: acl_from_record(r) for r in reader.records()} == _expected(directory, 4)


def test_damage_and_malformed_transactions_are_named_as_the_library_names_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged"
    segment = kf.write_log(damaged / PARTITION_DIR, LOG)
    data = bytearray(segment.read_bytes())
    data[len(kf.batch(0, [kf.LEADER_CHANGE], is_control=True)) + 70] ^= 0xFF  # a byte of the second batch
    segment.write_bytes(bytes(data))
    with pytest.raises(LogError) as library:
        read_state(damaged)
    with pytest.raises(PipelineError) as pipeline:
        _load(spark, damaged)
    assert str(pipeline.value) == str(library.value)
    nested = tmp_path / "nested"
    first: kf.Record = (None, kf.ace(A))
    pending: list[kf.Record] = [(None, kf.BEGIN), (None, kf.ace(B))]
    kf.write_log(nested / PARTITION_DIR, [kf.batch(0, [first]), kf.batch(1, pending), kf.batch(3, [(None, kf.BEGIN)])])
    events = _load(spark, nested)
    assert set(_state(events, 3)) == set(read_state(nested, 3).image.acls) == {A.id}  # the second Begin not reached
    with pytest.raises(AuthorizerError) as replay:
        read_state(nested, 4)
    with pytest.raises(PipelineError) as folded:
        state_at(events, 4)
    assert str(folded.value) == str(replay.value)
