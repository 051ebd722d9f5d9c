"""The columnar snapshot chunk (`schemas/AclSnapshotChunk.avsc`): AccessControlEntryRecords to columns and back.

Pure functions and immutable values; safe from any thread.

Why columns: a snapshot of a million ACLs must load in well under the 4 s cold-start budget. Row by
row, Avro costs a Python step per field per ACL (~1.2 µs per ACL); as columns, fastavro reads a
chunk as a dozen large values and every column becomes a Python list in one C-level call:
`bytes` -> `array("i")` -> list for codes, one `str.split` for names, a dictionary lookup `map` for
principals and hosts (which also shares one string object per distinct principal and host).
Example chunk of two ACLs (`User:a` READ `t1`, `User:a` WRITE `t2`):

    count 2 | ids <32 bytes> | resourceTypes <2,2 as int32> | operations <3,4> | ...
    separator "\\0" | resourceNames "t1\\0t2" | principalDictionary "User:a" | principals <0,0>
"""

from __future__ import annotations

import io
import re
import sys
from array import array
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import fastavro

from kraftacl.metadata_log.codec import MAX_STRING_BYTES, BatchSchema, check_indexes
from kraftacl.metadata_log.records import AccessControlEntryRecord
from kraftacl.metadata_log.uuids import UUID_TEXT, raw_ids_to_text, texts_to_ids
from kraftacl.schemas import load_schema

CHUNK_SCHEMA = BatchSchema.from_schema(load_schema("AclSnapshotChunk"))
_INT_FIELDS = ("resourceTypes", "patternTypes", "operations", "permissionTypes")
_UUID_LINES = re.compile(f"(?:{UUID_TEXT.pattern}\n)*")  # ids joined by newlines, one regex pass
_SURROGATES = range(0xD800, 0xE000)  # not encodable as UTF-8: never a separator
_SHORT = MAX_STRING_BYTES // 4  # a string of at most this many characters fits Kafka's 32767 UTF-8 bytes
# A string of more than _SHORT characters covers a whole window of this many, aligned at a multiple of it.
_WINDOW = _SHORT // 2 + 1
if array("i").itemsize != 4:  # pragma: no cover - every supported platform has a 4-byte C int
    raise ImportError("snapshots.columns needs array('i') to hold 32-bit ints")


class AclColumns(NamedTuple):
    """One chunk's ACLs column by column: row i of every list is ACL i (codes are Kafka's wire ints)."""

    ids: list[str]
    resource_types: list[int]
    resource_names: list[str]
    pattern_types: list[int]
    principals: list[str]
    hosts: list[str]
    operations: list[int]
    permission_types: list[int]

    @property
    def rows(self) -> int:
        """The number of ACLs in the chunk."""
        return len(self.ids)

    def records(self) -> Iterator[AccessControlEntryRecord]:
        """The rows as AccessControlEntryRecords (tools and incremental loads; slower than the columns)."""
        for row in zip(*self, strict=True):
            yield AccessControlEntryRecord(*row)


def columns_of(records: Sequence[AccessControlEntryRecord]) -> AclColumns:
    """Records as columns; ValueError names the first one that is not an AccessControlEntryRecord."""
    for index, record in enumerate(records):
        if not isinstance(record, AccessControlEntryRecord):
            raise ValueError(f"record {index}: a snapshot holds only AccessControlEntryRecords, not {record!r}")
    if not records:
        return AclColumns([], [], [], [], [], [], [], [])
    return AclColumns(*(list(column) for column in zip(*map(_fields, records), strict=True)))


def encode_chunk(records: Sequence[AccessControlEntryRecord]) -> bytes:
    """One `AclSnapshotChunk` datum of records; ValueError names the first record that cannot be stored."""
    return encode_columns(columns_of(records))


def encode_columns(columns: AclColumns) -> bytes:
    """One `AclSnapshotChunk` datum; ValueError names the first row that cannot be stored."""
    c = columns
    _check_ids(c.ids)
    principal_dict = list(dict.fromkeys(c.principals))
    host_dict = list(dict.fromkeys(c.hosts))
    _check_lengths(c.resource_names, "row")
    _check_lengths(principal_dict, "distinct principal")
    _check_lengths(host_dict, "distinct host")
    separator = _separator(c.resource_names + principal_dict + host_dict)
    principal_index = {p: i for i, p in enumerate(principal_dict)}
    host_index = {h: i for i, h in enumerate(host_dict)}
    datum: dict[str, Any] = {
        "count": c.rows,
        "ids": b"".join(texts_to_ids(c.ids)),
        "separator": separator,
        "resourceNames": separator.join(c.resource_names),
        "principalDictionary": separator.join(principal_dict),
        "principals": _pack(list(map(principal_index.__getitem__, c.principals)), "principals"),
        "hostDictionary": separator.join(host_dict),
        "hosts": _pack(list(map(host_index.__getitem__, c.hosts)), "hosts"),
    }
    codes = (c.resource_types, c.pattern_types, c.operations, c.permission_types)
    for field, values in zip(_INT_FIELDS, codes, strict=True):
        datum[field] = _pack(values, field)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, CHUNK_SCHEMA.parsed, datum)
    return out.getvalue()


def _fields(record: AccessControlEntryRecord) -> tuple[str, int, str, int, str, str, int, int]:
    r = record
    return (r.id, r.resource_type, r.resource_name, r.pattern_type, r.principal, r.host, r.operation, r.permission_type)


