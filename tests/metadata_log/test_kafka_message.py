"""The Kafka backend's message split (`batch_frames`): parts under the limit, contiguous, each record encoded once."""

from __future__ import annotations

from collections.abc import Sequence

from kraftacl.metadata_log.backends.file.format import decode_frame, parse_frame_at
from kraftacl.metadata_log.backends.kafka_topic.message import SIZE_SAMPLE, batch_frames
from kraftacl.metadata_log.codec import Codec
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord
from tests.metadata_log.factories import acl_batch, records_for


class CountingCodec(Codec):
    """A codec that counts the records it encodes."""

    def __init__(self) -> None:
        super().__init__()
        self.encoded = 0

    def encode(self, records: Sequence[MetadataRecord]) -> bytes:
        self.encoded += len(records)
        return super().encode(records)


def read_back(parts: list[tuple[int, bytes]]) -> list[tuple[int, int, list[MetadataRecord]]]:
    """(base, count, records) of each part, each frame parsed whole and CRC-checked."""
    out = []
    for base, value in parts:
        frame = parse_frame_at(value, 0)
        assert frame is not None and frame.size == len(value) and frame.base_offset == base
        batch = decode_frame(Codec(), frame, None)
        out.append((batch.base_offset, len(batch.records), list(batch.records)))
    return out


def test_a_batch_under_the_limit_is_one_frame_encoded_once() -> None:
    codec = CountingCodec()
    records = records_for(0, 40)
    parts = batch_frames(codec, 7, records, 3, 1_000, 1_000_000)
    assert [(base, count) for base, count, _ in read_back(parts)] == [(7, 40)]
    assert read_back(parts)[0][2] == records
    assert codec.encoded == 40


def test_a_large_batch_is_split_under_the_limit_with_each_record_encoded_about_once() -> None:
    """20,000 records (about 1.4 MB) under a 100 kB limit: contiguous parts that read back exactly, and the
    records are encoded once plus the size sample (before, the whole batch was encoded first: twice)."""
    codec = CountingCodec()
    records = acl_batch(20_000)
    parts = batch_frames(codec, 100, records, 2, 5, 100_000)
    got = read_back(parts)
    assert len(parts) >= 14 and all(len(value) <= 100_000 for _, value in parts)
    bases = [base for base, _, _ in got]
    assert bases[0] == 100 and all(b + n == nxt for (b, n, _), nxt in zip(got, bases[1:], strict=False))
    assert [r for _, _, rs in got for r in rs] == records
    assert codec.encoded <= len(records) + SIZE_SAMPLE


def test_records_larger_than_the_sample_are_split_again() -> None:
    """A batch whose later records are far larger than its first ones (the sample) still gives parts under the
    limit: a part sized from the sample that comes out too large is split again."""
    small = acl_batch(SIZE_SAMPLE + 1)
    large = [
        AccessControlEntryRecord(
            id=r.id,
            resource_type=r.resource_type,
            resource_name="t" * 2_000 + r.resource_name,
            pattern_type=r.pattern_type,
            principal=r.principal,
            host=r.host,
            operation=r.operation,
            permission_type=r.permission_type,
        )
        for r in acl_batch(400, seed=1)
        if isinstance(r, AccessControlEntryRecord)
    ]
    records: list[MetadataRecord] = [*small, *large]
    parts = batch_frames(Codec(), 0, records, 1, 0, 200_000)
    assert all(len(value) <= 200_000 for _, value in parts)
    assert [r for _, _, rs in read_back(parts) for r in rs] == records


def test_a_single_record_over_the_limit_is_one_part_for_the_broker_to_refuse() -> None:
    records = records_for(0, 1)
    parts = batch_frames(Codec(), 0, records, 1, 0, 10)
    assert len(parts) == 1 and len(parts[0][1]) > 10


def test_a_batch_that_fits_is_one_frame_even_near_the_limit() -> None:
    """A batch of more records than the sample whose frame fits (at 90% of the limit) is one message, as the
    docstring says: it is split only when the sample's estimate says it is too large."""
    records = acl_batch(5_000)
    whole = len(batch_frames(Codec(), 0, records, 1, 0, 10**9)[0][1])
    parts = batch_frames(Codec(), 0, records, 1, 0, int(whole / 0.9))
    assert len(parts) == 1
