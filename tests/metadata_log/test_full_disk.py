"""A real full disk (a small tmpfs): the append that does not fit fails naming ENOSPC and the file, no reader
ever sees it, nothing half-written stays, and once space is freed the log goes on where it was."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.errors import LogError, LogIOError
from tests.metadata_log.contract import check_batches
from tests.metadata_log.factories import records_for
from tests.metadata_log.faults import small_tmpfs


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk", "96k") as mounted:
        yield mounted


def test_an_append_on_a_full_disk_fails_as_enospc_and_the_log_goes_on_after_space_is_freed(disk: Path) -> None:
    ballast = disk / "ballast"
    ballast.write_bytes(bytes(24 * 1024))  # freed later, as an operator would make room
    d = disk / "log"
    writer = FileLog(d, segment_bytes=32 * 1024)
    reader = FileLog(d, read_only=True)
    acked = 0
    with pytest.raises(LogIOError) as info:
        for _ in range(1000):
            result = writer.append(records_for(acked, 20))
            acked = result.last_offset + 1
    message = str(info.value)
    assert "No space left on device (ENOSPC)" in message and str(d) in message
    assert "corrupt" not in message
    assert acked > 20, "some appends fitted before the disk filled"
    assert writer.high_watermark() == acked and reader.high_watermark() == acked  # nobody saw the failed one
    with pytest.raises(LogError, match="ENOSPC"):  # this writer refuses further appends (reopen to recover)
        writer.append(records_for(acked, 1))
    writer.close()
    check_batches(list(reader.read(0)), 0)
    reader.close()

    ballast.unlink()
    with FileLog(d, segment_bytes=32 * 1024) as again:
        assert again.high_watermark() == acked
        assert again.append(records_for(acked, 20)).base_offset == acked
        check_batches(list(again.read(0)), 0)


def test_opening_a_writer_on_a_full_disk_names_enospc(disk: Path) -> None:
    d = disk / "log"
    with FileLog(d) as log:
        log.append(records_for(0, 5))
    fd = os.open(disk / "ballast", os.O_WRONLY | os.O_CREAT)
    try:  # fill every byte that is left
        while os.write(fd, bytes(4096)):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    with pytest.raises(LogError, match=r"No space left on device \(ENOSPC\)"):
        FileLog(d)
    with FileLog(d, read_only=True) as log:  # reading needs no space
        check_batches(list(log.read(0)), 0)
