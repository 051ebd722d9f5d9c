"""The `snapshots` package: file names, the checksummed file format (all-or-nothing), the store and retention.

Every damaged file must be refused as a whole with a `CorruptSnapshotError` that names a byte
position; a reader never hands out the records of a file that does not validate completely.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftacl.metadata_log.codec.avro import uuid_to_text
from kraftacl.metadata_log.records import AccessControlEntryRecord
from kraftacl.snapshots.errors import CorruptSnapshotError, SnapshotError, SnapshotNameError
from kraftacl.snapshots.format import CHUNK_RECORDS, SnapshotHeader, SnapshotReader
from kraftacl.snapshots.naming import DELETED_SUFFIX, PART_SUFFIX, SUFFIX, SnapshotId, parse_name
from kraftacl.snapshots.store import SnapshotStore


def acl_id(n: int) -> str:
    """A valid Kafka Uuid text, distinct for every n (never starting with '-', never zero)."""
    raw = bytearray(n.to_bytes(16, "big"))
    raw[0] = 0x40 | (n % 0x3F)
    raw[15] |= 0x02
    return uuid_to_text(bytes(raw))


def record(n: int) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=acl_id(n),
        resource_type=2 + n % 6,
        resource_name=f"topic-{n}-é",
        pattern_type=3 + n % 2,
        principal=f"User:user-{n % 13}",
        host="*" if n % 3 else "10.0.0.1",
        operation=2 + n % 13,
        permission_type=2 + n % 2,
    )


def records(count: int, start: int = 0) -> list[AccessControlEntryRecord]:
    return [record(n) for n in range(start, start + count)]


def read_all(path: Path) -> list[AccessControlEntryRecord]:
    """Open and fully read one snapshot file (what a loader does)."""
    reader = SnapshotReader(path)
    return list(reader.records())


# ---- naming -------------------------------------------------------------------------------------------


def test_file_name_is_20_and_10_digits() -> None:
    assert SnapshotId(100, 1).file_name() == "00000000000000000100-0000000001.checkpoint"
    assert SnapshotId(0, 0).file_name() == "00000000000000000000-0000000000.checkpoint"
    big = SnapshotId(2**63 - 1, 2**31 - 1)
    name = big.file_name()
    assert len(name) == 20 + 1 + 10 + len(SUFFIX)
    assert parse_name(name) == big


@pytest.mark.parametrize("snapshot", [SnapshotId(0, 0), SnapshotId(7, 3), SnapshotId(123456789, 42)])
def test_parse_name_round_trip(snapshot: SnapshotId, tmp_path: Path) -> None:
    assert parse_name(snapshot.file_name()) == snapshot
    assert parse_name(tmp_path / snapshot.file_name()) == snapshot


@pytest.mark.parametrize(
    "name",
    [
        "100-1.checkpoint",  # not zero-padded
        "0000000000000000100-0000000001.checkpoint",  # 19 digits
        "000000000000000000100-0000000001.checkpoint",  # 21 digits
        "00000000000000000100-000000001.checkpoint",  # 9-digit epoch
        "00000000000000000100-0000000001.checkpoint.part",
        "00000000000000000100-0000000001.checkpoint.deleted",
        "00000000000000000100-0000000001.snapshot",
        "0000000000000000010a-0000000001.checkpoint",
        "00000000000000000100_0000000001.checkpoint",
        "",
    ],
)
def test_parse_name_refuses_other_names(name: str) -> None:
    with pytest.raises(SnapshotNameError, match="not a snapshot name"):
        parse_name(name)
    assert issubclass(SnapshotNameError, ValueError)
    assert issubclass(SnapshotNameError, SnapshotError)


def test_snapshot_ids_order_newest_last() -> None:
    ids = [SnapshotId(10, 2), SnapshotId(5, 9), SnapshotId(10, 1), SnapshotId(200, 0)]
    assert sorted(ids) == [SnapshotId(5, 9), SnapshotId(10, 1), SnapshotId(10, 2), SnapshotId(200, 0)]


# ---- write / read round trip ---------------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, 1, 2 * CHUNK_RECORDS + 5_000])
def test_write_read_round_trip(tmp_path: Path, count: int) -> None:
    store = SnapshotStore(tmp_path / "snaps")
    written = records(count)
    header = SnapshotHeader(end_offset=count + 17, epoch=3, timestamp_ms=1_700_000_000_123)
    path = store.write(header, iter(written))
    assert path == tmp_path / "snaps" / SnapshotId(count + 17, 3).file_name()
    reader = store.read(SnapshotId(count + 17, 3))
    assert (reader.header.end_offset, reader.header.epoch, reader.header.timestamp_ms) == (
        count + 17,
        3,
        1_700_000_000_123,
    )
    assert list(reader.records()) == written
    assert reader.verify() == count
    assert store.list() == [SnapshotId(count + 17, 3)]


def test_large_snapshot_uses_several_chunks(tmp_path: Path) -> None:
    """25,000 records are several chunks; each chunk's damage is detected on its own."""
    store = SnapshotStore(tmp_path)
    path = store.write(SnapshotHeader(25_000, 1, 5), records(25_000))
    data = bytearray(path.read_bytes())
    # Damage one byte near the end of the file (the last chunk, well past the first chunk).
    data[-200] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptSnapshotError) as info:
        read_all(path)
    assert info.value.position > 0
    assert "chunk" in info.value.reason


