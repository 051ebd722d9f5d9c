"""The strict pre-read rejects the union and enum indexes fastavro reads from the end, and nothing valid."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftacl.metadata_log.codec import avro_strict
from kraftacl.metadata_log.codec.avro import CURRENT_SCHEMA, Codec
from kraftacl.metadata_log.errors import DecodeError
from kraftacl.snapshots.columns import CHUNK_SCHEMA

RICH = fastavro.parse_schema(
    {
        "type": "record",
        "name": "Rich",
        "fields": [
            {"name": "choice", "type": ["null", "long", "string"]},
            {"name": "colour", "type": {"type": "enum", "name": "Colour", "symbols": ["RED", "GREEN"]}},
            {"name": "tags", "type": {"type": "map", "values": ["null", "Colour"]}},
            {"name": "items", "type": {"type": "array", "items": ["int", "double"]}},
            {"name": "raw", "type": {"type": "fixed", "name": "Four", "size": 4}},
            {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "flag", "type": "boolean"},
            {"name": "next", "type": ["null", "Rich"]},
        ],
    }
)

colours = st.sampled_from(["RED", "GREEN"])
leaf = st.fixed_dictionaries(
    {
        "choice": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=5)),
        "colour": colours,
        "tags": st.dictionaries(st.text(max_size=3), st.one_of(st.none(), colours), max_size=3),
        "items": st.lists(st.one_of(st.integers(-(2**31), 2**31 - 1), st.floats(allow_nan=False)), max_size=4),
        "raw": st.binary(min_size=4, max_size=4),
        "when": st.integers(0, 2**40),
        "flag": st.booleans(),
        "next": st.none(),
    }
)
rich_datums = st.recursive(leaf, lambda inner: st.builds(lambda d, n: {**d, "next": n}, leaf, inner), max_leaves=3)


def write(datum: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, RICH, datum)
    return out.getvalue()


@settings(max_examples=200, deadline=None)
@given(rich_datums)
def test_valid_data_passes(datum: dict[str, Any]) -> None:
    avro_strict.check_indexes(write(datum), RICH)


def test_a_negative_union_index_is_refused() -> None:
    valid = write(
        {
            "choice": None,
            "colour": "RED",
            "tags": {},
            "items": [],
            "raw": b"abcd",
            "when": 0,
            "flag": True,
            "next": None,
        }
    )
    damaged = bytes([1]) + valid[1:]  # zigzag 1 = index -1: fastavro reads the last branch (string)
    with pytest.raises(ValueError, match=r"union index -1 at byte 0 is outside 0\.\.2"):
        avro_strict.check_indexes(damaged, RICH)


@pytest.mark.parametrize(("code", "index"), [(1, -1), (4, 2)])
def test_an_enum_index_out_of_range_is_refused(code: int, index: int) -> None:
    schema = fastavro.parse_schema({"type": "enum", "name": "E", "symbols": ["A", "B"]})
    assert fastavro.schemaless_reader(io.BytesIO(bytes([1])), schema) == "B"  # why this module exists
    with pytest.raises(ValueError, match=rf"enum index {index} at byte 0 is outside 0\.\.1"):
        avro_strict.check_indexes(bytes([code]), schema)


def test_a_bad_index_inside_a_sized_array_block_is_found() -> None:
    schema = fastavro.parse_schema({"type": "array", "items": ["int", "string"]})
    # block of -2 items (sized) with byte size 4: index 0 + int 1, then index -1 + int
    with pytest.raises(ValueError, match=r"union index -1 at byte 4 is outside 0\.\.1"):
        avro_strict.check_indexes(bytes([3, 8, 0, 2, 1, 2, 0]), schema)


def test_a_truncated_payload_ends_the_walk_quietly() -> None:
    valid = write(
        {
            "choice": "abc",
            "colour": "GREEN",
            "tags": {"k": "RED"},
            "items": [1, 2.5],
            "raw": b"abcd",
            "when": 5,
            "flag": False,
            "next": None,
        }
    )
    for cut in range(len(valid)):
        avro_strict.check_indexes(valid[:cut], RICH)  # fastavro reports the truncation itself


def test_only_schemas_with_unions_or_enums_are_pre_read() -> None:
    assert CURRENT_SCHEMA.indexed and not CHUNK_SCHEMA.indexed
    assert avro_strict.has_indexes(RICH)
    assert not avro_strict.has_indexes(fastavro.parse_schema({"type": "array", "items": "string"}))
    assert avro_strict.has_indexes(fastavro.parse_schema({"type": "map", "values": ["null", "int"]}))


def test_the_fastavro_decode_path_refuses_a_negative_branch() -> None:
    payload = bytes([2, 3]) + bytes(24)  # one record, union index -2 (zigzag 3), then a Remove's 16-byte id
    with pytest.raises(DecodeError, match=r"base offset 9: ValueError: union index -2 at byte 1 is outside 0\.\.1"):
        Codec().decode_datums(payload, base_offset=9)
