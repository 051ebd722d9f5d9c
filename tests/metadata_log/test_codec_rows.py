"""The replay fast path: `codec_rows.decode_v1_rows` against `acl_from_record`/`codec_fast.decode_v1`,
`LazyRecords` (lazy decoding, errors, sequence semantics), `batch_rows` and a FileLog read end to end.

The decoder tests run against both implementations: the source (`codec_rows`) and, when it is
built, its mypyc-compiled copy (`metadata_log.native`; test_native.py makes CI require it)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kraftacl import schemas
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.records import ACL_ROWS, acl_from_record, batch_rows
from kraftacl.metadata_log import native
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec import acl_rows
from kraftacl.metadata_log.codec import avro as codec
from kraftacl.metadata_log.codec import fast as codec_fast
from kraftacl.metadata_log.codec import lazy_records as lazy_records_module
from kraftacl.metadata_log.codec import rows as codec_rows
from kraftacl.metadata_log.codec.avro import BatchSchema, Codec
from kraftacl.metadata_log.codec.fast import DecodeRowsPart
from kraftacl.metadata_log.codec.lazy_records import LazyRecords
from kraftacl.metadata_log.codec.rows import RowTables
from kraftacl.metadata_log.errors import DecodeError
from kraftacl.metadata_log.records import (
    AccessControlEntryRecord,
    MetadataRecord,
    RecordBatch,
    RemoveAccessControlEntryRecord,
)
from tests.metadata_log.factories import id_at, records_for

ACE = AccessControlEntryRecord
DecodeRows = Callable[[bytes, RowTables], tuple[list[str], list[Any]]]
_compiled, _ = native.load_native(codec_rows, "kraftacl.metadata_log.codec._rows_native")
DECODERS = [pytest.param(codec_rows.decode_v1_rows, id="source")] + (
    [pytest.param(_compiled.decode_v1_rows, id="native")] if _compiled is not None else []
)
each_decoder = pytest.mark.parametrize("decode_v1_rows", DECODERS)
V2_SCHEMA = BatchSchema.from_schema(schemas.load_schema("RecordBatch", Path(__file__).parent / "data" / "v2"))
ONE_BYTE = range(-64, 64)  # the codes whose zigzag varint is a single byte

edges = st.sampled_from([-(2**31), 2**31 - 1, -65, -64, 63, 64, 8191, 8192, -8193])
codes = st.one_of(st.integers(-1, 20), st.integers(-70, 70), edges, st.integers(-(2**31), 2**31 - 1))
ids = st.binary(min_size=16, max_size=16).map(codec.uuid_to_text)
aces = st.builds(ACE, ids, codes, st.text(), codes, st.text(), st.one_of(st.just("*"), st.text()), codes, codes)
batches = st.lists(st.one_of(aces, st.builds(RemoveAccessControlEntryRecord, ids)), min_size=1, max_size=40)
EDGE_ACE = ACE(id_at(1), -(2**31), "é" * 70, 2**31 - 1, "User:" + "ü" * 40, "", 64, -65)


def reference(records: list[MetadataRecord]) -> tuple[list[str], list[StandardAcl | None]]:
    """What a batch must decode to: `acl_from_record` per add, None per remove."""
    return [r.id for r in records], [acl_from_record(r) if type(r) is ACE else None for r in records]


@each_decoder
@settings(max_examples=300)
@given(batches)
@example([EDGE_ACE, RemoveAccessControlEntryRecord(id_at(2)), ACE(id_at(3), 0, "", 0, "", "", 0, 0)])
def test_rows_equal_the_reference_conversion(decode_v1_rows: DecodeRows, records: list[MetadataRecord]) -> None:
    ids_, rows = decode_v1_rows(codec.encode(records), ACL_ROWS)
    assert (ids_, rows) == reference(records)
    enum_types = (ResourceType, None, PatternType, None, None, AclOperation, AclPermissionType)
    for row, expected in zip(rows, reference(records)[1], strict=True):
        if row is None or expected is None:
            assert row is expected
            continue
        assert type(row) is StandardAcl and type(row.resource_name) is str
        assert all(t is None or type(v) is t for v, t in zip(row, enum_types, strict=True)), row
        assert all(row[i] is expected[i] for i in (0, 2, 3, 4, 5, 6))  # same enum members, same interned str
        assert row.principal is sys.intern(row.principal) and row.host is sys.intern(row.host)


class Row(NamedTuple):
    resource_type: Any
    resource_name: str
    pattern_type: Any
    principal: str
    host: str
    operation: Any
    permission_type: Any


CALLS: list[tuple[str, object]] = []


def recording(field: str) -> Callable[[Any], Any]:
    def mapper(value: Any) -> Any:
        CALLS.append((field, value))
        return (field, value)

    return mapper


def recording_intern(text: str) -> str:
    CALLS.append(("intern", text))
    return sys.intern(text)


CUSTOM = RowTables(Row, recording("rt"), recording("pt"), recording("op"), recording("pm"), recording_intern)


@each_decoder
@settings(max_examples=200)
@given(batches)
@example([EDGE_ACE, ACE(id_at(4), 63, "x", -64, "p", "h", 0, 1)])
def test_custom_tables_map_one_byte_codes_by_table_and_others_by_function(
    decode_v1_rows: DecodeRows, records: list[MetadataRecord]
) -> None:
    decode_v1_rows(b"\x00", CUSTOM)  # an empty batch: precomputes the tables if not yet done
    sys.modules[decode_v1_rows.__module__]._TEXTS[CUSTOM].clear()  # no principal or host seen yet
    CALLS.clear()
    got_ids, rows = decode_v1_rows(codec.encode(records), CUSTOM)
    expected_calls: list[tuple[str, object]] = []
    seen: set[str] = set()  # intern runs once per distinct principal or host text
    expected_rows: list[Row | None] = []
    for r in records:
        if type(r) is not ACE:
            expected_rows.append(None)
            continue
        rt, pt, op, pm = ("rt", r.resource_type), ("pt", r.pattern_type), ("op", r.operation), ("pm", r.permission_type)
        in_order = [rt, pt, ("intern", r.principal), ("intern", r.host), op, pm]  # the payload's field order
        for call in in_order:
            if call[0] == "intern" and call[1] not in seen:
                seen.add(str(call[1]))
                expected_calls.append(call)
            elif call[0] != "intern" and call[1] not in ONE_BYTE:  # one-byte codes come from the tables
                expected_calls.append(call)
        expected_rows.append(Row(rt, r.resource_name, pt, r.principal, r.host, op, pm))
    assert got_ids == [r.id for r in records]
    assert rows == expected_rows and all(row is None or type(row) is Row for row in rows)
    assert expected_calls == CALLS


def test_tables_hold_the_zigzag_decoded_codes() -> None:
    rt, pt, op, pm = CUSTOM.one_byte()
    assert rt[0] == ("rt", 0) and rt[1] == ("rt", -1) and rt[2] == ("rt", 1) and rt[127] == ("rt", -64)
    assert pm[126] == ("pm", 63) and len(pt) == len(op) == 128


# -- damaged payloads: decode_v1_rows fails only with ValueError/IndexError and accepts what decode_v1 accepts

DAMAGE_BASE = [EDGE_ACE, *records_for(0, 8), ACE(id_at(9), 3, "t" * 200, 4, "User:a", "*", 100000, -3)]


def both_outcomes(data: bytes, decode_v1_rows: DecodeRows) -> None:
    try:
        fast: object = reference(codec_fast.decode_v1(data))
    except (ValueError, IndexError):
        fast = "error"
    try:
        rows: object = decode_v1_rows(data, ACL_ROWS)
    except (ValueError, IndexError):
        rows = "error"
    assert rows == fast, data.hex()


@each_decoder
def test_every_truncation_is_rejected_like_decode_v1(decode_v1_rows: DecodeRows) -> None:
    payload = codec.encode(DAMAGE_BASE)
    for cut in range(len(payload)):
        with pytest.raises((ValueError, IndexError)):
            decode_v1_rows(payload[:cut], ACL_ROWS)
        both_outcomes(payload[:cut], decode_v1_rows)


@each_decoder
def test_every_byte_flip_agrees_with_decode_v1(decode_v1_rows: DecodeRows) -> None:
    payload = codec.encode(DAMAGE_BASE)
    for where in range(len(payload)):
        for flip in (0x01, 0x02, 0x40, 0x80, 0xFF):
            damaged = bytearray(payload)
            damaged[where] ^= flip
            both_outcomes(bytes(damaged), decode_v1_rows)


@each_decoder
@settings(max_examples=300)
@given(batches, st.integers(0, 10**6), st.integers(1, 255), st.integers(0, 3))
def test_random_damage_agrees_with_decode_v1(
    decode_v1_rows: DecodeRows, records: list[MetadataRecord], where: int, flip: int, cut: int
) -> None:
    payload = bytearray(codec.encode(records))
    payload[where % len(payload)] ^= flip
    both_outcomes(bytes(payload[: len(payload) - cut]), decode_v1_rows)


@each_decoder
def test_invalid_union_branch_and_trailing_bytes(decode_v1_rows: DecodeRows) -> None:
    payload = codec.encode(records_for(0, 3))
    assert payload[1] == 0  # the first record's union branch (AccessControlEntryRecord)
    for branch in (1, 4, 0x80):
        with pytest.raises(ValueError, match=f"invalid union branch {branch} at byte 1"):
            decode_v1_rows(payload[:1] + bytes([branch]) + payload[2:], ACL_ROWS)
    for extra in (b"\x00", b"abc"):
        with pytest.raises(ValueError, match=f"{len(extra)} bytes after the end of the batch"):
            decode_v1_rows(payload + extra, ACL_ROWS)


@each_decoder
def test_multiple_and_sized_blocks(decode_v1_rows: DecodeRows) -> None:
    one, two = codec.encode(records_for(0, 1))[1:-1], codec.encode(records_for(1, 2))[1:-1]
    size = len(two) << 1  # zigzag of the byte size; a two-byte varint
    assert 0x80 <= size < 0x4000
    payload = b"\x02" + one + b"\x03" + bytes([size & 0x7F | 0x80, size >> 7]) + two + b"\x00"  # counts 1, -2
    assert decode_v1_rows(payload, ACL_ROWS) == reference(records_for(0, 3))


PART_DECODERS = [pytest.param(codec_rows.decode_v1_rows_part, id="source")] + (
    [pytest.param(_compiled.decode_v1_rows_part, id="native")] if _compiled is not None else []
)


def in_parts(decode_part: DecodeRowsPart, payload: bytes, limit: int) -> tuple[list[str], list[Any], int]:
    """The whole payload decoded `limit` rows at a time: (ids, rows, how many calls)."""
    ids_: list[str] = []
    rows: list[Any] = []
    pos = left = calls = 0
    while pos >= 0:
        part_ids, part_rows, pos, left = decode_part(payload, ACL_ROWS, pos, left, limit)
        assert len(part_ids) == len(part_rows) <= limit
        ids_ += part_ids
        rows += part_rows
        calls += 1
    return ids_, rows, calls


@pytest.mark.parametrize("decode_part", PART_DECODERS)
@settings(max_examples=200)
@given(batches, st.integers(1, 9))
def test_parts_of_any_size_join_to_the_whole(
    decode_part: DecodeRowsPart, records: list[MetadataRecord], limit: int
) -> None:
    ids_, rows, calls = in_parts(decode_part, codec.encode(records), limit)
    assert (ids_, rows) == reference(records)
    assert calls == len(records) // limit + 1  # the last call reads the end (with the last rows or none)


@pytest.mark.parametrize("decode_part", PART_DECODERS)
def test_parts_cross_block_boundaries_and_find_damage_in_a_later_part(decode_part: DecodeRowsPart) -> None:
    one, two = codec.encode(records_for(0, 1))[1:-1], codec.encode(records_for(1, 2))[1:-1]
    size = len(two) << 1
    payload = b"\x02" + one + b"\x03" + bytes([size & 0x7F | 0x80, size >> 7]) + two + b"\x00"  # counts 1, -2
    for limit in (1, 2, 3, 4):
        assert in_parts(decode_part, payload, limit)[:2] == reference(records_for(0, 3))
    with pytest.raises(ValueError, match="1 bytes after the end of the batch"):
        in_parts(decode_part, payload + b"\x00", 1)
    part_ids, _, pos, left = decode_part(payload[:-5], ACL_ROWS, 0, 0, 2)  # the first two rows are whole
    assert len(part_ids) == 2 and pos > 0 and left == 1
    with pytest.raises((ValueError, IndexError)):
        decode_part(payload[:-5], ACL_ROWS, pos, left, 2)


def test_a_batch_larger_than_a_part_is_decoded_in_parts_by_lazy_records(monkeypatch: pytest.MonkeyPatch) -> None:
    records = records_for(0, 50)
    calls: list[int] = []
    real = codec_fast.decode_v1_rows_part

    def counted(
        buf: bytes, tables: RowTables, pos: int, left: int, limit: int
    ) -> tuple[list[str], list[Any], int, int]:
        calls.append(limit)
        return real(buf, tables, pos, left, limit)

    monkeypatch.setattr(lazy_records_module, "ROWS_PER_PART", 8)
    monkeypatch.setattr(codec_fast, "decode_v1_rows_part", counted)
    assert lazy_batch(codec.encode(records), 50).records.acl_rows(ACL_ROWS) == reference(records)
    assert calls == [8] * 7  # 6 parts of 8, then the last 2 rows and the end


# -- LazyRecords


def lazy_batch(payload: bytes, count: int, *, writer: BatchSchema | None = None, path: str | None = None) -> Any:
    frame = {"base_offset": 7, "epoch": 1, "timestamp_ms": 2, "expected_count": count}
    return Codec().decode_batch(payload, **frame, writer_schema=writer, path=path, lazy=True)


@pytest.mark.parametrize("path", [None, "segment.log"])
def test_damaged_payload_has_a_length_and_fails_only_when_decoded(path: str | None) -> None:
    batch = lazy_batch(codec.encode(records_for(0, 5))[:-12], 5, path=path)
    assert isinstance(batch.records, LazyRecords)
    assert len(batch.records) == 5 and batch.next_offset == 12 and batch.last_offset == 11
    where = "base offset 7" + ("" if path is None else " in segment.log") + ": "
    actions: list[Callable[[], object]] = [
        lambda: list(batch.records),
        lambda: batch.records[0],
        lambda: batch.records[1:],
        lambda: batch.records.acl_rows(ACL_ROWS),
        lambda: batch_rows(batch.records),
        lambda: hash(batch.records),
        lambda: batch.records == (),
    ]
    for action in actions:
        with pytest.raises(DecodeError, match=where) as info:
            action()
        assert info.value.offset == 7 and info.value.path == (None if path is None else Path(path))
        assert "field 'principal'" in info.value.reason  # diagnose_v1's message


def test_lazy_records_behave_as_the_tuple() -> None:
    records = records_for(0, 9)
    batch = lazy_batch(codec.encode(records), 9)
    assert batch.records.acl_rows(ACL_ROWS) == reference(records)  # before decoding: the fast path
    assert batch.records == tuple(records) and tuple(records) == batch.records
    assert batch.records != tuple(records[:-1]) and tuple(records[1:]) != batch.records
    assert batch.records == lazy_batch(codec.encode(records), 9).records
    assert type(batch.records[2:5]) is tuple and batch.records[2:5] == tuple(records[2:5])
    assert batch.records[-1] == records[-1] and list(reversed(batch.records)) == records[::-1]
    assert hash(batch.records) == hash(tuple(records))
    assert batch == RecordBatch(7, 1, 2, tuple(records)) and hash(batch) == hash(RecordBatch(7, 1, 2, tuple(records)))
    assert records[3] in batch.records and batch.records.index(records[3]) == 3
    assert batch.records.acl_rows(ACL_ROWS) is None  # decoded now: the caller converts the records
    assert batch_rows(batch.records) == reference(records)


def test_no_fast_path_for_another_writer_schema() -> None:
    records = records_for(0, 9)
    batch = lazy_batch(Codec(writer_schema=V2_SCHEMA).encode(records), 9, writer=V2_SCHEMA)
    assert batch.records.acl_rows(ACL_ROWS) is None
    assert batch_rows(batch.records) == reference(records)
    assert batch.records == tuple(records)


@pytest.mark.parametrize("delta", [-1, 1])
def test_count_mismatch_is_a_decode_error(delta: int) -> None:
    payload = codec.encode(records_for(0, 4))
    message = f"base offset 7 in x.log: the frame says {4 + delta} records but the payload holds 4"
    for action in (lambda b: b.records.acl_rows(ACL_ROWS), lambda b: tuple(b.records), lambda b: b.records[0]):
        batch = lazy_batch(payload, 4 + delta, path="x.log")
        assert len(batch.records) == 4 + delta
        with pytest.raises(DecodeError, match=message):
            action(batch)


# -- batch_rows and a file log end to end


@settings(max_examples=100)
@given(batches)
def test_batch_rows_fast_and_slow_paths_agree(records: list[MetadataRecord]) -> None:
    fast = batch_rows(lazy_batch(codec.encode(records), len(records)).records)
    assert fast == batch_rows(tuple(records)) == batch_rows(records) == reference(records)


PLAIN = RowTables(tuple, int, int, int, int, sys.intern)  # the pipeline's rows: the record's fields as they are


@settings(max_examples=100)
@given(batches)
def test_the_acl_rows_entry_point_gives_any_row_type_on_both_paths(records: list[MetadataRecord]) -> None:
    """`codec.acl_rows`, the one decode-to-rows entry point, with plain tuples (the pipeline's tables)."""
    expected = [None if type(r) is not ACE else (r.resource_type, r.resource_name, r.pattern_type, r.principal,
                r.host, r.operation, r.permission_type) for r in records]  # fmt: skip
    fast = acl_rows(lazy_batch(codec.encode(records), len(records)).records, PLAIN)
    assert fast == acl_rows(records, PLAIN) == ([r.id for r in records], expected)


def test_batch_rows_rejects_a_non_record() -> None:
    with pytest.raises(TypeError, match="not a metadata record: str"):
        batch_rows((*records_for(0, 2), "nope"))  # type: ignore[arg-type]


def test_file_log_batches_replay_through_the_fast_path(tmp_path: Path) -> None:
    sizes = [1, 7, 14, 40, 3]
    bases = [sum(sizes[:i]) for i in range(len(sizes))]
    with FileLog(tmp_path / "log") as log:
        for base, size in zip(bases, sizes, strict=True):
            log.append([*records_for(base, size - 1), ACE(id_at(base), 2, "é", 3, "User:ü", "*", 64, -65)])
    with FileLog(tmp_path / "log") as log:
        batches_read = list(log.read())
    assert [b.base_offset for b in batches_read] == bases
    all_rows: list[StandardAcl | None] = []
    for batch in batches_read:
        assert isinstance(batch.records, LazyRecords)
        fast = batch_rows(batch.records)  # decoded straight from the payload, records never built
        assert batch.records.acl_rows(ACL_ROWS) is not None  # so the fast path was available
        assert fast == batch_rows(tuple(batch.records)) == reference(list(batch.records))
        all_rows += fast[1]
    assert None in all_rows and len(all_rows) == sum(sizes) > all_rows.count(None)


@each_decoder
def test_the_text_cache_stays_bounded_and_right_past_its_limit(decode_v1_rows: DecodeRows) -> None:
    # More distinct hosts than the principal/host cache holds: it is cleared, never wrong, never larger.
    tables = RowTables(Row, int, int, int, int, sys.intern)  # a row type of its own: a fresh cache
    count = codec_rows.TEXTS_LIMIT + 500
    records = [
        ACE(id_at(n), 2, "t", 3, f"User:u{n % 7}", f"10.{n >> 16}.{n >> 8 & 255}.{n & 255}", 3, 3) for n in range(count)
    ]
    _, rows = decode_v1_rows(codec.encode(records), tables)
    assert [(row.principal, row.host) for row in rows] == [(r.principal, r.host) for r in records]
    assert all(row.principal is sys.intern(row.principal) for row in rows)
    module = sys.modules[decode_v1_rows.__module__]
    assert 0 < len(module._TEXTS[tables]) <= codec_rows.TEXTS_LIMIT
