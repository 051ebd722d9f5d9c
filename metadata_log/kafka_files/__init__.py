"""Read-only readers of Apache Kafka's own KRaft metadata files (`__cluster_metadata-0` segments and
`.checkpoint` snapshots): record batch v2 with CRC-32C, the metadata record frame, ACL records, control
records. `files.locate` finds them, `reader.log_batches` / `reader.read_snapshot` decode them.

Nothing in this package writes, renames or deletes a file.
"""
