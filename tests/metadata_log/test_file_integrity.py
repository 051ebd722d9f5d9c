"""`FileLog` integrity: one log identity, readers stopped at the durable end, lost batches refused, foreign files
left alone, resource errors named, input limits on every header, and a bounded wait for the writer lock."""

from __future__ import annotations

import errno
import os
import shutil
import struct
import threading
import time
import zlib
from pathlib import Path

import pytest

from kraftacl.metadata_log.backends.file import directory as file_dir
from kraftacl.metadata_log.backends.file.dir_files import foreign_entries
from kraftacl.metadata_log.backends.file.format import (
    encode_frame,
    encode_segment_header,
    iter_frames,
    read_segment_header,
    read_segment_header_full,
)
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.backends.file.meta import META_FILE, read_meta
from kraftacl.metadata_log.codec.avro import CURRENT_SCHEMA, DEFAULT_CODEC
from kraftacl.metadata_log.errors import (
    CorruptLogError,
    DivergenceError,
    ForeignFilesError,
    LogError,
    LogIOError,
    LogLockedError,
    LogLostDataError,
    LogResourceError,
)
from tests.metadata_log.contract import check_batches, fill
from tests.metadata_log.factories import records_for
from tests.metadata_log.faults import rewind_durable_end

SEGMENT = f"{0:020d}.log"


def build(directory: Path, sizes: list[int], segment_bytes: int = 64 << 20) -> None:
    with FileLog(directory, segment_bytes=segment_bytes) as log:
        fill(log, sizes)


