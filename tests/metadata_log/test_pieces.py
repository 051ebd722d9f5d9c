"""A large batch is encoded and written in pieces (never one joined payload): the same bytes, the same frame."""

from __future__ import annotations

import zlib
from pathlib import Path

from kraftacl.metadata_log.backends.file.format import encode_frame, frame_head
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec import avro as codec
from kraftacl.metadata_log.codec import fast as codec_fast
from kraftacl.metadata_log.codec.avro import DEFAULT_CODEC
from tests.metadata_log.factories import records_for


def test_a_large_batch_comes_in_several_pieces_that_join_to_fastavros_bytes() -> None:
    records = records_for(0, 20_000)  # 10 pieces per ACL record: past _JOIN_STEP several times
    pieces = DEFAULT_CODEC.encode_pieces(records)
    assert len(pieces) >= 3
    payload = b"".join(pieces)
    assert payload == DEFAULT_CODEC._encode_slow(records)  # fastavro's own bytes
    assert payload == codec.encode(records)
    assert codec.decode(payload).records == tuple(records)


def test_a_small_batch_is_one_piece_and_encode_is_its_join() -> None:
    records = records_for(0, 5)
    pieces = DEFAULT_CODEC.encode_pieces(records)
    assert len(pieces) == 1
    assert pieces[0] == codec.encode(records) == codec_fast.encode_v1(list(records), codec._raw_ids(records))


def test_the_frame_head_of_pieces_is_the_head_of_the_joined_frame() -> None:
    pieces = [b"abc", b"", b"defgh" * 1000, b"\x00"]
    whole = b"".join(pieces)
    head = frame_head(7, 3, 2, 99, pieces)
    assert head + whole == encode_frame(7, 3, 2, 99, whole)
    assert int.from_bytes(head[32:36], "big") == zlib.crc32(whole, zlib.crc32(head[:32]))


def test_a_batch_written_in_pieces_reads_back_whole_and_after_a_reopen(tmp_path: Path) -> None:
    records = records_for(0, 20_000)
    with FileLog(tmp_path / "log") as log:
        first = log.append(records[:10_000])
        second = log.append(records[10_000:])
        assert (first.base_offset, second.base_offset, log.high_watermark()) == (0, 10_000, 20_000)
    with FileLog(tmp_path / "log") as log:  # a reopen scans every frame and checks its CRC
        read = [r for batch in log.read(0) for r in batch.records]
    assert read == records