def small_snapshot(tmp_path: Path, count: int = 3) -> tuple[Path, bytes]:
    store = SnapshotStore(tmp_path / "orig")
    path = store.write(SnapshotHeader(count, 2, 1_234), records(count))
    return path, path.read_bytes()


def check_refused(path: Path, size: int) -> CorruptSnapshotError:
    """Opening and reading must fail as a whole, and the error must name a byte position of the file."""
    got: list[AccessControlEntryRecord] = []
    with pytest.raises(CorruptSnapshotError) as info:
        reader = SnapshotReader(path)
        for rec in reader.records():  # nothing may be handed out before the whole file validated
            got.append(rec)
    assert got == []
    exc = info.value
    assert isinstance(exc.position, int)
    assert 0 <= exc.position <= size
    assert f"at byte {exc.position}" in str(exc)
    assert exc.path == path
    return exc


def test_every_single_byte_flip_is_refused(tmp_path: Path) -> None:
    _, data = small_snapshot(tmp_path)
    target = tmp_path / "damaged.checkpoint"
    for position in range(len(data)):
        for mask in (0x01, 0x80):
            damaged = bytearray(data)
            damaged[position] ^= mask
            target.write_bytes(bytes(damaged))
            check_refused(target, len(data))


def test_every_truncation_is_refused(tmp_path: Path) -> None:
    _, data = small_snapshot(tmp_path)
    target = tmp_path / "truncated.checkpoint"
    for length in range(len(data)):
        target.write_bytes(data[:length])
        exc = check_refused(target, length)
        assert exc.position <= length


def test_bytes_after_the_footer_are_refused(tmp_path: Path) -> None:
    path, data = small_snapshot(tmp_path)
    for extra in (b"\x00", b"KACLEND!", data):
        path.write_bytes(data + extra)
        exc = check_refused(path, len(data) + len(extra))
        assert exc.position == len(data)
        assert "after the footer" in exc.reason


def test_empty_and_foreign_files_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.checkpoint"
    path.write_bytes(b"")
    assert check_refused(path, 0).position == 0
    path.write_bytes(b"PK\x03\x04" + bytes(100))
    assert "magic" in check_refused(path, 104).reason


# ---- the store: .part files, retention, latest_valid ------------------------------------------------------


