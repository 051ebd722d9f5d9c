"""Encode a batch of metadata records to one Avro datum and back, with writer -> reader schema resolution.

`Codec` and `BatchSchema` are immutable after construction and safe to share between threads.

A payload is one `RecordBatch` datum (an array of a union of the two records) written with a
writer schema that the caller stores next to the bytes (the file backend keeps it in each segment
header). Decoding resolves that writer schema against the codec's reader schema, so an older reader
skips fields a newer writer added and a newer reader fills added fields from their defaults.
Payloads written with the built-in v1 schema take the hand-written fast path of `codec_fast`.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import fastavro
import fastavro.schema

from kraftacl.metadata_log.codec import avro_strict
from kraftacl.metadata_log.codec import fast as codec_fast
from kraftacl.metadata_log.codec.lazy_records import LazyRecords
from kraftacl.metadata_log.codec.rows import MAX_STRING_BYTES
from kraftacl.metadata_log.codec.schema import BatchSchema
from kraftacl.metadata_log.errors import DecodeError, EncodeError, InvalidUuidError
from kraftacl.metadata_log.records import (
    AccessControlEntryRecord,
    MetadataRecord,
    RecordBatch,
    RemoveAccessControlEntryRecord,
)
from kraftacl.metadata_log.uuids import (
    METADATA_TOPIC_ID,
    UUID_TEXT,
    ZERO_UUID,
    new_uuid,
    text_to_uuid,
    texts_to_ids,
    uuid_to_text,
)
from kraftacl.schemas import load_schema

ACE_NAME = "kraft_acl.AccessControlEntryRecord"
REMOVE_NAME = "kraft_acl.RemoveAccessControlEntryRecord"
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
Datum = tuple[str, dict[str, Any]]

__all__ = [
    "CURRENT_SCHEMA",
    "DEFAULT_CODEC",
    "METADATA_TOPIC_ID",
    "ZERO_UUID",
    "BatchSchema",
    "Codec",
    "decode",
    "encode",
    "new_uuid",
    "text_to_uuid",
    "uuid_to_text",
]


CURRENT_SCHEMA = BatchSchema.from_schema(load_schema("RecordBatch"))


def _bad_field(record: AccessControlEntryRecord) -> str:
    """Which int field of `record` is not a 32-bit int (for the error message)."""
    for name in ("resource_type", "pattern_type", "operation", "permission_type"):
        value = getattr(record, name)
        if type(value) is not int or not _INT_MIN <= value <= _INT_MAX:
            return f"field {name!r} = {value!r} is not a 32-bit int"
    return "a field has a value its schema type cannot hold"  # pragma: no cover


# A string of at most this many characters is at most 32767 UTF-8 bytes (4 bytes a character).
_SHORT = MAX_STRING_BYTES // 4
_STRING_FIELDS = ("resource_name", "principal", "host")


def _check_lengths(index: int, record: AccessControlEntryRecord) -> None:
    """EncodeError for a string field over Kafka's 32767 UTF-8 bytes (spec §2)."""
    for name in _STRING_FIELDS:
        value = getattr(record, name)
        size = len(value.encode("utf-8", "surrogatepass")) if type(value) is str else 0
        if size > MAX_STRING_BYTES:
            raise EncodeError(index, f"field {name!r} is {size} UTF-8 bytes, over Kafka's limit of {MAX_STRING_BYTES}")


_STEP = 8192  # ids converted per base64 call: a batch of 200k records is not one long C call (the GIL)


def _raw_ids(records: Sequence[MetadataRecord]) -> list[bytes]:
    """The records' 16-byte ids; EncodeError for a non-record or an id that is not canonical text.

    The ids are checked one by one (canonical text), then converted `_STEP` at a time (`texts_to_ids`).
    """
    match = UUID_TEXT.fullmatch
    for index, record in enumerate(records):
        if type(record) is not AccessControlEntryRecord and type(record) is not RemoveAccessControlEntryRecord:
            raise EncodeError(index, f"not a metadata record: {type(record).__name__}")
        if type(record.id) is not str or match(record.id) is None:
            raise EncodeError(index, str(InvalidUuidError(record.id, "not 22 canonical URL-safe base64 characters")))
    texts = [r.id for r in records]
    return [raw for start in range(0, len(texts), _STEP) for raw in texts_to_ids(texts[start : start + _STEP])]


