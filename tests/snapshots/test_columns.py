"""The columnar snapshot chunk (`snapshots.columns`) and format 2 files, plus reading format 1 files.

Round trips cover arbitrary unicode (NUL, \\x01, empty strings) and every int32 code; damaged
payloads are built with fastavro against `CHUNK_SCHEMA` so that each inconsistency is reached past
the Avro layer. A format-1 file (row-wise `RecordBatch` chunks) is written by hand from the layout
documented in `snapshots/format.py`.
"""

from __future__ import annotations

import dataclasses
import io
import json
import struct
import tempfile
import zlib
from pathlib import Path
from typing import Any
from unittest import mock

import fastavro
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kraftacl import schemas
from kraftacl.authorizer.state.node import AclNode
from kraftacl.authorizer.state.records import acl_from_record
from kraftacl.metadata_log.backends.memory import MemoryLog
from kraftacl.metadata_log.codec.avro import CURRENT_SCHEMA, BatchSchema, Codec, new_uuid, uuid_to_text
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from kraftacl.snapshots import columns as columns_module
from kraftacl.snapshots import format as snapshot_format
from kraftacl.snapshots.columns import CHUNK_SCHEMA, AclColumns, decode_chunk, encode_chunk
from kraftacl.snapshots.errors import CorruptSnapshotError
from kraftacl.snapshots.format import SnapshotHeader, SnapshotReader, write_snapshot_file
from kraftacl.snapshots.naming import SnapshotId
from kraftacl.snapshots.store import SnapshotStore
from tests.snapshots.test_snapshots import acl_id

INT32 = (-(2**31), 2**31 - 1)
codes = st.one_of(st.integers(-2, 20), st.sampled_from(INT32), st.integers(*INT32))
strings = st.one_of(st.text(), st.text(alphabet="\x00\x01a*:", max_size=4), st.sampled_from(["", "\x00", "\x01"]))
aces = st.builds(
    AccessControlEntryRecord,
    id=st.binary(min_size=16, max_size=16).map(uuid_to_text),
    resource_type=codes,
    resource_name=strings,
    pattern_type=codes,
    principal=strings,
    host=strings,
    operation=codes,
    permission_type=codes,
)
RECORD_FIELDS = [f.name for f in dataclasses.fields(AccessControlEntryRecord)]
CODE_FIELDS = {
    "resource_type": "resourceTypes",
    "pattern_type": "patternTypes",
    "operation": "operations",
    "permission_type": "permissionTypes",
}


def ace(n: int, **changes: Any) -> AccessControlEntryRecord:
    fields: dict[str, Any] = {
        "id": acl_id(n),
        "resource_type": 2,
        "resource_name": f"t{n}",
        "pattern_type": 3,
        "principal": f"User:u{n % 2}",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }
    return AccessControlEntryRecord(**{**fields, **changes})


def raw_datum(payload: bytes) -> dict[str, Any]:
    datum: Any = fastavro.schemaless_reader(io.BytesIO(payload), CHUNK_SCHEMA.parsed, None)
    return dict(datum)


def write_datum(datum: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, CHUNK_SCHEMA.parsed, datum)
    return out.getvalue()


# ---- encode / decode round trip ---------------------------------------------------------------------------


@settings(max_examples=300)
@given(st.lists(aces, max_size=30))
@example([])
@example([ace(0, resource_name="", principal="", host="")])
@example([ace(0, resource_name="\x00", principal="\x01", host="\x00\x01"), ace(1, resource_name="")])
@example([ace(n, **{f: INT32[n % 2] for f in CODE_FIELDS}) for n in range(2)])
def test_round_trip(records: list[AccessControlEntryRecord]) -> None:
    payload = encode_chunk(records)
    columns = decode_chunk(payload)
    assert columns.rows == len(records)
    assert list(columns.records()) == records
    assert columns == AclColumns(*([getattr(r, attr) for r in records] for attr in RECORD_FIELDS))
    separator = raw_datum(payload)["separator"]
    assert len(separator) == 1
    assert all(separator not in text for r in records for text in (r.resource_name, r.principal, r.host))
    # Equal principals and hosts come back as one shared string object.
    for column in (columns.principals, columns.hosts):
        shared = {text: text for text in column}
        assert all(text is shared[text] for text in column)


