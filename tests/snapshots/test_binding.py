"""A snapshot belongs to one log at one batch boundary: copied from another log, ending inside a batch, with a
wrong epoch, beyond the log's end, without an id; retention by validity; strict headers and names."""

from __future__ import annotations

import logging
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftacl.authorizer.state.node import AclNode
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.backends.memory import MemoryLog
from kraftacl.metadata_log.errors import LogLostDataError
from kraftacl.snapshots import columns
from kraftacl.snapshots.binding import BackendView, Problem, unusable
from kraftacl.snapshots.errors import CorruptSnapshotError, SnapshotNameError
from kraftacl.snapshots.format import SnapshotHeader, SnapshotReader, read_snapshot_header
from kraftacl.snapshots.naming import SnapshotId, parse_name
from kraftacl.snapshots.store import SnapshotStore
from tests.metadata_log.contract import fill
from tests.snapshots.test_snapshots import records

# The log of every test: batches [0..2] [3..3] [4..7] [8..9], epochs 1, 1, 2, 3 (one writer each, reopened).
SESSIONS = [[3, 1], [4], [2]]


def build(directory: Path) -> FileLog:
    """The log above, reopened read-only."""
    for sizes in SESSIONS:
        with FileLog(directory) as log:
            fill(log, sizes)
    return FileLog(directory, read_only=True)


@pytest.fixture
def log(tmp_path: Path) -> FileLog:
    return build(tmp_path / "log")


def write(directory: Path, end: int, epoch: int, log_id: str | None, count: int = 2) -> Path:
    return SnapshotStore(directory, retain=0).write(SnapshotHeader(end, epoch, 0, log_id=log_id), records(count))


def verdict(log: FileLog, end: int, epoch: int, log_id: str | None = "same") -> Problem | None:
    header = SnapshotHeader(end, epoch, 0, log_id=log.log_id if log_id == "same" else log_id)
    found = unusable(header, BackendView(log))
    return None if found is None else found.problem


def test_the_rule_at_every_end_offset(log: FileLog) -> None:
    assert [(b.base_offset, b.epoch) for b in log.read()] == [(0, 1), (3, 1), (4, 2), (8, 3)]
    assert verdict(log, 0, 0) is None  # at the log start: nothing below to compare
    assert verdict(log, 3, 1) is None and verdict(log, 4, 1) is None
    assert verdict(log, 8, 2) is None and verdict(log, 10, 3) is None
    for inside in (1, 2, 5, 6, 7, 9):
        assert verdict(log, inside, 1) is Problem.INSIDE_BATCH
    assert verdict(log, 4, 2) is Problem.WRONG_EPOCH  # the batch [3..3] below offset 4 has epoch 1
    assert verdict(log, 10, 1) is Problem.WRONG_EPOCH
    assert verdict(log, 11, 3) is Problem.LOST
    assert verdict(log, 3, 1, log_id="AAAAAAAAAAAAAAAAAAAAAQ") is Problem.FOREIGN
    assert verdict(log, 3, 1, log_id=None) is Problem.FOREIGN  # this log was created with an identity


