"""The v1 Avro batch format of kraft-acl's log: the codec (`avro`), its strict schema checks (`avro_strict`), the
row decoders (`fast`, and `rows`, compiled by mypyc when built) and the lazily decoded record list (`lazy_records`).

Pure functions and immutable values; thread-safe.
"""
