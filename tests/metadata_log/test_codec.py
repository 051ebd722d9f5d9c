"""The batch codec: round trips, the fast path against fastavro, Kafka Uuid text, schema evolution, errors."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kraftacl import schemas
from kraftacl.metadata_log import uuids
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec import avro as codec
from kraftacl.metadata_log.codec import fast as codec_fast
from kraftacl.metadata_log.codec.avro import CURRENT_SCHEMA, DEFAULT_CODEC, BatchSchema, Codec
from kraftacl.metadata_log.errors import DecodeError, EncodeError, InvalidUuidError
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord
from tests.metadata_log.factories import records_for

V2_DIR = Path(__file__).parent / "data" / "v2"
V2_SCHEMA = BatchSchema.from_schema(schemas.load_schema("RecordBatch", V2_DIR))

int32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
small_or_any_int = st.one_of(st.integers(min_value=-1, max_value=20), int32)
ids = st.binary(min_size=16, max_size=16).map(codec.uuid_to_text)
aces = st.builds(
    AccessControlEntryRecord,
    id=ids,
    resource_type=small_or_any_int,
    resource_name=st.text(),
    pattern_type=small_or_any_int,
    principal=st.text(),
    host=st.one_of(st.just("*"), st.text()),
    operation=small_or_any_int,
    permission_type=small_or_any_int,
)
removes = st.builds(RemoveAccessControlEntryRecord, id=ids)
batches = st.lists(st.one_of(aces, removes), min_size=1, max_size=40)


def slow_decode(payload: bytes, writer: BatchSchema = CURRENT_SCHEMA) -> list[MetadataRecord]:
    """The fastavro path, which the fast path must agree with."""
    return codec._records_from_datums(DEFAULT_CODEC.decode_datums(payload, base_offset=0, writer_schema=writer))


@settings(max_examples=300, deadline=None)
@given(batches)
@example([AccessControlEntryRecord("AAAAAAAAAAAAAAAAAAAAAQ", 0, "", 0, "", "", 0, 0)])
@example([AccessControlEntryRecord("_____________________w", -(2**31), "x" * 300, 2**31 - 1, "é" * 70, "", 64, -65)])
def test_round_trip_both_paths(records: list[MetadataRecord]) -> None:
    payload = codec.encode(records)
    batch = codec.decode(payload, base_offset=42, epoch=3, timestamp_ms=99)
    assert batch.records == tuple(records)
    assert (batch.base_offset, batch.epoch, batch.timestamp_ms) == (42, 3, 99)
    assert slow_decode(payload) == records


def test_fast_path_is_pinned_to_the_v1_schema() -> None:
    assert codec_fast.AVAILABLE
    assert CURRENT_SCHEMA.fingerprint == codec_fast.V1_FINGERPRINT, "schema changed: update codec_fast"
    assert V2_SCHEMA.fingerprint != codec_fast.V1_FINGERPRINT


def zigzag(value: int) -> bytes:
    """Avro's zigzag varint encoding of a long."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out) + bytes([n])


def test_fast_path_reads_multiple_and_sized_blocks() -> None:
    """Other Avro writers may split an array in blocks, with negative counts followed by a byte size."""
    one = codec.encode(records_for(0, 1))[1:-1]  # the item bytes without count and terminator
    two = codec.encode(records_for(1, 2))[1:-1]
    payload = b"\x02" + one + b"\x03" + zigzag(len(two)) + two + b"\x00"  # count 1; count -2, size
    expected = records_for(0, 1) + records_for(1, 2)
    assert list(codec_fast.decode_v1(payload)) == expected
    assert slow_decode(payload) == expected


def test_uuid_text_follows_kafka() -> None:
    assert codec.uuid_to_text(codec.ZERO_UUID) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert codec.uuid_to_text(codec.METADATA_TOPIC_ID) == "AAAAAAAAAAAAAAAAAAAAAQ"
    raw = bytes.fromhex("fbf0bf7f1e2d4c3b8a79685746352413")
    assert codec.uuid_to_text(raw) == "-_C_fx4tTDuKeWhXRjUkEw"  # URL-safe alphabet, no padding
    assert codec.text_to_uuid("-_C_fx4tTDuKeWhXRjUkEw") == raw