def _datums(records: Sequence[MetadataRecord]) -> list[Datum]:
    """The records as fastavro's union tuple notation `(record name, fields)`; EncodeError if invalid."""
    raw_ids = _raw_ids(records)
    out: list[Datum] = []
    append = out.append
    lo, hi = _INT_MIN, _INT_MAX
    for index, r in enumerate(records):
        rid = raw_ids[index]
        if type(r) is AccessControlEntryRecord:
            rt, pt, op, pm = r.resource_type, r.pattern_type, r.operation, r.permission_type
            try:
                ok = lo <= rt <= hi and lo <= pt <= hi and lo <= op <= hi and lo <= pm <= hi
            except TypeError:
                ok = False
            if not ok:
                raise EncodeError(index, _bad_field(r))
            try:
                long = len(r.resource_name) > _SHORT or len(r.principal) > _SHORT or len(r.host) > _SHORT
            except TypeError:  # not a string: fastavro's error below names the field
                long = False
            if long:
                _check_lengths(index, r)
            append(
                (
                    ACE_NAME,
                    {
                        "id": rid,
                        "resourceType": rt,
                        "resourceName": r.resource_name,
                        "patternType": pt,
                        "principal": r.principal,
                        "host": r.host,
                        "operation": op,
                        "permissionType": pm,
                    },
                )
            )
        else:
            append((REMOVE_NAME, {"id": rid}))
    return out


def _records_from_datums(datums: list[Datum]) -> list[MetadataRecord]:
    """Build records from fastavro's output (the resolution path); unknown fields are ignored."""
    out: list[MetadataRecord] = []
    for index, (name, d) in enumerate(datums):
        try:
            if name == ACE_NAME:
                for field in ("resourceName", "principal", "host"):
                    if len(d[field]) > _SHORT and len(d[field].encode()) > MAX_STRING_BYTES:
                        raise ValueError(f"record {index} field {field!r}: over Kafka's {MAX_STRING_BYTES}-byte limit")
                out.append(
                    AccessControlEntryRecord(
                        uuid_to_text(d["id"]),
                        d["resourceType"],
                        d["resourceName"],
                        d["patternType"],
                        d["principal"],
                        d["host"],
                        d["operation"],
                        d["permissionType"],
                    )
                )
            elif name == REMOVE_NAME:
                out.append(RemoveAccessControlEntryRecord(uuid_to_text(d["id"])))
            else:
                raise ValueError(f"record {index} has unknown type {name!r}")
        except KeyError as exc:
            raise ValueError(f"record {index} ({name}) has no field {exc}") from exc
    return out


