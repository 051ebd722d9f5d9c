"""A hand-written decoder for batch payloads written with the built-in (v1) `RecordBatch` schema.

Pure functions over immutable bytes: safe to call from any thread.

Why it exists: replay must reach >= 300k records/s on a 2 GHz core. fastavro's generic
`schemaless_reader` alone decodes the v1 envelope at ~320k records/s on a 2.4 GHz core (a dict and a
union tuple per record), and building the frozen records through their `__init__` costs ~1.3 µs more
per record. The walk over the Avro binary encoding of exactly one schema (the v1 layout below) lives
in `codec_rows`; this module fills the records' slots directly from its rows, at ~450k records/s on
that core (replay skips the records and takes the rows themselves). `codec.Codec` uses it
only when a payload's writer schema has the v1 fingerprint; every other writer schema goes through
fastavro with writer -> reader schema resolution. The property tests check both paths agree.

The v1 layout (Avro binary; ints and lengths are zigzag varints):

    RecordBatch        := block* 0             block := count [size if count < 0] item{|count|}
    item               := branch (0 = AccessControlEntryRecord | 1 = RemoveAccessControlEntryRecord)
    AccessControlEntry := id:16 bytes, resourceType, resourceName, patternType, principal, host,
                          operation, permissionType
    RemoveAccessControl:= id:16 bytes
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any

from kraftacl.metadata_log.codec import rows as codec_rows
from kraftacl.metadata_log.codec.rows import RowTables, string_end, varint
from kraftacl.metadata_log.native import load_native
from kraftacl.metadata_log.pace import breathe
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord

DecodeRows = Callable[[bytes, RowTables], tuple[list[str], list[Any]]]
DecodeRowsPart = Callable[[bytes, RowTables, int, int, int], tuple[list[str], list[Any], int, int]]
# The v1 row walk in use: the mypyc-compiled copy of codec_rows (about 2x faster) when it is built and
# current, else the source; DECODER says which ("native", "disabled", "not built" or "stale").
_compiled, DECODER = load_native(codec_rows, "kraftacl.metadata_log.codec._rows_native")
decode_v1_rows: DecodeRows = _compiled.decode_v1_rows if _compiled is not None else codec_rows.decode_v1_rows
decode_v1_rows_part: DecodeRowsPart = (
    _compiled.decode_v1_rows_part if _compiled is not None else codec_rows.decode_v1_rows_part
)

ACE_FIELDS = (
    "id",
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)
V1_FINGERPRINT = "8169b6474aee9cfe"  # CRC-64-AVRO of the v1 RecordBatch Parsing Canonical Form
Setter = Callable[[Any, Any], None]


def _slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Setter, ...] | None:
    """The slot descriptors' `__set__` of a frozen slots dataclass, or None if its shape changed.

    Filling slots directly skips the frozen `__init__` (8 `object.__setattr__` calls); it is only
    safe while the class has exactly these fields and no `__post_init__`, which is checked here.
    """
    if tuple(f.name for f in dataclasses.fields(cls)) != names or hasattr(cls, "__post_init__"):
        return None
    descriptors = [cls.__dict__.get(name) for name in names]
    if not all(isinstance(d, types.MemberDescriptorType) for d in descriptors):
        return None
    return tuple(d.__set__ for d in descriptors if isinstance(d, types.MemberDescriptorType))


_ACE_SETTERS = _slot_setters(AccessControlEntryRecord, ACE_FIELDS)
_REMOVE_SETTERS = _slot_setters(RemoveAccessControlEntryRecord, ("id",))
AVAILABLE = _ACE_SETTERS is not None and _REMOVE_SETTERS is not None
_RAW_ROWS = RowTables(tuple, int, int, int, int, str)  # the wire values as they are: rows are plain tuples


def decode_v1(buf: bytes) -> list[MetadataRecord]:
    """Decode a v1 `RecordBatch` payload; raise ValueError/IndexError/UnicodeError if malformed.

    The binary walk is `codec_rows.decode_v1_rows` with identity tables (raw codes, strings as
    decoded); each row then fills a record's slots directly.
    """
    if _ACE_SETTERS is None or _REMOVE_SETTERS is None:  # pragma: no cover - records.py changed shape
        raise RuntimeError("the v1 fast path is unavailable")
    (r0,) = _REMOVE_SETTERS
    new = object.__new__
    remove = RemoveAccessControlEntryRecord
    texts, rows = decode_v1_rows(buf, _RAW_ROWS)
    adds = iter(ace_records([t for t, row in zip(texts, rows, strict=True) if row is not None], [r for r in rows if r]))
    out: list[MetadataRecord] = []
    append = out.append
    for text, row in zip(texts, rows, strict=True):
        if row is None:
            o = new(remove)
            r0(o, text)
            append(o)
        else:
            append(next(adds))
    return out


def ace_records(ids: list[str], rows: list[Any]) -> list[AccessControlEntryRecord]:
    """AccessControlEntryRecords from ids and rows (id, then the seven fields of `ACE_FIELDS` in order),
    filling the slots directly as `decode_v1` does (a bulk import builds a million of them)."""
    if _ACE_SETTERS is None:  # pragma: no cover - records.py changed shape
        return [AccessControlEntryRecord(i, *row) for i, row in zip(ids, rows, strict=True)]
    s0, s1, s2, s3, s4, s5, s6, s7 = _ACE_SETTERS
    new = object.__new__
    ace = AccessControlEntryRecord
    out: list[AccessControlEntryRecord] = []
    append = out.append
    for text, (rt, name, pt, principal, host, op, pm) in zip(ids, rows, strict=True):
        o = new(ace)
        s0(o, text)
        s1(o, rt)
        s2(o, name)
        s3(o, pt)
        s4(o, principal)
        s5(o, host)
        s6(o, op)
        s7(o, pm)
        append(o)
    return out


def _zigzag(value: int) -> bytes:
    """An Avro int/long: zigzag, then little-endian base-128 varint."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = {code: _zigzag(code) for code in range(-64, 64)}  # every code Kafka defines fits one byte
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def _code(value: object, index: int, field: str) -> bytes:
    """A record's int field (an int, or an IntEnum of one); ValueError if it is no 32-bit int."""
    if isinstance(value, int) and _INT_MIN <= value <= _INT_MAX:  # (`in range` scans for an IntEnum)
        return _zigzag(value)
    raise ValueError(f"record {index}: field {field!r} = {value!r} is not a 32-bit int")