def test_empty_chunk() -> None:
    payload = encode_chunk([])
    assert raw_datum(payload)["count"] == 0
    columns = decode_chunk(payload)
    assert columns.rows == 0 and list(columns.records()) == [] and all(col == [] for col in columns)


def test_random_ids_round_trip() -> None:
    records = [ace(0, id=new_uuid()) for _ in range(50)]
    assert decode_chunk(encode_chunk(records)).ids == [r.id for r in records]


# ---- what encode_chunk refuses ----------------------------------------------------------------------------


@pytest.mark.parametrize("attr", sorted(CODE_FIELDS))
@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**40])
def test_code_outside_int32_names_the_field(attr: str, value: int) -> None:
    with pytest.raises(ValueError, match=f"field '{CODE_FIELDS[attr]}'.*32-bit"):
        encode_chunk([ace(0), ace(1, **{attr: value})])


@pytest.mark.parametrize("bad", ["not-a-uuid", "AAAAAAAAAAAAAAAAAAAAAB", "AAAAAAAAAAAAAAAAAAAAAA==", "", 123, None])
def test_bad_id_names_the_record(bad: object) -> None:
    with pytest.raises(ValueError, match=r"record 1: id .* is not a Kafka Uuid text"):
        encode_chunk([ace(0), ace(1, id=bad)])


def test_an_id_hiding_two_ids_behind_a_newline_is_refused() -> None:
    """The one-regex check over newline-joined ids must not take one id with a newline for two."""
    two_in_one = f"{acl_id(1)}\n{acl_id(2)}"
    with pytest.raises(ValueError, match=r"record 0: id .* is not a Kafka Uuid text"):
        encode_chunk([ace(0, id=two_in_one), ace(3)])
    with pytest.raises(ValueError, match=r"record 1: id .* is not a Kafka Uuid text"):
        encode_chunk([ace(0), ace(1, id=two_in_one), ace(2, id="")])


def test_only_access_control_entry_records() -> None:
    with pytest.raises(ValueError, match="record 0: a snapshot holds only AccessControlEntryRecords"):
        encode_chunk([RemoveAccessControlEntryRecord(acl_id(0))])  # type: ignore[list-item]


# ---- what decode_chunk refuses ----------------------------------------------------------------------------

GOOD = encode_chunk([ace(0), ace(1), ace(2, principal="User:u0", host="10.0.0.1")])
I32 = struct.Struct("<i")


def damaged(**changes: Any) -> bytes:
    return write_datum({**raw_datum(GOOD), **changes})


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (damaged(count=4), r"field 'ids' holds 48 bytes, not 16 for each of 4 rows"),
        (damaged(count=2), r"field 'ids' holds 48 bytes, not 16 for each of 2 rows"),
        (damaged(count=-1), r"field 'ids' holds 48 bytes, not 16 for each of -1 rows"),
        (damaged(ids=bytes(47)), r"field 'ids' holds 47 bytes"),
        (damaged(resourceTypes=bytes(11)), r"field 'resourceTypes' holds 11 bytes, not 4 for each of 3 rows"),
        (damaged(patternTypes=bytes(16)), r"field 'patternTypes' holds 16 bytes"),
        (damaged(operations=b""), r"field 'operations' holds 0 bytes"),
        (damaged(permissionTypes=bytes(13)), r"field 'permissionTypes' holds 13 bytes"),
        (damaged(principals=bytes(8)), r"field 'principals' holds 8 bytes"),
        (damaged(hosts=bytes(13)), r"field 'hosts' holds 13 bytes"),
        (damaged(principals=I32.pack(0) * 2 + I32.pack(2)), r"field 'principals' has an index outside .* 2 entries"),
        (damaged(principals=I32.pack(0) * 2 + I32.pack(-1)), r"field 'principals' has an index outside"),
        (damaged(hosts=I32.pack(0) + I32.pack(7) + I32.pack(0)), r"field 'hosts' has an index outside .* 2 entries"),
        (damaged(hosts=I32.pack(-(2**31)) * 3), r"field 'hosts' has an index outside"),
        (damaged(separator="\x00\x01"), r"field 'separator' is '\\x00\\x01', not one character"),
        (damaged(separator=""), r"field 'separator' is '', not one character"),
        (damaged(resourceNames="t0\x00t1"), r"field 'resourceNames' holds 2 entries, not 3"),
        (damaged(resourceNames="t0\x00t1\x00t2\x00t3"), r"field 'resourceNames' holds 4 entries, not 3"),
        (damaged(resourceNames="t0t1t2"), r"field 'resourceNames' holds 1 entries, not 3"),
        (GOOD[:-1], r"EOFError"),
        (GOOD + b"\x00", r"1 bytes after the end of the chunk"),
        (b"", r"EOFError"),
    ],
)
def test_damaged_payload(payload: bytes, message: str) -> None:
    assert raw_datum(GOOD)["separator"] == "\x00" and raw_datum(GOOD)["principalDictionary"] == "User:u0\x00User:u1"
    with pytest.raises(ValueError, match=message):
        decode_chunk(payload)


