"""The ACL state and history at any offset, of kraft-acl's log or of Apache Kafka's own KRaft files, and the one
entry point that opens any metadata source (`metadata_source`).
"""
