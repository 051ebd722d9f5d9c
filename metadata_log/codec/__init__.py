"""The v1 Avro batch format of kraft-acl's log, with one public entry point per operation:

* `encode_batch(records)`: one payload (with the built-in schema; a backend's `Codec` writes with its own),
* `decode_batch(payload, ...)`: a `RecordBatch` of records (a backend's `Codec.decode_batch`, lazily or not),
* `acl_rows(batch.records, tables)`: ids and ACL rows, straight from an undecoded payload (the replay's path).

Everything outside this package imports these names from `kraftacl.metadata_log.codec`, never its modules (an
import-linter contract): the codec (`avro`), its strict schema checks (`avro_strict`), the row decoders (`fast`, and
`rows`, compiled by mypyc when built) and the lazily decoded record list (`lazy_records`) are its internals.

Pure functions and immutable values; thread-safe.
"""

from kraftacl.metadata_log.codec.avro import CURRENT_SCHEMA, DEFAULT_CODEC, Codec
from kraftacl.metadata_log.codec.avro import decode as decode_batch
from kraftacl.metadata_log.codec.avro import encode as encode_batch
from kraftacl.metadata_log.codec.avro_strict import check_indexes
from kraftacl.metadata_log.codec.fast import DECODER, ace_records
from kraftacl.metadata_log.codec.rows import MAX_STRING_BYTES, RowTables
from kraftacl.metadata_log.codec.schema import BatchSchema
from kraftacl.metadata_log.codec.to_rows import acl_rows

__all__ = [
    "CURRENT_SCHEMA",
    "DECODER",
    "DEFAULT_CODEC",
    "MAX_STRING_BYTES",
    "BatchSchema",
    "Codec",
    "RowTables",
    "ace_records",
    "acl_rows",
    "check_indexes",
    "decode_batch",
    "encode_batch",
]