def test_too_few_dictionary_names_for_the_indexes() -> None:
    payload = damaged(principalDictionary="User:u0")  # indexes 0, 1, 0 but one name
    with pytest.raises(ValueError, match=r"field 'principals' has an index outside principalDictionary's 1 entries"):
        decode_chunk(payload)
    with pytest.raises(ValueError, match=r"field 'hosts' has an index outside hostDictionary's 1 entries"):
        decode_chunk(damaged(hostDictionary="*"))  # indexes 0, 0, 1


def test_an_empty_chunk_with_strings_is_refused() -> None:
    empty = raw_datum(encode_chunk([]))
    with pytest.raises(ValueError, match=r"field 'resourceNames' holds 1 entries, not 0"):
        decode_chunk(write_datum({**empty, "resourceNames": "t0"}))
    with pytest.raises(ValueError, match=r"field 'principalDictionary' has entries but the chunk has no rows"):
        decode_chunk(write_datum({**empty, "principalDictionary": "User:a"}))


# ---- format 1 and format 2 files --------------------------------------------------------------------------


def write_v1_file(path: Path, chunks: list[list[AccessControlEntryRecord]], version: int = 1) -> None:
    """A format-1 snapshot, byte for byte as documented at the top of snapshots/format.py."""
    meta = json.dumps(
        {"end_offset": 99, "epoch": 4, "timestamp_ms": 1234, "writer_schema": CURRENT_SCHEMA.json_text}
    ).encode()
    out = bytearray(b"KACLSNAP" + struct.pack(">HII", version, len(meta), zlib.crc32(meta)) + meta)
    crcs = bytearray()
    for chunk in chunks:
        payload = Codec().encode(chunk) if chunk else empty_batch()  # Codec().encode([]) raises binascii.Error
        crc = zlib.crc32(payload)
        out += struct.pack(">III", len(payload), len(chunk), crc) + payload
        crcs += struct.pack(">I", crc)
    total = sum(map(len, chunks))
    out += struct.pack(">IQII", 0xFFFFFFFF, total, len(chunks), zlib.crc32(crcs)) + b"KACLEND!"
    path.write_bytes(bytes(out))


def empty_batch() -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, CURRENT_SCHEMA.parsed, {"records": []})
    return out.getvalue()


def from_columns(reader: SnapshotReader) -> list[AccessControlEntryRecord]:
    return [record for columns in reader.columns() for record in columns.records()]


@pytest.mark.parametrize("sizes", [[], [0], [1], [3, 2], [4, 0, 5]])
def test_format_1_file_is_still_read(tmp_path: Path, sizes: list[int]) -> None:
    chunks, n = [], 0
    for size in sizes:
        chunks.append([ace(i, resource_name=f"name\x00{i}", operation=-(2**31) + i) for i in range(n, n + size)])
        n += size
    path = tmp_path / "v1.checkpoint"
    write_v1_file(path, chunks)
    written = [r for chunk in chunks for r in chunk]
    reader = SnapshotReader(path)
    assert reader.version == 1
    assert (reader.header.end_offset, reader.header.epoch, reader.header.timestamp_ms) == (99, 4, 1234)
    assert list(reader.records()) == written
    assert from_columns(SnapshotReader(path)) == written
    assert reader.validate() == reader.verify() == len(written)


