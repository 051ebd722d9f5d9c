"""Reading Apache Kafka's KRaft files: the golden snapshot Kafka's code wrote, the spec's verified record bytes,
frames and control records, damage at every byte, torn tails, gaps, and telling Kafka's files from ours."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.errors import CorruptLogError
from kraftacl.metadata_log.kafka_files.batches import TornTail, read_batches
from kraftacl.metadata_log.kafka_files.files import PARTITION_DIR, SnapshotFile, locate
from kraftacl.metadata_log.kafka_files.messages import ControlRecord, OtherRecord, TransactionMarker, decode_metadata
from kraftacl.metadata_log.kafka_files.reader import log_batches, read_snapshot
from kraftacl.metadata_log.kafka_files.wire import WireError
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from tests.metadata_log import kafka_files as kf

GOLDEN = Path("/work/shared/spec/golden/00000000000000000004-0000000001.checkpoint")
if not GOLDEN.is_file():  # CI lays shared/ beside the clone; the copy in tests/ is the same bytes
    GOLDEN = Path(__file__).parents[1] / "shell/data/kafka-golden/00000000000000000004-0000000001.checkpoint"
GOLDEN_ACLS = [
    AccessControlEntryRecord("QZDDv-R7SyaPgetDPGd0Mw", 2, "foo", 3, "User:bob", "*", 3, 3),
    AccessControlEntryRecord("SdDjEdlbRmy2__WFKe3RMg", 3, "grp-", 4, "User:*", "10.0.0.1", 8, 2),
]
# Spec §14.2: Kafka's generated serializer's bytes for this record (39 bytes) and its removal (20 bytes).
VERIFIED = bytes.fromhex("0112004190c3bfe47b4b268f81eb433c6774330204666f6f0309557365723a626f62022a030300")
VERIFIED_ID = "QZDDv-R7SyaPgetDPGd0Mw"


def test_golden_snapshot_reads_as_kafka_wrote_it() -> None:
    snapshot = read_snapshot(SnapshotFile(4, 1, GOLDEN))
    batches = [d.batch for d in snapshot.batches]
    assert [(b.base_offset, b.last_offset, b.size, b.crc) for b in batches] == [
        (0, 0, 83, 0xC7AC7804),
        (1, 2, 159, 0x186A45CA),
        (3, 3, 75, 0x8F6608E6),
    ]
    assert [b.is_control for b in batches] == [True, False, True] and {b.epoch for b in batches} == {1}
    assert snapshot.last_contained_timestamp == 1_700_000_000_000
    assert list(snapshot.acl_records()) == GOLDEN_ACLS
    header = snapshot.batches[0].entries[0][1]
    assert isinstance(header, ControlRecord) and header.name == "SnapshotHeader"


def test_the_test_writer_reproduces_kafka_bytes(tmp_path: Path) -> None:
    """The helper that builds synthetic logs writes exactly what Kafka writes (else its tests prove nothing)."""
    assert kf.ace(GOLDEN_ACLS[0]) == VERIFIED
    assert kf.remove(RemoveAccessControlEntryRecord(VERIFIED_ID)) == b"\x01\x13" + VERIFIED[2:19] + b"\x00"
    assert kf.write_snapshot(tmp_path, 4, GOLDEN_ACLS).read_bytes() == GOLDEN.read_bytes()


def test_metadata_frames() -> None:
    assert decode_metadata(VERIFIED) == GOLDEN_ACLS[0]
    assert decode_metadata(kf.remove(RemoveAccessControlEntryRecord(VERIFIED_ID))) == RemoveAccessControlEntryRecord(
        VERIFIED_ID
    )
    assert decode_metadata(kf.BEGIN) == TransactionMarker("BEGIN")
    assert decode_metadata(b"\x01\x17\x00\x01\x00\x04\x04abc") == TransactionMarker("BEGIN", "abc")  # tag 0: Name
    assert decode_metadata(kf.ABORT) == TransactionMarker("ABORT")
    assert decode_metadata(kf.FEATURE_LEVEL) == OtherRecord(12, 0, len(kf.FEATURE_LEVEL))
    assert decode_metadata(b"\x01\x63\x05zz") == OtherRecord(99, 5, 5)  # a newer type: skipped by its frame
    unknown_tag = decode_metadata(VERIFIED[:-1] + b"\x01\x07\x02hi")  # unknown tag kept aside
    assert isinstance(unknown_tag, AccessControlEntryRecord) and unknown_tag.principal == "User:bob"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"\x00\x12\x00", "frame version 0"),
        (b"\x02\x12\x00", "unknown metadata frame version 2"),
        (VERIFIED[:2] + b"\x01" + VERIFIED[3:], "cannot read version 1 of ACCESS_CONTROL_ENTRY_RECORD"),
        (VERIFIED + b"\x00", r"1 byte\(s\) of garbage after 18"),
        (VERIFIED[:20] + b"\x00" + VERIFIED[24:], "non-nullable field ResourceName was serialized as null"),
        (VERIFIED[:30], "needs"),
        (b"\x01\xff\xff\x03\x00", "too large"),
    ],
)
def test_bad_frames_name_the_problem(value: bytes, reason: str) -> None:
    with pytest.raises(WireError, match=reason):
        decode_metadata(value)


def test_damage_at_every_byte_of_the_golden_snapshot_is_caught(tmp_path: Path) -> None:
    """Each flipped byte: one CorruptLogError naming the file and a batch position, never another exception.

    Only a batch's partitionLeaderEpoch (bytes 12..15) lies outside the CRC with nothing to check it
    against (Kafka's reader cannot tell either); base offsets are checked to run on from 0.
    """
    data = GOLDEN.read_bytes()
    path = tmp_path / GOLDEN.name
    epochs = {start + k for start in (0, 83, 242) for k in range(12, 16)}
    for position in sorted(set(range(len(data))) - epochs):
        path.write_bytes(data[:position] + bytes([data[position] ^ 0x5A]) + data[position + 1 :])
        with pytest.raises(CorruptLogError) as caught:
            read_snapshot(SnapshotFile(4, 1, path))
        assert str(path) in str(caught.value) and caught.value.position in (0, 83, 242), position


def test_truncation_is_a_torn_tail_only_where_allowed(tmp_path: Path) -> None:
    data = GOLDEN.read_bytes()
    for cut in (10, 83 + 30, len(data) - 1):
        torn: list[TornTail] = []
        batches = list(read_batches(data[:cut], tmp_path / "x.log", torn))
        assert [t.position for t in torn] == [max(p for p in (0, 83, 242) if p < cut)]
        assert len(batches) == len([p for p in (83, 242, len(data)) if p <= cut])
        with pytest.raises(CorruptLogError, match="truncated batch"):
            list(read_batches(data[:cut], tmp_path / "x.log"))


def _log(tmp_path: Path) -> Path:
    acl = AccessControlEntryRecord("AAAAAAAAQACAAAAAAAAAAA", 2, "t", 3, "User:a", "*", 3, 3)
    return kf.write_log(
        tmp_path / PARTITION_DIR,
        [
            kf.batch(0, [kf.LEADER_CHANGE], is_control=True),
            kf.batch(1, [(None, kf.BEGIN), (None, kf.FEATURE_LEVEL), (None, kf.END)]),
            kf.batch(4, [(None, kf.ace(acl)), (None, kf.NO_OP)]),
        ],
    )


def test_log_batches_across_segments_and_their_checks(tmp_path: Path) -> None:
    segment = _log(tmp_path)
    files = locate(tmp_path)
    assert files is not None and files.directory == tmp_path / PARTITION_DIR
    decoded = list(log_batches(files))
    assert [(d.batch.base_offset, d.batch.last_offset) for d in decoded] == [(0, 0), (1, 3), (4, 5)]
    assert [type(e).__name__ for _, e in decoded[1].entries] == [
        "TransactionMarker",
        "OtherRecord",
        "TransactionMarker",
    ]
    assert [d.batch.base_offset for d in log_batches(files, from_offset=5)] == [4]
    # a second segment must continue where the first ended
    (segment.parent / f"{7:020d}.log").write_bytes(kf.batch(7, [(None, kf.NO_OP)]))
    with pytest.raises(CorruptLogError, match="gap: expected a batch at offset 6, found 7"):
        list(log_batches(locate(tmp_path)))  # type: ignore[arg-type]
    # a torn tail in a segment that is not the newest is damage
    (segment.parent / f"{7:020d}.log").rename(segment.parent / f"{6:020d}.log")
    segment.write_bytes(segment.read_bytes()[:-5])
    with pytest.raises(CorruptLogError, match="truncated batch"):
        list(log_batches(locate(tmp_path)))  # type: ignore[arg-type]


def test_kafka_files_are_told_from_kraft_acl_files(tmp_path: Path) -> None:
    ours = tmp_path / "ours"
    with FileLog(ours) as log:
        log.append(GOLDEN_ACLS)
    assert locate(ours) is None and locate(tmp_path / "missing") is None
    _log(tmp_path / "kafka")
    for path in (
        tmp_path / "kafka",
        tmp_path / "kafka" / PARTITION_DIR,
        tmp_path / "kafka" / PARTITION_DIR / f"{0:020d}.log",
    ):
        assert locate(path) is not None, path
    shutil.copy(GOLDEN, ours / GOLDEN.name)  # a stray Kafka snapshot beside kraft-acl segments: still ours
    assert locate(ours) is None
    found = locate(ours / GOLDEN.name)
    assert found is not None and found.snapshots == (SnapshotFile(4, 1, ours / GOLDEN.name),)
