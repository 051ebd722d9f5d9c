"""A `RecordBatch` writer or reader schema as a value (`BatchSchema`): its JSON text, parsed form and fingerprint.

Immutable values; building one from the same JSON text again returns the cached value. Thread-safe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro
import fastavro.schema

from kraftacl.metadata_log.codec import avro_strict


@dataclass(frozen=True, eq=False, slots=True)
class BatchSchema:
    """A self-contained `RecordBatch` writer or reader schema: its JSON text, parsed form, fingerprint."""

    json_text: str
    parsed: Any
    fingerprint: str  # CRC-64-AVRO of the Parsing Canonical Form, hex
    indexed: bool  # holds a union or an enum: its data is pre-read by `avro_strict` before fastavro

    @staticmethod
    def from_schema(schema: dict[str, Any]) -> BatchSchema:
        """Build from a resolved schema dict (e.g. `schemas.load_schema("RecordBatch", dir)`)."""
        return BatchSchema.from_json(json.dumps(schema, separators=(",", ":")))

    @staticmethod
    def from_json(json_text: str) -> BatchSchema:
        """Build from JSON text (cached: segment headers repeat the same text); ValueError if invalid."""
        return _schema_from_json(json_text)

    def same_as(self, other: BatchSchema) -> bool:
        """True when both schemas have the same Parsing Canonical Form (same binary layout)."""
        return self.fingerprint == other.fingerprint


@lru_cache(maxsize=64)
def _schema_from_json(json_text: str) -> BatchSchema:
    try:
        raw = json.loads(json_text)
        parsed = fastavro.parse_schema(raw)
        canonical = fastavro.schema.to_parsing_canonical_form(parsed)
        fingerprint = fastavro.schema.fingerprint(canonical, "CRC-64-AVRO")
    except Exception as exc:  # fastavro raises several types for a bad schema
        raise ValueError(f"invalid RecordBatch schema: {type(exc).__name__}: {exc}") from exc
    return BatchSchema(json_text, parsed, str(fingerprint), avro_strict.has_indexes(parsed))