@pytest.mark.parametrize("version", [0, 3, 0xFFFF])
def test_unknown_format_version_is_refused(tmp_path: Path, version: int) -> None:
    path = tmp_path / "v.checkpoint"
    write_v1_file(path, [[ace(0)]], version=version)
    with pytest.raises(CorruptSnapshotError, match=f"unsupported format version {version}") as info:
        SnapshotReader(path)
    assert info.value.position == 8
    v2 = tmp_path / "v2.checkpoint"
    with v2.open("wb") as fh:
        write_snapshot_file(fh, SnapshotHeader(1, 1, 1), [ace(0)])
    data = bytearray(v2.read_bytes())
    data[8:10] = struct.pack(">H", version)
    v2.write_bytes(bytes(data))
    with pytest.raises(CorruptSnapshotError, match=f"unsupported format version {version}"):
        SnapshotReader(v2)


@settings(max_examples=60)
@given(st.lists(aces, max_size=25, unique_by=lambda r: r.id), st.integers(1, 7))
def test_format_2_columns_and_records_agree(records: list[AccessControlEntryRecord], chunk_records: int) -> None:
    with mock.patch.object(snapshot_format, "CHUNK_RECORDS", chunk_records), tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v2.checkpoint"
        with path.open("wb") as fh:
            assert write_snapshot_file(fh, SnapshotHeader(len(records), 2, 5), records) == len(records)
        reader = SnapshotReader(path)
        assert reader.version == 2 and reader.header.writer_schema == CHUNK_SCHEMA.json_text
        chunks = list(reader.columns())
        assert [c.rows for c in chunks] == [
            min(chunk_records, len(records) - i) for i in range(0, len(records), chunk_records)
        ]
        assert from_columns(reader) == list(reader.records()) == list(SnapshotReader(path).records()) == records
        assert reader.verify() == len(records)


def test_format_2_file_with_a_bad_chunk_names_the_records(tmp_path: Path) -> None:
    """A chunk whose payload disagrees with itself is a CorruptSnapshotError naming the chunk's records."""
    path = tmp_path / "bad.checkpoint"
    with mock.patch.object(snapshot_format, "CHUNK_RECORDS", 3), path.open("wb") as fh:
        write_snapshot_file(fh, SnapshotHeader(6, 1, 1), [ace(n) for n in range(6)])
    data = path.read_bytes()
    head_len = 18 + struct.unpack_from(">I", data, 10)[0]
    first_len = struct.unpack_from(">I", data, head_len)[0]
    pos = head_len + 12 + first_len  # the second chunk
    bad = damaged(resourceNames="t0")  # 3 rows, one name
    crc = zlib.crc32(bad)
    crcs = struct.pack(">II", struct.unpack_from(">I", data, head_len + 8)[0], crc)
    rebuilt = (
        data[:pos]
        + struct.pack(">III", len(bad), 3, crc)
        + bad
        + struct.pack(">IQII", 0xFFFFFFFF, 6, 2, zlib.crc32(crcs))
        + b"KACLEND!"
    )
    path.write_bytes(rebuilt)
    reader = SnapshotReader(path)
    assert reader.validate() == 6  # the framing is fine
    with pytest.raises(CorruptSnapshotError, match=r"records 3\.\.5: field 'resourceNames' holds 1 entries") as info:
        list(reader.columns())
    assert info.value.position == pos


# ---- schema evolution: the chunk schema (built in) and v2 (tests/snapshots/data/v2, adds `createdBy`) --------
#
# A format-2 file names its chunk writer schema in the header; the reader resolves each chunk from it
# to its own `CHUNK_SCHEMA` (Avro schema resolution), as the log does with its segment headers.

V2_CHUNK = BatchSchema.from_schema(schemas.load_schema("AclSnapshotChunk", Path(__file__).parent / "data" / "v2"))


def write_chunk_file(path: Path, writer: BatchSchema, chunks: list[tuple[int, bytes]], end_offset: int = 7) -> None:
    """A format-2 snapshot of (row count, payload) chunks whose header names `writer`, byte for byte as
    documented at the top of snapshots/format.py."""
    meta = json.dumps({"end_offset": end_offset, "epoch": 3, "timestamp_ms": 99, "writer_schema": writer.json_text})
    out = bytearray(b"KACLSNAP" + struct.pack(">HII", 2, len(meta), zlib.crc32(meta.encode())) + meta.encode())
    crcs = bytearray()
    for count, payload in chunks:
        crc = zlib.crc32(payload)
        out += struct.pack(">III", len(payload), count, crc) + payload
        crcs += struct.pack(">I", crc)
    total = sum(count for count, _ in chunks)
    out += struct.pack(">IQII", 0xFFFFFFFF, total, len(chunks), zlib.crc32(crcs)) + b"KACLEND!"
    path.write_bytes(bytes(out))