class Codec:
    """Encodes with one writer schema; decodes any writer schema into records via its reader schema."""

    __slots__ = ("_reader", "_writer")

    def __init__(self, writer_schema: BatchSchema | None = None, reader_schema: BatchSchema | None = None):
        self._writer = CURRENT_SCHEMA if writer_schema is None else writer_schema
        self._reader = CURRENT_SCHEMA if reader_schema is None else reader_schema

    @property
    def writer_schema(self) -> BatchSchema:
        """The schema `encode` writes with (store it alongside the payloads)."""
        return self._writer

    @property
    def reader_schema(self) -> BatchSchema:
        """The schema payloads are resolved to when decoding."""
        return self._reader

    def encode(self, records: Sequence[MetadataRecord]) -> bytes:
        """One Avro `RecordBatch` datum holding `records`, in order; EncodeError names a bad record.

        With the v1 writer schema the payload is written by `codec_fast.encode_v1` (the same bytes as
        fastavro's, several times faster); a record it cannot write goes through fastavro, whose
        error names it.
        """
        return b"".join(self.encode_pieces(records))

    def encode_pieces(self, records: Sequence[MetadataRecord]) -> list[bytes]:
        """`encode` as consecutive pieces (`codec_fast.encode_v1_pieces`; one piece from fastavro)."""
        if self.fast_path_for(self._writer):
            raw_ids = _raw_ids(records)
            with contextlib.suppress(ValueError, UnicodeError):
                return codec_fast.encode_v1_pieces(list(records), raw_ids)
        return [self._encode_slow(records)]

    def _encode_slow(self, records: Sequence[MetadataRecord]) -> bytes:
        """fastavro's encoding, whose errors name the record."""
        datums = _datums(records)
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, self._writer.parsed, {"records": datums})
        except Exception as exc:  # fastavro raises TypeError/ValueError/OverflowError/...
            raise EncodeError(None, f"{type(exc).__name__}: {exc}") from exc
        return out.getvalue()

    def decode_datums(
        self, payload: bytes, *, base_offset: int, writer_schema: BatchSchema | None = None
    ) -> list[Datum]:
        """The raw `(record name, fields)` pairs resolved to the reader schema (for tools and tests)."""
        writer = self._writer if writer_schema is None else writer_schema
        reader = None if writer.same_as(self._reader) else self._reader.parsed
        buf = io.BytesIO(payload)
        try:
            if writer.indexed:
                avro_strict.check_indexes(payload, writer.parsed)
            datum: Any = fastavro.schemaless_reader(buf, writer.parsed, reader, return_record_name=True)
        except Exception as exc:  # EOFError, IndexError, UnicodeDecodeError, SchemaResolutionError, ...
            raise DecodeError(base_offset, f"{type(exc).__name__}: {exc}") from exc
        if buf.tell() != len(payload):
            raise DecodeError(base_offset, f"{len(payload) - buf.tell()} bytes after the end of the batch")
        records: list[Datum] = datum["records"]
        return records

    def fast_path_for(self, writer_schema: BatchSchema) -> bool:
        """True when payloads written with `writer_schema` take the hand-written v1 decoders."""
        return codec_fast.AVAILABLE and writer_schema.fingerprint == codec_fast.V1_FINGERPRINT

    def decode_records(
        self,
        payload: bytes,
        *,
        base_offset: int,
        writer_schema: BatchSchema | None = None,
        expected_count: int | None = None,
        path: Path | str | None = None,
    ) -> tuple[MetadataRecord, ...]:
        """Decode one payload; DecodeError names the base offset, the file if given, and the reason."""
        writer = self._writer if writer_schema is None else writer_schema
        try:
            if self.fast_path_for(writer):
                try:
                    records = codec_fast.decode_v1(payload)
                except (ValueError, IndexError) as exc:  # UnicodeDecodeError is a ValueError
                    raise ValueError(codec_fast.diagnose_v1(payload) or str(exc)) from exc
            else:
                records = _records_from_datums(
                    self.decode_datums(payload, base_offset=base_offset, writer_schema=writer)
                )
        except DecodeError as exc:
            raise DecodeError(base_offset, exc.reason, path) from exc
        except (ValueError, InvalidUuidError) as exc:
            raise DecodeError(base_offset, str(exc), path) from exc
        if expected_count is not None and len(records) != expected_count:
            raise DecodeError(
                base_offset,
                f"the frame says {expected_count} records but the payload holds {len(records)}",
                path,
            )
        return tuple(records)

    def decode_batch(
        self,
        payload: bytes,
        *,
        base_offset: int,
        epoch: int,
        timestamp_ms: int,
        writer_schema: BatchSchema | None = None,
        expected_count: int | None = None,
        path: Path | str | None = None,
        lazy: bool = False,
        size_bytes: int = 0,
    ) -> RecordBatch:
        """Decode one payload into a `RecordBatch` carrying the frame's offset, epoch and timestamp.

        `lazy` (needs `expected_count`): the records are decoded on first use (`LazyRecords`), so a
        replay can decode them straight into its own rows instead; errors surface at that point.
        `size_bytes`: what the batch takes in its log (frame and payload), for byte-based snapshot policies.
        """
        if lazy and expected_count is not None:
            schema = self._writer if writer_schema is None else writer_schema
            lazy_records = LazyRecords(self, payload, schema, expected_count, base_offset, path)
            return RecordBatch(base_offset, epoch, timestamp_ms, lazy_records, size_bytes)
        records = self.decode_records(
            payload,
            base_offset=base_offset,
            writer_schema=writer_schema,
            expected_count=expected_count,
            path=path,
        )
        return RecordBatch(base_offset, epoch, timestamp_ms, records, size_bytes)


DEFAULT_CODEC = Codec()


def encode(records: Sequence[MetadataRecord]) -> bytes:
    """Encode with the built-in schema (store `CURRENT_SCHEMA` with the bytes, or assume it)."""
    return DEFAULT_CODEC.encode(records)


def decode(
    payload: bytes,
    *,
    base_offset: int = 0,
    epoch: int = 0,
    timestamp_ms: int = 0,
    writer_schema: BatchSchema | None = None,
) -> RecordBatch:
    """Decode a payload written with `writer_schema` (default: the built-in schema) into a batch."""
    return DEFAULT_CODEC.decode_batch(
        payload, base_offset=base_offset, epoch=epoch, timestamp_ms=timestamp_ms, writer_schema=writer_schema
    )