@given(st.binary(min_size=16, max_size=16))
def test_uuid_text_round_trip(raw: bytes) -> None:
    text = codec.uuid_to_text(raw)
    assert len(text) == 22 and codec.text_to_uuid(text) == raw


@given(st.lists(st.binary(min_size=16, max_size=16), max_size=40))
def test_many_ids_to_text_at_once_agree_with_one_by_one(raws: list[bytes]) -> None:
    """The bulk conversions (strided padding, one base64 call, one regex split) against Kafka's text of each id."""
    one_by_one = [t for t in map(codec.uuid_to_text, raws) if uuids.text_to_uuid(t)]  # each canonical (strict)
    assert uuids.raw_ids_to_text(b"".join(raws)) == one_by_one
    assert uuids.ids_to_text(raws) == one_by_one
    assert uuids.texts_to_ids(one_by_one) == raws
    padded = b"".join(raw + b"\0\0" for raw in raws)
    assert uuids.split_padded_text(uuids.padded_ids_text(padded)) == one_by_one


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "A" * 21,
        "A" * 23,
        "A" * 22 + "==",
        "+" + "A" * 21,
        "/" + "A" * 21,
        "A" * 21 + "B",  # non-zero padding bits: not the canonical text of any Uuid
        "A" * 20 + "\nA",
        12,
    ],
)
def test_non_canonical_uuid_text_is_rejected(bad: Any) -> None:
    with pytest.raises(InvalidUuidError, match="invalid Kafka Uuid in field 'id'"):
        codec.text_to_uuid(bad)
    assert isinstance(InvalidUuidError("x", "y"), ValueError)


def test_new_uuid_follows_kafka_random_uuid_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {codec.new_uuid() for _ in range(5000)}
    assert len(seen) == 5000
    for text in seen:
        raw = codec.text_to_uuid(text)
        assert raw not in (codec.ZERO_UUID, codec.METADATA_TOPIC_ID) and not text.startswith("-")
        assert raw[6] >> 4 == 4  # a v4 (random) UUID, as java.util.UUID.randomUUID
    draws = iter([b"\xf8" + bytes(15), b"\x11" * 16])  # the first would print as "-..."
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    assert not codec.new_uuid().startswith("-")


def test_encode_errors_name_the_record_and_field() -> None:
    good = records_for(0, 1)[0]
    assert isinstance(good, AccessControlEntryRecord)
    with pytest.raises(EncodeError, match=r"record 1 .*field 'id'"):
        codec.encode([good, RemoveAccessControlEntryRecord("not-a-uuid")])
    bad = AccessControlEntryRecord(good.id, 2, "t", 3, "User:a", "*", 2**31, 3)
    with pytest.raises(EncodeError, match=r"record 0 .*'operation' = 2147483648 is not a 32-bit int"):
        codec.encode([bad])
    with pytest.raises(EncodeError, match=r"record 0 .*not a metadata record"):
        codec.encode(["nope"])  # type: ignore[list-item]


def flip_one_byte(args: tuple[list[MetadataRecord], int, int]) -> bytes:
    records, where, value = args
    payload = bytearray(codec.encode(records))
    payload[where % len(payload)] ^= value
    return bytes(payload)


near_valid = st.tuples(batches, st.integers(0, 10**6), st.integers(1, 255)).map(flip_one_byte)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=200), near_valid))
@example(bytes([2, 3]) + bytes(24))  # union index -2: fastavro alone would read it as branch 0
def test_garbage_gives_decode_error_with_offset(data: bytes) -> None:
    outcomes: list[object] = []
    decoders: list[Callable[[], object]] = [
        lambda: codec.decode(data, base_offset=4242).records,  # the fast path
        lambda: tuple(slow_decode(data)),  # fastavro, same schema
        lambda: codec.decode(data, base_offset=4242, writer_schema=V2_SCHEMA).records,  # resolution
    ]
    for decode in decoders:
        try:
            outcomes.append(decode())
        except DecodeError as exc:
            assert exc.offset in (0, 4242) and f"base offset {exc.offset}" in str(exc)
            outcomes.append(DecodeError)
    assert outcomes[0] == outcomes[1]  # both v1 paths accept the same bytes, with the same records