def v2_payload(records: list[AccessControlEntryRecord], created_by: str | None) -> bytes:
    """What a v2 writer stores: the current columns plus `createdBy` (its default when None)."""
    datum = raw_datum(encode_chunk(records))
    if created_by is not None:
        datum["createdBy"] = datum["separator"].join(created_by for _ in records)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, V2_CHUNK.parsed, datum)
    return out.getvalue()


def test_the_v2_chunk_schema_adds_one_field_with_a_default() -> None:
    current = [f["name"] for f in json.loads(CHUNK_SCHEMA.json_text)["fields"]]
    v2 = {f["name"]: f for f in json.loads(V2_CHUNK.json_text)["fields"]}
    assert [name for name in v2 if name != "createdBy"] == current
    assert v2["createdBy"]["default"] == ""
    assert not V2_CHUNK.same_as(CHUNK_SCHEMA)


def test_current_reader_reads_a_v2_chunk() -> None:
    records = [ace(n) for n in range(5)]
    for created_by in ("admin", None):
        payload = v2_payload(records, created_by)
        assert payload != encode_chunk(records)
        assert list(decode_chunk(payload, V2_CHUNK).records()) == records
        with pytest.raises(ValueError):  # read as if it were the current layout, the bytes do not fit
            list(decode_chunk(payload).records())


def test_current_reader_reads_a_v2_snapshot_file(tmp_path: Path) -> None:
    chunks = [[ace(n) for n in range(4)], [], [ace(n) for n in range(4, 7)]]
    path = tmp_path / SnapshotId(7, 3).file_name()
    write_chunk_file(path, V2_CHUNK, [(len(c), v2_payload(c, "admin")) for c in chunks])
    written = [r for c in chunks for r in c]
    reader = SnapshotReader(path)
    assert reader.version == 2 and reader.header.writer_schema == V2_CHUNK.json_text
    assert list(reader.records()) == written
    assert [c.rows for c in SnapshotReader(path).columns()] == [4, 0, 3]
    assert reader.verify() == 7
    # The store and a node's cold start (the columnar fast path) load it like any snapshot.
    found = SnapshotStore(tmp_path).latest_valid()
    assert found is not None and found[1] == 7 and list(found[0].records()) == written
    node = AclNode(MemoryLog(log_start_offset=7), snapshot_dir=tmp_path)
    node.start()
    try:
        assert node.loaded_snapshot == path
        assert dict(node.image.acls) == {r.id: acl_from_record(r) for r in written}
    finally:
        node.close()


def test_v2_reader_reads_a_current_chunk_with_the_default() -> None:
    records = [ace(n) for n in range(5)]
    payload = encode_chunk(records)
    datum: Any = fastavro.schemaless_reader(io.BytesIO(payload), CHUNK_SCHEMA.parsed, V2_CHUNK.parsed)
    assert datum["createdBy"] == ""  # filled from the v2 default
    assert {k: v for k, v in datum.items() if k != "createdBy"} == raw_datum(payload)


def test_v2_reader_reads_a_current_snapshot_file(tmp_path: Path) -> None:
    """A build whose CHUNK_SCHEMA is v2 reads a file the current build wrote (header: the current schema)."""
    records = [ace(n) for n in range(9)]
    with mock.patch.object(snapshot_format, "CHUNK_RECORDS", 4):
        path = SnapshotStore(tmp_path).write(SnapshotHeader(9, 1, 5), records)
    assert SnapshotReader(path).header.writer_schema == CHUNK_SCHEMA.json_text
    with mock.patch.object(columns_module, "CHUNK_SCHEMA", V2_CHUNK):
        reader = SnapshotReader(path)
        assert [c.rows for c in reader.columns()] == [4, 4, 1]
        assert list(reader.records()) == records
        # And the resolution is real: a v2 field without a default cannot be filled, so the file is refused.
        no_default = json.loads(V2_CHUNK.json_text)
        no_default["fields"] = [{k: v for k, v in f.items() if k != "default"} for f in no_default["fields"]]
        with (
            mock.patch.object(columns_module, "CHUNK_SCHEMA", BatchSchema.from_schema(no_default)),
            pytest.raises(CorruptSnapshotError, match=r"records 0\.\.3: SchemaResolutionError"),
        ):
            list(SnapshotReader(path).records())