def test_part_leftovers_of_dead_writers_are_cleaned_and_nothing_else(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    stem = SnapshotId(5, 1).file_name()[: -len(SUFFIX)]
    dead = tmp_path / f"{stem}-999999{PART_SUFFIX}"  # a kraft-acl writer (pid 999999) died mid-write
    empty = tmp_path / f"{stem}-999998{PART_SUFFIX}"  # ... or right after creating the file
    garbage = tmp_path / f"nonsense{PART_SUFFIX}"  # not a kraft-acl name: not ours
    kafka = tmp_path / f"{stem}-4315129388261427357{PART_SUFFIX}"  # Kafka's temporary snapshot name
    mine = tmp_path / f"{SnapshotId(6, 1).file_name()[: -len(SUFFIX)]}-{os.getpid()}{PART_SUFFIX}"
    for p in (dead, mine):
        p.write_bytes(b"KACLSNAP half a snapshot")
    empty.write_bytes(b"")
    garbage.write_bytes(b"KACLSNAP")
    kafka.write_bytes(bytes(12) + b"Kafka record batch")
    store.write(SnapshotHeader(10, 1, 0), records(2))
    assert not dead.exists() and not empty.exists()
    assert garbage.exists() and kafka.exists(), "only kraft-acl's own files are ever deleted"
    assert mine.exists(), "a .part file of this (live) process may be a write in progress"
    assert store.list() == [SnapshotId(10, 1)]
    kept = [SnapshotId(10, 1).file_name(), mine.name, garbage.name, kafka.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(kept)


def test_a_snapshot_renamed_for_deletion_by_a_killed_writer_is_removed(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, retain=1)
    store.write(SnapshotHeader(5, 1, 0), records(2))
    # retention renames a snapshot to `.checkpoint.deleted`, then unlinks it: a kill between the two leaves this
    store.path(SnapshotId(5, 1)).rename(tmp_path / (SnapshotId(5, 1).file_name()[: -len(SUFFIX)] + DELETED_SUFFIX))
    assert [p.name.endswith(DELETED_SUFFIX) for p in tmp_path.iterdir()] == [True]
    store.write(SnapshotHeader(10, 1, 0), records(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == [SnapshotId(10, 1).file_name()]


def test_failed_write_leaves_no_part_and_no_snapshot(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)

    def gen() -> Iterator[AccessControlEntryRecord]:
        yield record(1)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        store.write(SnapshotHeader(3, 1, 0), gen())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("retain", [1, 2, 3])
def test_retention_keeps_the_newest(tmp_path: Path, retain: int) -> None:
    store = SnapshotStore(tmp_path, retain=retain)
    for end in (10, 20, 30, 40, 50):
        store.write(SnapshotHeader(end, 1, 0), records(end % 7))
        assert len(store.list()) <= retain
    assert store.list() == [SnapshotId(e, 1) for e in (10, 20, 30, 40, 50)[-retain:]]
    assert not list(tmp_path.glob("*.deleted"))


def test_apply_retention_reports_what_it_deleted(tmp_path: Path) -> None:
    keep_all = SnapshotStore(tmp_path, retain=10)
    for end in (1, 2, 3, 4):
        keep_all.write(SnapshotHeader(end, 0, 0), records(1))
    gone = SnapshotStore(tmp_path, retain=2).apply_retention()
    assert gone == [SnapshotId(1, 0), SnapshotId(2, 0)]
    assert keep_all.list() == [SnapshotId(3, 0), SnapshotId(4, 0)]


def test_latest_valid_skips_a_damaged_newest(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SnapshotStore(tmp_path, retain=5)
    store.write(SnapshotHeader(10, 1, 0), records(4))
    store.write(SnapshotHeader(20, 1, 0), records(6))
    newest = store.write(SnapshotHeader(30, 1, 0), records(8))
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newest.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="kraftacl.snapshots.store"):
        found = store.latest_valid()
    assert found is not None
    reader, count = found
    assert reader.header.end_offset == 20
    assert count == 6
    assert list(reader.records()) == records(6)
    assert any(newest.name in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_latest_valid_respects_below_and_none_when_all_bad(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, retain=5)
    assert store.latest_valid() is None
    first = store.write(SnapshotHeader(10, 1, 0), records(1))
    store.write(SnapshotHeader(20, 1, 0), records(2))
    found = store.latest_valid(below=19)
    assert found is not None and found[0].header.end_offset == 10
    found = store.latest_valid(below=20)
    assert found is not None and found[0].header.end_offset == 20
    assert store.latest_valid(below=9) is None
    for snapshot in store.list():
        store.path(snapshot).write_bytes(store.path(snapshot).read_bytes()[:-1])
    assert store.latest_valid() is None
    assert first.exists()


def test_truncated_newest_falls_back(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, retain=5)
    store.write(SnapshotHeader(10, 1, 0), records(3))
    newest = store.write(SnapshotHeader(11, 1, 0), records(30_000))
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    found = store.latest_valid()
    assert found is not None and found[0].header.end_offset == 10