def test_every_truncation_gives_decode_error() -> None:
    payload = codec.encode(records_for(0, 5))
    for cut in range(len(payload)):
        for writer in (CURRENT_SCHEMA, V2_SCHEMA):
            with pytest.raises(DecodeError, match="base offset 7"):
                codec.decode(payload[:cut], base_offset=7, writer_schema=writer)
    with pytest.raises(DecodeError, match=r"record 4 \(AccessControlEntryRecord\) field 'principal'"):
        codec.decode(payload[:-12], base_offset=7)
    with pytest.raises(DecodeError, match="3 bytes after the end of the batch"):
        codec.decode(payload + b"abc", base_offset=7)


def test_record_count_mismatch_is_a_decode_error() -> None:
    payload = codec.encode(records_for(0, 2))
    with pytest.raises(DecodeError, match="the frame says 3 records but the payload holds 2"):
        DEFAULT_CODEC.decode_batch(payload, base_offset=0, epoch=0, timestamp_ms=0, expected_count=3)


# -- schema evolution: v1 (built in) and v2 (tests/metadata_log/data/v2, adds `createdBy` with a default)


def write_raw(schema: BatchSchema, datums: list[tuple[str, dict[str, Any]]]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema.parsed, {"records": datums})
    return out.getvalue()


def test_old_reader_reads_new_writer() -> None:
    records = records_for(0, 20)
    v2_payload = Codec(writer_schema=V2_SCHEMA).encode(records)  # createdBy takes its default
    assert codec.decode(v2_payload, writer_schema=V2_SCHEMA).records == tuple(records)
    ace = {
        **{"id": bytes(range(16)), "resourceType": 2, "resourceName": "t", "patternType": 3},
        **{"principal": "User:a", "host": "*", "operation": 3, "permissionType": 3, "createdBy": "admin"},
    }
    raw = write_raw(V2_SCHEMA, [(codec.ACE_NAME, ace), (codec.REMOVE_NAME, {"id": bytes(range(16))})])
    decoded = codec.decode(raw, writer_schema=V2_SCHEMA).records
    text = codec.uuid_to_text(bytes(range(16)))
    assert decoded == (
        AccessControlEntryRecord(text, 2, "t", 3, "User:a", "*", 3, 3),
        RemoveAccessControlEntryRecord(text),
    )


def test_new_reader_reads_old_writer() -> None:
    records = records_for(0, 20)
    v1_payload = codec.encode(records)
    v2_reader = Codec(writer_schema=V2_SCHEMA, reader_schema=V2_SCHEMA)
    datums = v2_reader.decode_datums(v1_payload, base_offset=0, writer_schema=CURRENT_SCHEMA)
    aces = [d for name, d in datums if name == codec.ACE_NAME]
    assert aces and all(d["createdBy"] == "" for d in aces)  # filled from the v2 default
    assert v2_reader.decode_records(v1_payload, base_offset=0, writer_schema=CURRENT_SCHEMA) == tuple(records)


def test_file_log_mixes_schema_versions_both_ways(tmp_path: Path) -> None:
    d = tmp_path / "log"
    v2 = Codec(writer_schema=V2_SCHEMA, reader_schema=V2_SCHEMA)
    with FileLog(d) as log:
        log.append(records_for(0, 3))
    with FileLog(d, codec=v2) as log:  # a newer writer: rolls to a segment with its own schema
        log.append(records_for(3, 4))
        assert len(log.segment_paths()) == 2
        assert [len(b.records) for b in log.read()] == [3, 4]  # the newer reader reads the old segment
    with FileLog(d) as log:  # the older reader reads the newer segment
        assert [b.records for b in log.read()] == [tuple(records_for(0, 3)), tuple(records_for(3, 4))]
        log.append(records_for(7, 1))
        assert len(log.segment_paths()) == 3


def test_schema_files_resolve() -> None:
    assert {"AccessControlEntryRecord", "RecordBatch", "RemoveAccessControlEntryRecord", "Uuid"} <= set(
        schemas.available_schemas()
    )
    rb = schemas.load_schema("RecordBatch")
    ace, remove = rb["fields"][0]["type"]["items"]
    assert ace["fields"][0]["type"]["type"] == "fixed"  # Uuid inlined at its first use ...
    assert remove["fields"][0]["type"] == "kraft_acl.Uuid"  # ... and named afterwards
    names = "id resourceType resourceName patternType principal host operation permissionType"
    assert [f["name"] for f in ace["fields"]] == names.split()
    assert schemas.parse_schema("RemoveAccessControlEntryRecord")["name"] == "kraft_acl.RemoveAccessControlEntryRecord"
    assert "createdBy" in str(schemas.load_schema("AccessControlEntryRecord", V2_DIR))
    with pytest.raises(schemas.SchemaNotFoundError):
        schemas.load_schema("NoSuchRecord")