def files(directory: Path) -> dict[str, bytes]:
    """Every file's bytes, to show that a refusal changed nothing."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def frame_positions(segment: Path) -> list[int]:
    with open(segment, "rb") as f:
        _, start = read_segment_header(f)
        return [fr.position for fr in iter_frames(f, start, segment.stat().st_size, int(segment.name[:20]))]


# ---- identity --------------------------------------------------------------------------------------------


def test_a_new_log_gets_an_identity_in_log_meta_and_every_segment_header(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [1, 1, 1], segment_bytes=1)
    meta = read_meta(d)
    assert meta is not None and meta.log_start_offset == 0 and not meta.legacy
    with FileLog(d, read_only=True) as log:
        assert log.log_id == meta.log_id and not log.legacy
    for segment in sorted(d.glob("*.log")):
        with open(segment, "rb") as f:
            header = read_segment_header_full(f)
        assert (header.version, header.log_id) == (2, meta.log_id_bytes)
    other = tmp_path / "other"
    build(other, [1])
    assert read_meta(other) is not None and read_meta(other) != meta  # random per log


def test_a_segment_of_another_log_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    build(a, [1, 1], segment_bytes=1)
    build(b, [1, 1, 1], segment_bytes=1)
    shutil.copy(b / f"{2:020d}.log", a / f"{2:020d}.log")  # offsets fit, but it is b's history
    before = files(a)
    for read_only in (False, True):
        with pytest.raises(CorruptLogError, match=r"belongs to log \S+, not to this log"):
            FileLog(a, read_only=read_only)
    assert files(a) == before


def test_a_legacy_log_keeps_its_format_1_segments_and_gets_an_identity(tmp_path: Path) -> None:
    d = tmp_path / "log"
    d.mkdir()
    payload = DEFAULT_CODEC.encode(records_for(0, 3))
    data = encode_segment_header(CURRENT_SCHEMA.json_text) + encode_frame(0, 3, 1, 0, payload)
    (d / SEGMENT).write_bytes(data)  # as a writer before log identities left it
    with FileLog(d, read_only=True) as log:
        assert log.log_id is None and log.legacy
        check_batches(list(log.read()), 0)
    with FileLog(d, segment_bytes=len(data) + 1) as log:
        fill(log, [2])
    meta = read_meta(d)
    assert meta is not None and meta.legacy
    with FileLog(d, read_only=True) as log:
        check_batches(list(log.read()), 0)
        assert log.high_watermark() == 5
    with open(sorted(d.glob("*.log"))[-1], "rb") as f:
        assert read_segment_header_full(f).log_id == meta.log_id_bytes  # the segment it rolled to has the id


# ---- durable end -------------------------------------------------------------------------------------------


def test_readers_stop_at_the_durable_end_and_a_writer_keeps_the_whole_batches_beyond(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [2, 3])
    rewind_durable_end(d, 2)  # batch [2..4] written, its fsync not returned when the writer died
    with FileLog(d, read_only=True) as log:
        assert log.high_watermark() == 2
        assert [b.base_offset for b in log.read()] == [0]
    with FileLog(d) as log:  # whole batches beyond the durable end may have been acknowledged: kept
        assert log.high_watermark() == 5 and log.recovery is None
    with FileLog(d, read_only=True) as log:
        assert log.durable_end() == 5 and log.high_watermark() == 5


@pytest.mark.parametrize("syscall", ["fsync", "pwrite"])
def test_a_failed_write_or_fsync_is_seen_by_no_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, syscall: str
) -> None:
    d = tmp_path / "log"
    writer = FileLog(d)
    fill(writer, [2])
    other_process = FileLog(d, read_only=True)  # no lock: stands for a reader in another process
    assert other_process.high_watermark() == 2
    seen: list[int] = []
    real = getattr(os, syscall)

    def spy_then_fail(*args: object) -> object:
        if syscall == "fsync":  # the frame is in the file now: what would a reader elsewhere see?
            with FileLog(d, read_only=True) as elsewhere:
                seen.append(elsewhere.high_watermark())
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, syscall, spy_then_fail)
    with pytest.raises(LogIOError, match=r"Input/output error \(EIO\)") as info:
        fill(writer, [3])
    monkeypatch.setattr(os, syscall, real)
    assert str(d / SEGMENT) in str(info.value)
    assert seen in ([], [2]), "a reader saw the batch whose fsync was still running"
    assert writer.high_watermark() == 2 and other_process.high_watermark() == 2
    assert [b.base_offset for b in other_process.read()] == [0]
    writer.close()
    other_process.close()
    with FileLog(d) as again:
        assert again.high_watermark() == 2
        fill(again, [1])


def test_a_failed_durable_end_publish_fails_the_append_and_a_writer_later_adopts_the_durable_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "log"
    writer = FileLog(d)
    fill(writer, [2])
    real = os.pwrite
    segment_fd = writer._fd  # the frame's pieces go there; the durable end goes to its own file

    def fail_durable_end(fd: int, data: bytes, offset: int) -> int:
        if fd != segment_fd:
            raise OSError(errno.EIO, "Input/output error")
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", fail_durable_end)
    with pytest.raises(LogIOError, match=r"durable-end: Input/output error"):
        fill(writer, [1])
    monkeypatch.undo()
    assert writer.high_watermark() == 2
    with FileLog(d, read_only=True) as reader:
        assert reader.high_watermark() == 2  # never published: no reader saw it
    writer.close()
    with FileLog(d) as again:  # it was fsynced: the next writer keeps it (at most the one in-flight batch)
        assert again.high_watermark() == 3


# ---- lost batches ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cut", ["batch-boundary", "mid-batch", "last-segment", "first-segment"])
def test_a_log_ending_below_its_durable_end_is_refused_and_left_as_it_is(tmp_path: Path, cut: str) -> None:
    d = tmp_path / "log"
    build(d, [2, 3, 1], segment_bytes=1 if cut.endswith("segment") else 64 << 20)
    if cut == "batch-boundary":
        os.truncate(d / SEGMENT, frame_positions(d / SEGMENT)[2])  # exactly the last batch: no torn bytes
    elif cut == "mid-batch":
        os.truncate(d / SEGMENT, frame_positions(d / SEGMENT)[2] + 10)
    elif cut == "last-segment":
        (d / f"{5:020d}.log").unlink()
    else:
        (d / SEGMENT).unlink()
    before = files(d)
    for read_only in (False, True):
        error = LogLostDataError if cut != "first-segment" else CorruptLogError
        with pytest.raises(error) as info:
            FileLog(d, read_only=read_only)
        if cut == "first-segment":
            assert "segments holding offsets [0, 2) are missing" in str(info.value)
        else:
            assert "acknowledged batches [5, 6) were lost" in str(info.value)
            assert "kraft-acl log recover" in str(info.value)
    assert files(d) == before, "nothing was cut, renamed or removed"


def test_a_live_reader_that_sees_the_log_shrink_reports_it(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [2, 3])
    with FileLog(d, read_only=True) as reader:
        assert reader.high_watermark() == 5
        os.truncate(d / SEGMENT, frame_positions(d / SEGMENT)[1])
        with pytest.raises(DivergenceError, match=r"shrank.*no longer holds batches it served"):
            reader.high_watermark()


# ---- foreign files -----------------------------------------------------------------------------------------


def kafka_like_directory(directory: Path) -> None:
    """The files of a Kafka `__cluster_metadata-0` directory (the bytes need not be valid for this check)."""
    directory.mkdir()
    (directory / SEGMENT).write_bytes(bytes(8) + struct.pack(">i", 100) + bytes(100))  # baseOffset 0, batchLength
    (directory / f"{0:020d}.index").write_bytes(b"")
    (directory / "00000000000000000004-0000000001.checkpoint").write_bytes(bytes(8) + b"kafka snapshot")
    (directory / "quorum-state").write_text('{"leaderId":1}')
    (directory / "partition.metadata").write_text("version: 0\n")


def test_a_writer_refuses_a_directory_with_files_it_did_not_write_and_creates_nothing(tmp_path: Path) -> None:
    d = tmp_path / "kafka"
    kafka_like_directory(d)
    before = files(d)
    with pytest.raises(ForeignFilesError) as info:
        FileLog(d)
    for name in ("00000000000000000000.log", "00000000000000000000.index", "quorum-state", "partition.metadata"):
        assert name in str(info.value)
    assert files(d) == before and not (d / ".lock").exists()


def test_a_foreign_segment_is_never_a_torn_tail(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [1, 1], segment_bytes=1)
    rewind_durable_end(d, 1)  # the last segment is beyond the durable end, where a torn tail would be cut
    (d / f"{1:020d}.log").write_bytes(bytes(8) + b"not kraft-acl's")
    before = files(d)
    with pytest.raises(ForeignFilesError, match=f"did not write: {1:020d}.log"):
        FileLog(d)
    with pytest.raises(CorruptLogError, match=r"not a kraft-acl segment.*never reads, cuts or removes"):
        FileLog(d, read_only=True)
    assert files(d) == before


@pytest.mark.parametrize(
    ("name", "content", "ours"),
    [
        (".lock", b"1234\n", True),
        (".lock", b"", True),
        (".lock", b"held by something else", False),
        (SEGMENT, b"KAC", True),  # a cut-off header of ours
        (SEGMENT, bytes(12), False),
        ("00000000000000000005-0000000001.checkpoint", b"KACLSNAP...", True),
        ("00000000000000000005-0000000001.checkpoint", bytes(12), False),
        ("00000000000000000005-0000000001-123.checkpoint.part", b"", True),
        ("00000000000000000005-0000000001-4315129388261427357.checkpoint.part", b"", False),
        ("leader-epoch-checkpoint", b"0\n", False),
        ("notes.txt", b"hello", False),
    ],
)
def test_which_files_are_ours(tmp_path: Path, name: str, content: bytes, ours: bool) -> None:
    (tmp_path / name).write_bytes(content)
    assert foreign_entries(tmp_path) == ([] if ours else [name])


# ---- resource errors ---------------------------------------------------------------------------------------


def test_too_many_open_files_is_named_as_such_never_corrupt(tmp_path: Path) -> None:
    import resource

    d = tmp_path / "log"
    build(d, [2, 3])
    reader = FileLog(d, read_only=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (3, hard))  # no new descriptor above stdin, stdout, stderr
        with pytest.raises(LogResourceError) as info:
            list(reader.read(0))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert "Too many open files (EMFILE)" in str(info.value) and "corrupt" not in str(info.value)
    assert info.value.transient
    check_batches(list(reader.read(0)), 0)  # handles back: the same read works
    reader.close()


def test_an_io_error_reading_the_epoch_file_is_not_called_corruption(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "log"
    build(d, [1])
    real = Path.read_bytes

    def broken(self: Path) -> bytes:
        if self.name == "writer-epoch":
            raise OSError(errno.EIO, "Input/output error")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", broken)
    with pytest.raises(LogResourceError, match=r"writer-epoch: Input/output error \(EIO\)"):
        FileLog(d, read_only=True)


# ---- input limits -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("2147483648\n", "not an integer in 0..2147483647"),
        ("²\n", "not an integer"),
        ("99999999999999999999999\n", "not an integer"),
    ],
)
def test_a_writer_epoch_out_of_range_is_one_clear_error(tmp_path: Path, text: str, fragment: str) -> None:
    d = tmp_path / "log"
    build(d, [1])
    (d / "writer-epoch").write_text(text)
    with pytest.raises(CorruptLogError, match=fragment):
        FileLog(d)


def test_the_last_writer_epoch_is_refused_before_it_overflows(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [1])
    (d / "writer-epoch").write_text("2147483647\n")
    with pytest.raises(LogError, match="would pass 2147483647"):
        FileLog(d)


@pytest.mark.parametrize(
    ("meta", "fragment"),
    [
        ('{"log_id": "AAAAAAAAAAAAAAAAAAAAAQ", "log_start_offset": 0, "log_start_offset": 1}', "duplicate key"),
        ('{"log_id": "AAAAAAAAAAAAAAAAAAAAAQ", "log_start_offset": NaN}', "NaN is not a JSON number"),
        ('{"log_id": "AAAAAAAAAAAAAAAAAAAAAQ", "log_start_offset": 9223372036854775808}', "outside Java's long range"),
        ('{"log_id": "AAAAAAAAAAAAAAAAAAAAAQ", "log_start_offset": true}', "not an integer in"),
        ('{"log_id": "nope", "log_start_offset": 0}', "not a Kafka Uuid text"),
        ("[" * 100_000, "not a log-meta JSON object"),
    ],
)
def test_a_bad_log_meta_is_one_clear_error(tmp_path: Path, meta: str, fragment: str) -> None:
    d = tmp_path / "log"
    build(d, [1])
    (d / META_FILE).write_text(meta)
    with pytest.raises(CorruptLogError, match=fragment):
        FileLog(d, read_only=True)


def test_a_batch_with_a_negative_epoch_is_corruption(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [2])
    payload = DEFAULT_CODEC.encode(records_for(2, 1))
    with open(d / SEGMENT, "ab") as f:
        f.write(encode_frame(2, 1, -1, 0, payload))  # CRC-valid, so not a torn write
    with pytest.raises(CorruptLogError, match=r"epoch -1, not 0..2147483647"):
        FileLog(d)


def test_a_segment_name_beyond_int64_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "log"
    build(d, [1])
    (d / "99999999999999999999.log").write_bytes(encode_segment_header(CURRENT_SCHEMA.json_text, bytes(16)))
    with pytest.raises(CorruptLogError, match="beyond int64"):
        FileLog(d, read_only=True)


def test_a_segment_header_crc_covers_the_log_id(tmp_path: Path) -> None:
    header = bytearray(encode_segment_header(CURRENT_SCHEMA.json_text, bytes(range(16))))
    header[20] ^= 0x01  # a byte of the log id
    stored = struct.unpack_from(">I", header, 12)[0]
    assert stored != zlib.crc32(bytes(header[16:]), zlib.crc32(bytes(header[:12])))


# ---- the writer lock ---------------------------------------------------------------------------------------


def test_a_second_writer_waits_for_the_lock_for_a_bounded_time(tmp_path: Path) -> None:
    d = tmp_path / "log"
    first = FileLog(d)
    started = time.monotonic()
    with pytest.raises(LogLockedError, match=rf"pid {os.getpid()}.*waited 0.3 s"):
        FileLog(d, lock_timeout_s=0.3)
    assert 0.3 <= time.monotonic() - started < 3
    threading.Timer(0.3, first.close).start()  # the first writer finishes while the second waits
    with FileLog(d, lock_timeout_s=10) as second:
        fill(second, [1])
    assert file_dir.read_epoch(d) == 2


def test_a_roll_torn_after_its_header_is_removed_and_the_log_goes_on(tmp_path: Path) -> None:
    """Found by the history property test: a killed writer's roll left a header and half a frame."""
    d = tmp_path / "log"
    build(d, [2], segment_bytes=1)
    with FileLog(d, segment_bytes=1) as log:
        fill(log, [3])  # rolls to 00000000000000000002.log
    rewind_durable_end(d, 2)  # ... but the writer died before the batch was durable
    rolled = d / f"{2:020d}.log"
    os.truncate(rolled, rolled.stat().st_size - 10)
    with FileLog(d, segment_bytes=1) as log:
        assert log.recovery is not None and log.recovery.removed_file and log.recovery.path == rolled
        assert log.high_watermark() == 2
        fill(log, [1])  # the roll to offset 2 happens again
    with FileLog(d, read_only=True) as log:
        check_batches(list(log.read()), 0)