def _text(value: object, index: int, field: str) -> bytes:
    if type(value) is not str:
        raise ValueError(f"record {index}: field {field!r} = {value!r} is not a string")
    raw = value.encode("utf-8")
    if len(raw) > codec_rows.MAX_STRING_BYTES:
        raise ValueError(f"record {index}: field {field!r} is over Kafka's {codec_rows.MAX_STRING_BYTES}-byte limit")
    return _zigzag(len(raw)) + raw


def _codes(r: AccessControlEntryRecord, index: int) -> tuple[bytes, bytes, bytes, bytes]:
    """The four encoded codes of a record the table missed (a code beyond one byte, or not an int)."""
    return (
        _code(r.resource_type, index, "resource_type"),
        _code(r.pattern_type, index, "pattern_type"),
        _code(r.operation, index, "operation"),
        _code(r.permission_type, index, "permission_type"),
    )


_TEXTS_CACHED = 1 << 16  # principals and hosts remembered per batch (each costs ~100 bytes)


def _new_text(value: object, index: int, field: str, texts: dict[str, bytes]) -> bytes:
    """A principal or host not seen yet in this batch: encoded, and remembered while there is room."""
    encoded = _text(value, index, field)
    if len(texts) < _TEXTS_CACHED:
        texts[value] = encoded  # type: ignore[index]  # _text checked it is a str
    return encoded


_JOIN_STEP = 65536  # pieces joined per C call: a batch of 200k records is 2M pieces (the GIL)


def encode_v1(records: list[MetadataRecord], raw_ids: list[bytes]) -> bytes:
    """A v1 `RecordBatch` payload, byte for byte what fastavro writes for it (one array block)."""
    return b"".join(encode_v1_pieces(records, raw_ids))


