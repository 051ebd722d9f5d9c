"""`FileLog` against the backend contract, plus what only a file log has: reopen, lock, recovery, segments."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest

from kraftacl.metadata_log.backends.file import directory as file_dir
from kraftacl.metadata_log.backends.file.format import Frame, encode_frame, iter_frames, read_segment_header
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.errors import CorruptLogError, DecodeError, LogError, LogLockedError, ReadOnlyLogError
from tests.metadata_log.contract import LogBackendContract, MakeBackend, check_batches, fill
from tests.metadata_log.factories import records_for
from tests.metadata_log.faults import rewind_durable_end


class TestFileLogContract(LogBackendContract):
    @pytest.fixture
    def make_backend(self, tmp_path: Path) -> MakeBackend:
        counter = iter(range(1_000_000))
        return lambda: FileLog(tmp_path / f"log{next(counter)}")


class TestFileLogSmallSegmentsContract(LogBackendContract):
    """The contract again with tiny segments and a dense index, so every read crosses segments."""

    @pytest.fixture
    def make_backend(self, tmp_path: Path) -> MakeBackend:
        counter = iter(range(1_000_000))
        return lambda: FileLog(tmp_path / f"log{next(counter)}", segment_bytes=2048, index_interval_bytes=200)


def frames_of(path: Path) -> list[Frame]:
    with open(path, "rb") as f:
        _, start = read_segment_header(f)
        first = int(path.name[:20])
        return list(iter_frames(f, start, path.stat().st_size, first))


def build(directory: Path, sizes: list[int], segment_bytes: int = 64 << 20) -> list[tuple[int, int]]:
    with FileLog(directory, segment_bytes=segment_bytes) as log:
        return fill(log, sizes)


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    d = tmp_path / "log"
    assert build(d, [3, 1, 4]) == [(0, 2), (3, 3), (4, 7)]
    with FileLog(d) as log:
        assert log.recovery is None
        assert log.high_watermark() == 8
        check_batches(list(log.read()), 0)
        assert log.append(records_for(8, 2)).base_offset == 8
    with FileLog(d) as log:
        assert [b.base_offset for b in log.read()] == [0, 3, 4, 8]


def test_writer_epoch_is_bumped_per_open_and_stored(tmp_path: Path) -> None:
    d = tmp_path / "log"
    for expected in (1, 2, 3):
        with FileLog(d) as log:
            assert log.epoch == expected
            assert log.append(records_for(log.high_watermark(), 1)).epoch == expected
    assert (d / "writer-epoch").read_text() == "3\n"
    with FileLog(d, read_only=True) as log:
        assert [b.epoch for b in log.read()] == [1, 2, 3]
    (d / "writer-epoch").unlink()  # a lost epoch file never lets the epoch go backwards
    with FileLog(d) as log:
        assert log.epoch == 4


def test_bad_epoch_file_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [1])
    (d / "writer-epoch").write_text("banana\n")
    with pytest.raises(CorruptLogError, match=r"writer-epoch.*'banana'"):
        FileLog(d)


def test_second_writer_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    d = tmp_path / "log"
    with FileLog(d) as first:
        with pytest.raises(LogLockedError, match=rf"is locked by another writer \(pid {os.getpid()}\)"):
            FileLog(d)
        with FileLog(d, read_only=True) as reader:  # readers take no lock
            assert reader.high_watermark() == first.high_watermark()
    with FileLog(d) as again:  # closing released the lock
        assert again.high_watermark() == 0


def test_read_only_open(tmp_path: Path) -> None:
    d = tmp_path / "log"
    with pytest.raises(LogError, match="does not exist"):
        FileLog(d, read_only=True)
    build(d, [2, 2])
    with FileLog(d, read_only=True) as log:
        check_batches(list(log.read()), 0)
        with pytest.raises(ReadOnlyLogError):
            log.append(records_for(4, 1))


def test_read_only_follows_a_live_writer(tmp_path: Path) -> None:
    d = tmp_path / "log"
    with FileLog(d, segment_bytes=1024) as writer, FileLog(d, read_only=True) as reader:
        assert reader.high_watermark() == 0
        for i in range(30):
            fill(writer, [1 + i % 4])
            assert reader.high_watermark() == writer.high_watermark()
        assert len(writer.segment_paths()) > 2
        check_batches(list(reader.read()), 0)
        assert reader.log_start_offset() == 0


def test_read_only_does_not_repair_a_torn_tail(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [2, 3])
    rewind_durable_end(d, 2)  # the writer died writing batch [2..4], before its fsync returned
    seg = d / f"{0:020d}.log"
    size = seg.stat().st_size
    os.truncate(seg, size - 5)
    with FileLog(d, read_only=True) as log:
        assert log.high_watermark() == 2
        assert log.recovery is None
    assert seg.stat().st_size == size - 5


def last_frame_span(directory: Path) -> tuple[Path, int, int]:
    seg = sorted(directory.glob("*.log"))[-1]
    last = frames_of(seg)[-1]
    return seg, last.position, last.position + last.size


@pytest.mark.parametrize("action", ["truncate", "flip"])
def test_torn_tail_is_cut_and_reported(tmp_path: Path, action: str, caplog: pytest.LogCaptureFixture) -> None:
    """Cut the last batch at every byte position (or flip each of its bytes): recovery drops just it."""
    pristine = tmp_path / "pristine"
    build(pristine, [3, 2, 2])
    rewind_durable_end(pristine, 5)  # the last batch [5..6] was being written when the writer died
    seg, start, end = last_frame_span(pristine)
    original = seg.read_bytes()
    for cut in range(start, end):
        d = tmp_path / f"{action}-{cut}"
        shutil.copytree(pristine, d)
        target = d / seg.name
        if action == "truncate":
            os.truncate(target, cut)
        else:
            data = bytearray(original)
            data[cut] ^= 0xFF
            target.write_bytes(bytes(data))
        caplog.clear()
        with caplog.at_level(logging.WARNING), FileLog(d) as log:
            if action == "truncate" and cut == start:
                assert log.recovery is None  # a clean end between batches: nothing to repair
            else:
                assert log.recovery is not None, cut
                assert (log.recovery.path, log.recovery.position) == (target, start)
                assert log.recovery.bytes_truncated == (cut if action == "truncate" else end) - start
                assert "torn tail" in caplog.text and str(target) in caplog.text
            assert target.stat().st_size == start
            assert log.high_watermark() == 5
            check_batches(list(log.read()), 0)
            assert log.append(records_for(5, 1)).base_offset == 5
        with FileLog(d) as log:
            assert log.recovery is None and log.high_watermark() == 6
        shutil.rmtree(d)


def test_torn_header_of_a_new_segment_is_removed(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [1, 1, 1], segment_bytes=1)  # one batch per segment
    rewind_durable_end(d, 2)
    last = d / f"{2:020d}.log"
    os.truncate(last, 10)
    with FileLog(d, segment_bytes=1) as log:
        assert log.recovery is not None and log.recovery.removed_file
        assert "short segment header" in log.recovery.reason
        assert not last.exists()
        assert log.high_watermark() == 2
        fill(log, [1])
    assert last.exists()


def test_empty_last_segment_is_dropped_on_open_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    d = tmp_path / "log"
    build(d, [1, 1], segment_bytes=1)
    rewind_durable_end(d, 1)
    last = d / f"{1:020d}.log"
    with open(last, "rb") as f:
        _, start = read_segment_header(f)
    os.truncate(last, start)  # header only: the crash came before the first frame
    with FileLog(d, read_only=True) as log:
        assert log.high_watermark() == 1 and len(log.segment_paths()) == 1
    assert last.exists()
    with caplog.at_level(logging.WARNING), FileLog(d, segment_bytes=1) as log:
        assert log.recovery is not None and log.recovery.removed_file and log.recovery.path == last
        assert "holds only its header" in log.recovery.reason
        assert str(last) in caplog.text and "holds only its header" in caplog.text  # never without a word
        assert log.high_watermark() == 1
        assert log.segment_paths() == [d / f"{0:020d}.log"]


def test_corruption_in_the_middle_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [3, 2, 2])
    seg = d / f"{0:020d}.log"
    first = frames_of(seg)[0]
    data = bytearray(seg.read_bytes())
    data[first.position + 40] ^= 0x01  # a payload byte of the first batch; two good batches follow
    seg.write_bytes(bytes(data))
    for read_only in (False, True):
        with pytest.raises(CorruptLogError) as info:
            FileLog(d, read_only=read_only)
        assert info.value.path == seg and info.value.position == first.position
        assert "CRC mismatch" in str(info.value) and "not a torn tail" in str(info.value)
        assert str(seg) in str(info.value)
    assert seg.read_bytes() == bytes(data)  # nothing was cut


def test_bad_length_in_the_middle_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [3, 2, 2])
    seg = d / f"{0:020d}.log"
    first = frames_of(seg)[0]
    data = bytearray(seg.read_bytes())
    data[first.position + 28 : first.position + 32] = (10**6).to_bytes(4, "big")
    seg.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match=r"short batch payload.*not a torn tail"):
        FileLog(d)


def test_damage_in_a_sealed_segment_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [2, 2, 2], segment_bytes=1)
    sealed = d / f"{2:020d}.log"
    os.truncate(sealed, sealed.stat().st_size - 1)  # even a "torn" end is corruption before the last
    with pytest.raises(CorruptLogError, match=f"{sealed.name}.*short batch payload"):
        FileLog(d)


def test_missing_segment_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [2, 2, 2], segment_bytes=1)
    (d / f"{2:020d}.log").unlink()
    with pytest.raises(CorruptLogError, match="starts at offset 4 but the log before it ends at 2"):
        FileLog(d)


def test_out_of_sequence_batch_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [2])
    seg = d / f"{0:020d}.log"
    with open(seg, "ab") as f:  # a whole, CRC-valid frame with the wrong base offset
        f.write(encode_frame(7, 1, 1, 0, frames_of(seg)[0].payload))
    with pytest.raises(CorruptLogError, match="base offset 7 but offset 2 was expected"):
        FileLog(d)


def test_undecodable_committed_batch_raises_decode_error(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [2])
    seg = d / f"{0:020d}.log"
    with open(seg, "ab") as f:
        f.write(encode_frame(2, 1, 1, 0, b"\x02\xff garbage"))
    with FileLog(d) as log:
        (batch,) = log.read(2)  # records are decoded on first use ...
        assert len(batch.records) == 1
        with pytest.raises(DecodeError, match=rf"base offset 2 in {seg}"):
            tuple(batch.records)  # ... and the damage is reported then, with the base offset and the file


def test_segments_roll_and_are_named_by_base_offset(tmp_path: Path) -> None:
    d = tmp_path / "log"
    with FileLog(d, segment_bytes=1500, index_interval_bytes=100) as log:
        fill(log, [5] * 40 + [300])  # the last batch alone exceeds segment_bytes
        paths = log.segment_paths()
        assert len(paths) > 5
        for path in paths:
            frames = frames_of(path)
            assert int(path.name[:20]) == frames[0].base_offset
            assert len(path.name) == len("00000000000000000000.log")
            assert path.stat().st_size <= 1500 or len(frames) == 1
        for offset in range(0, log.high_watermark(), 7):
            batches = list(log.read(offset))
            assert batches[0].base_offset <= offset <= batches[0].last_offset
            check_batches(batches)
    with FileLog(d, read_only=True) as log:
        check_batches(list(log.read()), 0)


def test_sparse_index_seeks(tmp_path: Path) -> None:
    d = tmp_path / "log"
    with FileLog(d, index_interval_bytes=1000) as log:
        fill(log, [3] * 200)
        segment = log._segments[0]
        assert 5 < len(segment.index_offsets) < 200
        position, base = segment.locate(450)
        assert base <= 450 and position > segment.data_start
        assert [b.base_offset for b in log.read(451)][:2] == [450, 453]


def test_append_fsyncs_file_and_new_directory_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "log"
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    with FileLog(d, segment_bytes=1) as log:
        monkeypatch.setattr(os, "fsync", spy)
        fill(log, [1])
        assert synced == [str(d / f"{0:020d}.log"), str(d)]


def test_failed_write_is_not_committed_and_stops_appends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "log"
    log = FileLog(d)
    fill(log, [2])

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(LogError, match=r"I/O error on log file .*Input/output error"):
        fill(log, [1])
    monkeypatch.undo()
    with pytest.raises(LogError, match="I/O error"):
        fill(log, [1])
    assert log.high_watermark() == 2
    log.close()
    with FileLog(d) as again:
        assert again.high_watermark() == 2 and again.recovery is None


def test_lock_file_names_the_writer(tmp_path: Path) -> None:
    d = tmp_path / "log"
    with FileLog(d):
        assert (d / file_dir.LOCK_FILE).read_text() == f"{os.getpid()}\n"
