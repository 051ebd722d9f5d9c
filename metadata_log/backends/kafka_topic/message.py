"""The Kafka backend's message format without a Kafka client: one message per batch, whose value is the
file log's CRC-checked frame and whose `kraft-acl-schema` header carries the writer schema.

Pure functions; thread-safe. `kafka.py` writes and reads messages with confluent-kafka; readers that get
the messages elsewhere (Spark's Kafka source in `pipeline/`) decode them here, with no client imported.
"""

from __future__ import annotations

from collections.abc import Sequence

from kraftacl.metadata_log.backends.file.format import decode_frame, encode_frame, parse_frame_at
from kraftacl.metadata_log.codec import BatchSchema, Codec
from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.records import MetadataRecord, RecordBatch

DEFAULT_TOPIC = "kraft-acl-metadata"  # a real broker refuses __cluster_metadata (see kafka.py)
SCHEMA_HEADER = "kraft-acl-schema"
# A batch of more records than this is sized from its first SIZE_SAMPLE records before it is encoded, so that one too
# large for a message is encoded once, part by part, and not first whole (a 200k-record import: 20 MB, 0.3 s).
SIZE_SAMPLE = 1_000
PART_FILL = 0.8  # parts are sized to about 80% of the limit: records larger than the sample's need no second split


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


def batch_frames(
    codec: Codec, base: int, records: Sequence[MetadataRecord], epoch: int, ts: int, limit: int
) -> list[tuple[int, bytes]]:
    """`records` as (logical base, frame) parts of at most `limit` bytes each, in order and contiguous: one part
    unless the batch is too large for one message, then as few as fit. Each record is encoded once, unless a part
    sized from the sample still comes out over the limit (records much larger than the first ones): that part is
    split again. A single record over the limit is one part (the broker refuses it, and the error names it)."""
    count = len(records)
    if count > SIZE_SAMPLE:
        sample = max(len(codec.encode(records[:SIZE_SAMPLE])), 1)
        if sample * count / SIZE_SAMPLE > limit:  # too large for one message, by the sample's estimate
            size = max(1, int(limit * PART_FILL * SIZE_SAMPLE / sample))
            return _parts(codec, base, records, epoch, ts, limit, size)
    return _parts(codec, base, records, epoch, ts, limit, count)


def _parts(
    codec: Codec, base: int, records: Sequence[MetadataRecord], epoch: int, ts: int, limit: int, size: int
) -> list[tuple[int, bytes]]:
    """`records` in parts of `size` records, each split again (by its own size) where it is over `limit`."""
    out: list[tuple[int, bytes]] = []
    for start in range(0, len(records), size):
        part = records[start : start + size]
        frame = encode_frame(base + start, len(part), epoch, ts, codec.encode(part))
        if len(frame) <= limit or len(part) == 1:
            out.append((base + start, frame))
        else:
            pieces = -(-len(frame) // int(limit * PART_FILL))
            out.extend(_parts(codec, base + start, part, epoch, ts, limit, -(-len(part) // pieces)))
    return out