def test_a_snapshot_copied_from_another_log_is_skipped_loudly(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    mine, other = build(tmp_path / "mine"), build(tmp_path / "other")  # the same shape, another history
    copied = write(tmp_path / "other", 8, 2, other.log_id)
    shutil.copy(copied, tmp_path / "mine" / copied.name)
    node = AclNode(mine, snapshot_dir=tmp_path / "mine")
    with caplog.at_level(logging.WARNING):
        node.start()
    assert node.loaded_snapshot is None and node.image.provenance.next_offset == 10
    assert f"belongs to log {other.log_id}, not to this log ({mine.log_id})" in caplog.text
    assert copied.name in caplog.text
    node.close()


@pytest.mark.parametrize(("end", "epoch", "problem"), [(6, 2, "inside the batch at offsets 4..7"), (8, 1, "epoch 2")])
def test_a_snapshot_inside_a_batch_or_with_a_wrong_epoch_is_skipped(
    tmp_path: Path, log: FileLog, caplog: pytest.LogCaptureFixture, end: int, epoch: int, problem: str
) -> None:
    good = write(tmp_path / "log", 4, 1, log.log_id)
    write(tmp_path / "log", end, epoch, log.log_id)
    node = AclNode(log, snapshot_dir=tmp_path / "log")
    with caplog.at_level(logging.WARNING):
        node.start()
    assert node.loaded_snapshot == good  # the newest usable one
    assert problem in caplog.text
    node.close()


def test_a_log_ending_below_its_own_snapshot_is_refused_by_the_node(tmp_path: Path, log: FileLog) -> None:
    write(tmp_path / "log", 12, 3, log.log_id)  # taken when the log held offsets up to 12
    node = AclNode(log, snapshot_dir=tmp_path / "log")
    with pytest.raises(LogLostDataError, match=r"ends at offset 10, but its snapshot .*12-0000000003.checkpoint"):
        node.start()
    assert not node.authorizer.ready
    node.close()
    past = AclNode(FileLog(tmp_path / "log", read_only=True), snapshot_dir=tmp_path / "log")
    past.start(to_offset=8)  # a state in the past is still well defined
    assert past.image.provenance.next_offset == 8
    past.close()


def test_a_damaged_snapshot_beyond_the_end_proves_nothing(tmp_path: Path, log: FileLog) -> None:
    path = write(tmp_path / "log", 12, 3, log.log_id)
    data = bytearray(path.read_bytes())
    data[-20] ^= 0xFF
    path.write_bytes(bytes(data))
    node = AclNode(log, snapshot_dir=tmp_path / "log")
    node.start()
    assert node.image.provenance.next_offset == 10
    node.close()


def test_a_snapshot_at_or_below_the_log_start_is_usable(tmp_path: Path) -> None:
    backend = MemoryLog(log_start_offset=5)
    backend.append(records(2, start=50))  # the batch [5..6], epoch 0
    assert unusable(SnapshotHeader(5, 7, 0), BackendView(backend)) is None
    assert unusable(SnapshotHeader(3, 7, 0), BackendView(backend)) is None
    assert unusable(SnapshotHeader(7, 7, 0), BackendView(backend)) is not None


def test_legacy_snapshots_without_an_id_fit_only_a_legacy_log(tmp_path: Path) -> None:
    assert unusable(SnapshotHeader(0, 0, 0), BackendView(MemoryLog())) is None  # no identity: id-less ones fit
    found = unusable(SnapshotHeader(0, 0, 0, log_id="AAAAAAAAAAAAAAAAAAAAAQ"), BackendView(MemoryLog()))
    assert found is not None and found.problem is Problem.FOREIGN and "has no identity" in found.reason


# ---- retention by validity ------------------------------------------------------------------------------


def test_retention_counts_only_usable_snapshots_and_never_deletes_the_one_just_written(
    tmp_path: Path, log: FileLog
) -> None:
    d = tmp_path / "log"
    for end, epoch in ((3, 1), (4, 1), (8, 2)):
        write(d, end, epoch, log.log_id)
    inside = write(d, 9, 3, log.log_id)  # unusable: inside the batch [8..9]
    foreign = write(d, 10, 3, "AAAAAAAAAAAAAAAAAAAAAQ")  # another log's, and the newest name of all
    kafka = d / "00000000000000000002-0000000001.checkpoint"
    kafka.write_bytes(bytes(12) + b"a Kafka checkpoint")
    damaged = write(d, 10, 9, log.log_id)
    damaged.write_bytes(damaged.read_bytes()[:-3])
    store = SnapshotStore(d, retain=1, log=log)
    newest = store.write(SnapshotHeader(10, 3, 0, log_id=log.log_id), records(3))
    assert store.last_deleted == [SnapshotId(3, 1), SnapshotId(4, 1), SnapshotId(8, 2)]
    assert newest.exists() and inside.exists() and foreign.exists() and kafka.exists() and damaged.exists()
    assert store.check(parse_name(newest)) is None


def test_retention_keeps_the_just_written_one_even_when_newer_names_exist(tmp_path: Path, log: FileLog) -> None:
    d = tmp_path / "log"
    for end, epoch in ((4, 1), (8, 2)):
        write(d, end, epoch, log.log_id)
    store = SnapshotStore(d, retain=1, log=log)
    older = store.write(SnapshotHeader(3, 1, 0, log_id=log.log_id), records(1))  # e.g. replay --to-offset 3
    assert older.exists()
    assert store.last_deleted == [SnapshotId(4, 1)]  # (8, 2) is the newest usable; (3, 1) was just written


# ---- strict headers and names ---------------------------------------------------------------------------


def craft(path: Path, fields: str) -> Path:
    """A snapshot file whose header JSON is `fields` (CRC valid), followed by an empty body and footer."""
    meta = fields.encode()
    body = struct.pack(">8sHII", b"KACLSNAP", 2, len(meta), zlib.crc32(meta)) + meta
    footer = (0xFFFFFFFF).to_bytes(4, "big") + struct.pack(">QII8s", 0, 0, zlib.crc32(b""), b"KACLEND!")
    path.write_bytes(body + footer)
    return path


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ('{"end_offset": 1, "end_offset": 2, "epoch": 1, "timestamp_ms": 0, "writer_schema": ""}', "duplicate key"),
        ('{"end_offset": NaN, "epoch": 1, "timestamp_ms": 0, "writer_schema": ""}', "NaN is not a JSON number"),
        ('{"end_offset": 1, "epoch": 2147483648, "timestamp_ms": 0, "writer_schema": ""}', "epoch = 2147483648"),
        ('{"end_offset": -1, "epoch": 1, "timestamp_ms": 0, "writer_schema": ""}', "end_offset = -1"),
        ('{"end_offset": 1, "epoch": true, "timestamp_ms": 0, "writer_schema": ""}', "epoch = True"),
        ('{"end_offset": 1.5, "epoch": 1, "timestamp_ms": 0, "writer_schema": ""}', "end_offset = 1.5"),
        ('{"end_offset": 1, "epoch": 1, "timestamp_ms": 0, "writer_schema": "", "log_id": 7}', "log_id = 7"),
        ('{"end_offset": 1, "epoch": 1, "timestamp_ms": 0}', "missing 'writer_schema'"),
        ('{"a": ' * 50_000 + "1" + "}" * 50_000, "header field"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_a_header_out_of_limits_is_one_clear_error(tmp_path: Path, fields: str, fragment: str) -> None:
    path = craft(tmp_path / "00000000000000000001-0000000001.checkpoint", fields)
    with pytest.raises(CorruptSnapshotError, match="header field") as info:
        read_snapshot_header(path)
    assert fragment in str(info.value)
    with pytest.raises(CorruptSnapshotError):
        SnapshotReader(path)


def test_a_writer_refuses_a_header_out_of_limits(tmp_path: Path) -> None:
    for header in (SnapshotHeader(-1, 0, 0), SnapshotHeader(1, 2**31, 0), SnapshotHeader(1, 0, 0, log_id="x")):
        with pytest.raises(ValueError, match="not"):
            SnapshotStore(tmp_path).write(header, records(1))
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "name", ["99999999999999999999-0000000001.checkpoint", "00000000000000000001-9999999999.checkpoint"]
)
def test_a_snapshot_name_out_of_range_is_not_a_snapshot_name(name: str) -> None:
    with pytest.raises(SnapshotNameError, match="beyond int"):
        parse_name(name)


def test_a_long_string_in_a_chunk_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kraftacl.metadata_log.records import AccessControlEntryRecord

    big = records(1)[0]
    long_name = AccessControlEntryRecord(big.id, 2, "é" * 16_384, 3, "User:a", "*", 3, 3)  # 32768 UTF-8 bytes
    with pytest.raises(ValueError, match="32768 UTF-8 bytes, over Kafka's limit of 32767"):
        SnapshotStore(tmp_path).write(SnapshotHeader(1, 0, 0), [long_name])
    fits = AccessControlEntryRecord(big.id, 2, "é" * 16_383 + "a", 3, "User:a", "*", 3, 3)  # 32767 bytes
    path = SnapshotStore(tmp_path).write(SnapshotHeader(1, 0, 0), [fits])
    assert list(SnapshotReader(path).records()) == [fits]
    with monkeypatch.context() as patched:  # a file written by something that did not check: refused on read
        patched.setattr(columns, "_check_lengths", lambda strings, field: None)
        path = SnapshotStore(tmp_path).write(SnapshotHeader(2, 0, 0), [long_name])
    with pytest.raises(CorruptSnapshotError, match=r"resourceNames.*32768 UTF-8 bytes"):
        list(SnapshotReader(path).records())


@given(
    st.lists(st.text(alphabet="aé€", max_size=40), max_size=30),
    st.integers(0, 30),
    st.integers(columns._SHORT - 2, 3 * columns._SHORT),
)
def test_the_fast_length_screen_never_misses_a_long_entry(short: list[str], at: int, length: int) -> None:
    entries = [*short[:at], "é" * length, *short[at:]]
    text = "\0".join(entries)
    if length > columns._SHORT:  # it may flag shorter ones too (then every entry is checked exactly)
        assert columns._may_hold_long(text, "\0")
