"""The Kafka backend's message format without a Kafka client: one message per batch, whose value is the
file log's CRC-checked frame and whose `kraft-acl-schema` header carries the writer schema.

Pure functions; thread-safe. `kafka.py` writes and reads messages with confluent-kafka; readers that get
the messages elsewhere (Spark's Kafka source in `pipeline/`) decode them here, with no client imported.
"""

from __future__ import annotations

from kraftacl.metadata_log.backends.file.format import decode_frame, parse_frame_at
from kraftacl.metadata_log.codec import BatchSchema, Codec
from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.records import RecordBatch

DEFAULT_TOPIC = "kraft-acl-metadata"  # a real broker refuses __cluster_metadata (see kafka.py)
SCHEMA_HEADER = "kraft-acl-schema"


def decode_message(value: bytes, schema_json: bytes | None, codec: Codec, where: str) -> RecordBatch:
    """The batch one message carries (decoded lazily); LogError names `where` (topic and Kafka offset)."""
    frame = parse_frame_at(value, 0)
    if frame is None or frame.size != len(value):
        raise LogError(f"{where}: not a whole kraft-acl batch frame")
    try:
        schema = BatchSchema.from_json(schema_json.decode()) if schema_json else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise LogError(f"{where}: the {SCHEMA_HEADER} header: {exc}") from exc
    return decode_frame(codec, frame, schema)
