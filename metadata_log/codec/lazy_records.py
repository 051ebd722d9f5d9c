"""A batch's records, decoded on first use; or, for replay, decoded straight into the caller's ACL rows.

Replay decodes a large batch ROWS_PER_PART rows at a time, so a serve applying a 200k-ACL import from the log (a
follower, or its own tailer) never holds the GIL for the whole batch. A `LazyRecords` is immutable in meaning: its
payload never changes, and its decoded form, once computed, is cached. Two threads decoding it at once both compute
the same tuple; either result may be kept.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, overload

from kraftacl.metadata_log.codec import fast as codec_fast
from kraftacl.metadata_log.codec.rows import RowTables
from kraftacl.metadata_log.codec.schema import BatchSchema
from kraftacl.metadata_log.errors import DecodeError
from kraftacl.metadata_log.pace import breathe
from kraftacl.metadata_log.records import MetadataRecord

ROWS_PER_PART = 4096  # rows decoded in one compiled call (about 2 ms of GIL on the 2-vCPU machine); a paced thread
# may rest between two parts


class RecordDecoder(Protocol):
    """What a `LazyRecords` needs of its codec (`codec.avro.Codec`), which builds it."""

    def decode_records(
        self,
        payload: bytes,
        *,
        base_offset: int,
        writer_schema: BatchSchema | None = None,
        expected_count: int | None = None,
        path: Path | str | None = None,
    ) -> tuple[MetadataRecord, ...]: ...

    def fast_path_for(self, writer_schema: BatchSchema) -> bool: ...


class LazyRecords(Sequence[MetadataRecord]):
    """The records of one batch payload; `len` is the frame's record count, known without decoding.

    A payload whose record count differs from the frame's raises DecodeError when it is decoded,
    like every other decoding problem (the error names the base offset and the file).
    """

    __slots__ = ("_base_offset", "_codec", "_count", "_path", "_payload", "_records", "_schema")

    def __init__(
        self,
        codec: RecordDecoder,
        payload: bytes,
        schema: BatchSchema,
        count: int,
        base_offset: int,
        path: Path | str | None,
    ) -> None:
        self._codec = codec
        self._payload = payload
        self._schema = schema
        self._count = count
        self._base_offset = base_offset
        self._path = path
        self._records: tuple[MetadataRecord, ...] | None = None

    def decoded(self) -> tuple[MetadataRecord, ...]:
        """The records as a tuple (decoded now if they were not yet)."""
        records = self._records
        if records is None:
            records = self._records = self._codec.decode_records(
                self._payload,
                base_offset=self._base_offset,
                writer_schema=self._schema,
                expected_count=self._count,
                path=self._path,
            )
        return records

    def acl_rows(self, tables: RowTables) -> tuple[list[str], list[Any]] | None:
        """(ids, rows: one per add, None per remove) decoded without records; None when no fast path applies."""
        if self._records is not None or not self._codec.fast_path_for(self._schema):
            return None
        ids: list[str] = []
        rows: list[Any] = []
        pos = left = 0
        try:
            while pos >= 0:  # a part at a time: a 200k-record batch is not one 100 ms hold of the GIL
                part_ids, part_rows, pos, left = codec_fast.decode_v1_rows_part(
                    self._payload, tables, pos, left, ROWS_PER_PART
                )
                ids += part_ids
                rows += part_rows
                breathe()
        except (ValueError, IndexError) as exc:  # UnicodeDecodeError is a ValueError
            reason = codec_fast.diagnose_v1(self._payload) or str(exc)
            raise DecodeError(self._base_offset, reason, self._path) from exc
        if len(rows) != self._count:
            raise DecodeError(
                self._base_offset, f"the frame says {self._count} records but the payload holds {len(rows)}", self._path
            )
        return ids, rows

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> MetadataRecord: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[MetadataRecord, ...]: ...
    def __getitem__(self, index: int | slice) -> MetadataRecord | tuple[MetadataRecord, ...]:
        return self.decoded()[index]

    def __iter__(self) -> Iterator[MetadataRecord]:
        return iter(self.decoded())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyRecords):
            return self.decoded() == other.decoded()
        if isinstance(other, tuple):
            return self.decoded() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.decoded())

    def __repr__(self) -> str:
        return repr(self.decoded())