def encode_v1_pieces(records: list[MetadataRecord], raw_ids: list[bytes]) -> list[bytes]:
    """`encode_v1` as consecutive pieces (about 600 KB each): a batch of 200k records is written to a file without
    being joined into one 20 MB bytes object, whose copy and free each hold the GIL for several milliseconds.

    `raw_ids` are the records' 16-byte ids (checked by the caller). ValueError names the record and
    field that the schema cannot hold. Codes come from a table and principals and hosts (shared by
    many ACLs) are encoded once each, so a record costs a few dict lookups and one list extend; a miss
    encodes only what missed (an encoded text is never empty, so `or` falls through on a miss only).
    """
    texts: dict[str, bytes] = {}
    small, cached = _SMALL.get, texts.get
    pieces: list[bytes] = []
    out = [_zigzag(len(records))] if records else []
    extend = out.extend
    ace = AccessControlEntryRecord
    for index, r in enumerate(records):
        if len(out) >= _JOIN_STEP:  # a run's pieces joined now: no list of millions to grow, join and free
            pieces.append(b"".join(out))
            out.clear()
            breathe()
        if type(r) is not ace:
            if type(r) is not RemoveAccessControlEntryRecord:
                raise ValueError(f"record {index}: {type(r).__name__} is not a v1 metadata record")
            extend((b"\x02", raw_ids[index]))
            continue
        rt, pt, op, pm = small(r.resource_type), small(r.pattern_type), small(r.operation), small(r.permission_type)
        if rt is None or pt is None or op is None or pm is None:
            rt, pt, op, pm = _codes(r, index)
        principal = cached(r.principal) or _new_text(r.principal, index, "principal", texts)
        host = cached(r.host) or _new_text(r.host, index, "host", texts)
        name = r.resource_name
        if type(name) is not str:
            raise ValueError(f"record {index}: field 'resource_name' = {name!r} is not a string")
        raw = name.encode("utf-8")
        if len(raw) > codec_rows.MAX_STRING_BYTES:
            raise ValueError(f"record {index}: field 'resource_name' is over Kafka's string limit")
        length = small(len(raw)) or _zigzag(len(raw))
        extend((b"\x00", raw_ids[index], rt, length, raw, pt, principal, host, op, pm))
    out.append(b"\x00")
    pieces.append(b"".join(out))
    return pieces


_V1_LAYOUT = {
    0: (
        "AccessControlEntryRecord",
        (
            "id",
            "resourceType",
            "resourceName",
            "patternType",
            "principal",
            "host",
            "operation",
            "permissionType",
        ),
    ),
    1: ("RemoveAccessControlEntryRecord", ("id",)),
}
_STRINGS = frozenset({"resourceName", "principal", "host"})


def diagnose_v1(buf: bytes) -> str | None:
    """Walk a malformed v1 payload field by field; say which record, field and byte went wrong.

    Slow and only called after `decode_v1` failed, to turn an IndexError into a useful message.
    Returns None when the walk finds nothing wrong.
    """
    pos, index, name, field = 0, 0, "RecordBatch", "records"
    try:
        while True:
            field_start = pos
            n, pos = varint(buf, pos)
            if n == 0:
                break
            if n < 0:
                n = -n
                _, pos = varint(buf, pos)
            for _ in range(n):
                name, field, field_start = "RecordBatch", "records (union branch)", pos
                branch, pos = varint(buf, pos)
                if branch not in _V1_LAYOUT:
                    return f"record {index}: invalid union branch {branch} at byte {field_start}"
                name, fields = _V1_LAYOUT[branch]
                for field in fields:
                    field_start = pos
                    if field == "id":
                        pos += 16
                        if pos > len(buf):
                            raise IndexError("id")
                    elif field in _STRINGS:
                        end, pos = string_end(buf, pos)
                        if end > len(buf):
                            raise IndexError(field)
                        buf[pos:end].decode()
                        pos = end
                    else:
                        _, pos = varint(buf, pos)
                index += 1
    except IndexError:
        return (
            f"record {index} ({name}) field {field!r} at byte {field_start} runs past the end "
            f"of the {len(buf)}-byte payload"
        )
    except (ValueError, UnicodeDecodeError) as exc:
        return f"record {index} ({name}) field {field!r} at byte {field_start}: {exc}"
    if pos != len(buf):
        return f"payload has {len(buf) - pos} bytes after the end of the batch (at byte {pos})"
    return None
