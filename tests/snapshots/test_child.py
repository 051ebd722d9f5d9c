"""A snapshot written by a forked child (`snapshots.child`): the same file, and every failure comes back named."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftacl.snapshots import child
from kraftacl.snapshots.columns import AclColumns, columns_of
from kraftacl.snapshots.errors import SnapshotIOError
from kraftacl.snapshots.format import SnapshotHeader
from kraftacl.snapshots.store import SnapshotStore
from tests.snapshots.test_snapshots import read_all, records

pytestmark = pytest.mark.skipif(not child.available(), reason="no fork on this platform")


def chunked(count: int, rows: int = 1000) -> list[AclColumns]:
    all_records = records(count)
    return [columns_of(all_records[start : start + rows]) for start in range(0, count, rows)]


def test_the_child_returns_what_the_work_returns_and_sees_the_parents_memory() -> None:
    state = list(range(100_000))  # made before the fork: the child reads it without a copy being sent
    assert child.run_in_child(lambda: sum(state)) == sum(state)
    assert child.run_in_child(lambda: os.getpid()) != os.getpid()


def test_an_os_error_in_the_child_keeps_its_errno() -> None:
    def full() -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as caught:
        child.run_in_child(full)
    assert caught.value.errno == errno.ENOSPC and "No space left" in str(caught.value)


def test_another_error_in_the_child_is_named() -> None:
    def bad() -> int:
        raise ValueError("record 7 cannot be stored")

    with pytest.raises(child.ChildError, match="ValueError: record 7 cannot be stored"):
        child.run_in_child(bad)


def test_a_child_killed_midway_is_an_error_not_a_result() -> None:
    def killed() -> int:
        os.kill(os.getpid(), signal.SIGKILL)
        return 1

    with pytest.raises(child.ChildError, match="exit code -9"):
        child.run_in_child(killed)


def test_a_snapshot_written_in_a_child_is_the_one_written_here(tmp_path: Path) -> None:
    here, there = SnapshotStore(tmp_path / "here"), SnapshotStore(tmp_path / "there")
    header = SnapshotHeader(5000, 2, 1234)
    mine = here.write_chunks(header, chunked(5000))
    theirs = there.write_chunks(header, iter(chunked(5000)), in_child=True)
    assert mine.name == theirs.name
    assert mine.read_bytes() == theirs.read_bytes()
    assert read_all(theirs) == records(5000)
    assert [p.name for p in (tmp_path / "there").iterdir()] == [theirs.name]  # no part left


def test_a_child_that_fails_leaves_no_part_and_no_snapshot(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)

    def failing() -> Iterator[AclColumns]:
        yield from chunked(2000)
        raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(SnapshotIOError, match="Input/output error"):
        store.write_chunks(SnapshotHeader(2000, 1, 0), failing(), in_child=True)
    assert list(tmp_path.iterdir()) == []