def test_a_string_over_32767_utf8_bytes_is_refused_when_written_and_when_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kraftacl.metadata_log.codec import avro as codec
    from kraftacl.metadata_log.errors import DecodeError, EncodeError
    from kraftacl.metadata_log.records import AccessControlEntryRecord

    record = records_for(0, 1)[0]
    assert isinstance(record, AccessControlEntryRecord)
    fits = AccessControlEntryRecord(record.id, 2, "é" * 16_383 + "a", 3, "User:a", "*", 3, 3)  # 32767 bytes
    too_long = AccessControlEntryRecord(record.id, 2, "é" * 16_384, 3, "User:a", "*", 3, 3)  # 32768 bytes
    d = tmp_path / "log"
    with FileLog(d) as log:
        log.append([fits])
        with pytest.raises(EncodeError, match="'resource_name' is 32768 UTF-8 bytes, over Kafka's limit of 32767"):
            log.append([too_long])
        with monkeypatch.context() as patched:  # a file written by something that did not check
            patched.setattr(codec, "_check_lengths", lambda index, record: None)
            log.append([too_long])
    with FileLog(d, read_only=True) as log:
        first, second = log.read(0)
        assert list(first.records) == [fits]
        expected = r"base offset 1 .*record 0 \(AccessControlEntryRecord\) field 'resourceName' .* 32768 bytes"
        with pytest.raises(DecodeError, match=expected):
            list(second.records)