def test_an_empty_batch_encodes_and_decodes() -> None:
    payload = codec.encode([])
    assert codec.decode(payload).records == ()


def fastavro_bytes(records: list[MetadataRecord]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, CURRENT_SCHEMA.parsed, {"records": codec._datums(records)})
    return out.getvalue()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(aces, removes), max_size=40))
@example([AccessControlEntryRecord("_____________________w", -(2**31), "x" * 300, 2**31 - 1, "é" * 70, "", 64, -65)])
def test_the_fast_encoder_writes_fastavros_bytes(records: list[MetadataRecord]) -> None:
    """The hand-written v1 encoder `Codec.encode` uses is byte-identical to fastavro's writer."""
    assert codec.encode(records) == fastavro_bytes(records)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(aces, removes), max_size=60))
def test_the_fast_encoder_writes_fastavros_bytes_once_its_text_cache_is_full(
    records: list[MetadataRecord],
) -> None:
    """Past `_TEXTS_CACHED` principals and hosts a batch encodes the rest without remembering them."""
    limit = codec_fast._TEXTS_CACHED
    codec_fast._TEXTS_CACHED = 2
    try:
        assert codec.encode(records) == fastavro_bytes(records)
    finally:
        codec_fast._TEXTS_CACHED = limit


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(aces, removes), max_size=60))
def test_the_encoder_in_small_steps_writes_the_same_bytes(records: list[MetadataRecord]) -> None:
    """Ids converted and pieces joined a step at a time (a large batch never one long C call) change no byte."""
    steps = codec._STEP, codec_fast._JOIN_STEP
    codec._STEP, codec_fast._JOIN_STEP = 3, 7
    try:
        assert codec.encode(records) == fastavro_bytes(records)
    finally:
        codec._STEP, codec_fast._JOIN_STEP = steps


def test_the_fast_encoder_leaves_bad_records_to_fastavros_error() -> None:
    good = AccessControlEntryRecord("AAAAAAAAAAAAAAAAAAAAAQ", 2, "t", 3, "User:a", "*", 3, 3)
    for bad in (
        AccessControlEntryRecord(good.id, 2, "t", 3, "User:a", "*", 2**31, 3),  # too large for an int
        AccessControlEntryRecord(good.id, 2, None, 3, "User:a", "*", 3, 3),  # type: ignore[arg-type]
        AccessControlEntryRecord(good.id, 2, "t", 3, "\udc80", "*", 3, 3),  # a lone surrogate
    ):
        with pytest.raises(EncodeError):
            codec.encode([good, bad])


@pytest.mark.parametrize("field", ["resource_name", "principal", "host"])
def test_the_fast_encoder_refuses_strings_over_kafkas_limit_like_the_checked_path(field: str) -> None:
    fields = {"resource_name": "t", "principal": "User:a", "host": "*", field: "é" * 16_384}  # 32,768 UTF-8 bytes
    good = AccessControlEntryRecord("AAAAAAAAAAAAAAAAAAAAAQ", 2, "t", 3, "User:a", "*", 3, 3)
    bad = AccessControlEntryRecord(
        "AAAAAAAAAAAAAAAAAAAAAg", 2, fields["resource_name"], 3, fields["principal"], fields["host"], 3, 3
    )
    with pytest.raises(EncodeError, match=f"record 1 of the batch: field '{field}' is 32768 UTF-8 bytes"):
        codec.encode([good, bad])
    fields[field] = "é" * 16_383 + "e"  # 32,767 bytes: Kafka's limit, accepted
    ok = AccessControlEntryRecord(
        "AAAAAAAAAAAAAAAAAAAAAg", 2, fields["resource_name"], 3, fields["principal"], fields["host"], 3, 3
    )
    assert codec.decode(codec.encode([good, ok])).records[1] == ok
