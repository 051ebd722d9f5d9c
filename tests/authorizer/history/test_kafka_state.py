"""The ACL state of Kafka's own metadata at an offset: snapshots, the log tail, metadata transactions (committed,
aborted, unfinished, malformed), batch boundaries, and every offset checked against a direct model."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftacl.authorizer.history.kafka_state import KafkaStateError
from kraftacl.authorizer.history.metadata_source import SourceFormat, read_state
from kraftacl.metadata_log.errors import CorruptLogError
from kraftacl.metadata_log.kafka_files.files import PARTITION_DIR
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from tests.metadata_log import kafka_files as kf


def _acl(n: int) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(f"AAAAAAAAQACAAAAAAAAAA{'AQgw'[n]}", 2, f"t{n}", 3, "User:a", "*", 3, 3)


A, B, C, D = (_acl(n) for n in range(4))
# offset: 0 leader change | 1 A | 2 Begin, 3 B, 4 NoOp | 5 End | 6 Begin, 7 C | 8 Abort
#         9 remove A, 10 D | 11 Begin, 12 C (never ended)
LOG = [
    kf.batch(0, [kf.LEADER_CHANGE], is_control=True),
    kf.batch(1, [(None, kf.ace(A))]),
    kf.batch(2, [(None, kf.BEGIN), (None, kf.ace(B)), (None, kf.NO_OP)]),
    kf.batch(5, [(None, kf.END)]),
    kf.batch(6, [(None, kf.BEGIN), (None, kf.ace(C))]),
    kf.batch(8, [(None, kf.ABORT)]),
    kf.batch(9, [(None, kf.remove(RemoveAccessControlEntryRecord(A.id))), (None, kf.ace(D))]),
    kf.batch(11, [(None, kf.BEGIN), (None, kf.ace(C))]),
]
BOUNDARIES = [0, 1, 2, 5, 6, 8, 9, 11, 13]
# What a reader that knows the rules by heart expects at each batch boundary.
EXPECTED = {0: set(), 1: set(), 2: {A}, 5: {A}, 6: {A, B}, 8: {A, B}, 9: {A, B}, 11: {B, D}, 13: {B, D}}


def _ids(path: Path, offset: int | None = None) -> set[str]:
    return set(read_state(path, offset).image.acls)


def test_every_boundary_of_a_log_with_transactions(tmp_path: Path) -> None:
    kf.write_log(tmp_path / PARTITION_DIR, LOG)
    for offset in BOUNDARIES:
        assert _ids(tmp_path, offset) == {r.id for r in EXPECTED[offset]}, offset
    state = read_state(tmp_path)
    assert state.format is SourceFormat.KAFKA_LOG and state.high_watermark == 13
    assert state.image.provenance.next_offset == 13 and state.snapshot is None
    assert any("begun at offset 11 is not finished" in note for note in state.notes)


def test_offsets_inside_a_batch_are_refused_with_both_boundaries(tmp_path: Path) -> None:
    kf.write_log(tmp_path / PARTITION_DIR, LOG)
    with pytest.raises(KafkaStateError, match=r"offset 3 is inside the batch at offsets 2..4: .* use 2 or 5"):
        read_state(tmp_path, 3)


def test_snapshot_then_tail_and_a_log_that_lost_its_start(tmp_path: Path) -> None:
    directory = tmp_path / PARTITION_DIR
    kf.write_log(directory, LOG[6:], base=9)  # retention removed offsets 0..8
    with pytest.raises(KafkaStateError, match="starts at offset 9 and no snapshot"):
        read_state(tmp_path)
    kf.write_snapshot(directory, 9, [A, B])  # the state below 9, as the broker snapshotted it
    state = read_state(tmp_path)
    assert set(state.image.acls) == {B.id, D.id} and state.snapshot == directory / f"{9:020d}-{1:010d}.checkpoint"
    assert _ids(tmp_path, 9) == {A.id, B.id}


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([kf.BEGIN, kf.BEGIN], "offset 1: BeginTransactionRecord inside the transaction begun at 0"),
        ([kf.END], "offset 0: END_TRANSACTION_RECORD without a BeginTransactionRecord"),
        ([kf.ABORT], "offset 0: ABORT_TRANSACTION_RECORD without a BeginTransactionRecord"),
    ],
)
def test_malformed_transactions_name_the_offset(tmp_path: Path, records: list[bytes], message: str) -> None:
    kf.write_log(tmp_path / PARTITION_DIR, [kf.batch(0, [(None, r) for r in records])])
    with pytest.raises(KafkaStateError, match=message):
        read_state(tmp_path)


def test_a_removal_of_an_unknown_acl_and_damage_name_the_offset_or_byte(tmp_path: Path) -> None:
    kf.write_log(
        tmp_path / "a" / PARTITION_DIR, [kf.batch(0, [(None, kf.remove(RemoveAccessControlEntryRecord(A.id)))])]
    )
    with pytest.raises(Exception, match="offset 0: RemoveAccessControlEntryRecord names ACL"):
        read_state(tmp_path / "a")
    data = bytearray(b"".join(LOG))
    data[len(LOG[0]) + 40] ^= 1  # inside the second batch (byte position len(LOG[0]))
    (tmp_path / "b" / PARTITION_DIR).mkdir(parents=True)
    (tmp_path / "b" / PARTITION_DIR / f"{0:020d}.log").write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match=f"at byte position {len(LOG[0])}: batch CRC-32C mismatch"):
        read_state(tmp_path / "b")


def test_one_segment_file_and_one_checkpoint_are_sources_too(tmp_path: Path) -> None:
    segment = kf.write_log(tmp_path / PARTITION_DIR, LOG)
    assert _ids(segment) == {B.id, D.id}
    checkpoint = kf.write_snapshot(tmp_path / "snap", 4, [A, C])
    state = read_state(checkpoint)
    assert state.format is SourceFormat.KAFKA_SNAPSHOT and set(state.image.acls) == {A.id, C.id}
    assert state.image.provenance.last_offset == 3