def _check_ids(ids: list[str]) -> None:
    """ValueError naming the first id that is not a canonical Kafka Uuid text (one regex pass when all are)."""
    try:
        lines = "\n".join(ids) + "\n" if ids else ""
        # 23 characters a line, as many lines as ids: no id hides a newline (two ids in one).
        if len(lines) == 23 * len(ids) and _UUID_LINES.fullmatch(lines) is not None:
            return
    except TypeError:  # a non-str id: found below
        pass
    for index, acl_id in enumerate(ids):
        if type(acl_id) is not str or UUID_TEXT.fullmatch(acl_id) is None:
            raise ValueError(f"record {index}: id {acl_id!r} is not a Kafka Uuid text")


def decode_chunk(payload: bytes, writer: BatchSchema = CHUNK_SCHEMA) -> AclColumns:
    """The columns of one chunk written with `writer`; ValueError names the field that is wrong."""
    reader = None if writer.same_as(CHUNK_SCHEMA) else CHUNK_SCHEMA.parsed
    buf = io.BytesIO(payload)
    try:
        if writer.indexed:
            check_indexes(payload, writer.parsed)
        datum: Any = fastavro.schemaless_reader(buf, writer.parsed, reader)
    except Exception as exc:  # EOFError, UnicodeDecodeError, SchemaResolutionError, ...
        raise ValueError(f"{type(exc).__name__}: {exc}") from exc
    if buf.tell() != len(payload):
        raise ValueError(f"{len(payload) - buf.tell()} bytes after the end of the chunk")
    count = datum["count"]
    raw = datum["ids"]
    if count < 0 or len(raw) != 16 * count:
        raise ValueError(f"field 'ids' holds {len(raw)} bytes, not 16 for each of {count} rows")
    separator = datum["separator"]
    if len(separator) != 1:
        raise ValueError(f"field 'separator' is {separator!r}, not one character")
    codes = [_unpack(datum[field], count, field) for field in _INT_FIELDS]
    return AclColumns(
        raw_ids_to_text(raw),
        codes[0],
        _split(datum["resourceNames"], separator, count, "resourceNames"),
        codes[1],
        _lookup(datum, "principal", separator, count),
        _lookup(datum, "host", separator, count),
        codes[2],
        codes[3],
    )


def _separator(strings: list[str]) -> str:
    used = set("".join(strings))
    for code in range(0x110000):
        if code not in _SURROGATES and chr(code) not in used:
            return chr(code)
    raise ValueError("every character occurs in this chunk's strings: no separator is left")  # pragma: no cover


def _pack(values: list[int], field: str) -> bytes:
    try:
        packed = array("i", values)
    except (OverflowError, TypeError) as exc:
        raise ValueError(f"field {field!r}: {exc} (values must be 32-bit ints)") from exc
    if sys.byteorder == "big":  # pragma: no cover - the layout is little-endian everywhere
        packed.byteswap()
    return packed.tobytes()


def _unpack(raw: bytes, count: int, field: str) -> list[int]:
    if len(raw) != 4 * count:
        raise ValueError(f"field {field!r} holds {len(raw)} bytes, not 4 for each of {count} rows")
    values = array("i")
    values.frombytes(raw)
    if sys.byteorder == "big":  # pragma: no cover
        values.byteswap()
    return values.tolist()


def _check_lengths(strings: list[str], field: str) -> None:
    """ValueError naming the first string over Kafka's 32767 UTF-8 bytes (spec §2); one C-level pass when none is."""
    if not strings or max(map(len, strings)) <= _SHORT:
        return
    for index, text in enumerate(strings):
        size = len(text.encode("utf-8", "surrogatepass")) if len(text) > _SHORT else 0
        if size > MAX_STRING_BYTES:
            raise ValueError(f"{field} {index} is {size} UTF-8 bytes, over Kafka's limit of {MAX_STRING_BYTES}")


def _may_hold_long(text: str, separator: str) -> bool:
    """False when no entry of `text` can be longer than _SHORT characters: every aligned window of _WINDOW
    characters holds a separator. A few thousand `find`s that stop at once for a million names (the exact
    check over every entry costs 4% of a snapshot load)."""
    find = text.find
    return any(find(separator, start, start + _WINDOW) < 0 for start in range(0, len(text) - _WINDOW + 1, _WINDOW))


def _split(text: str, separator: str, count: int, field: str) -> list[str]:
    parts = text.split(separator) if count or text else []
    if len(parts) != count:
        raise ValueError(f"field {field!r} holds {len(parts)} entries, not {count}")
    if _may_hold_long(text, separator):
        _check_lengths(parts, f"field {field!r} entry")
    return parts


def _lookup(datum: dict[str, Any], what: str, separator: str, count: int) -> list[str]:
    """Expand a dictionary-encoded column; the distinct strings are interned."""
    entries = datum[f"{what}Dictionary"]
    dictionary = list(map(sys.intern, entries.split(separator))) if count or entries else []
    _check_lengths(dictionary, f"field '{what}Dictionary' entry")
    if not count and dictionary:
        raise ValueError(f"field '{what}Dictionary' has entries but the chunk has no rows")
    indexes = _unpack(datum[f"{what}s"], count, f"{what}s")
    if indexes and (min(indexes) < 0 or max(indexes) >= len(dictionary)):
        raise ValueError(f"field '{what}s' has an index outside {what}Dictionary's {len(dictionary)} entries")
    return list(map(dictionary.__getitem__, indexes))
