"""Kafka's ACL model: ACLs and their enums (`acls`), binding filters, operation implications, host matching and the
checks every input value passes.

Immutable values and pure functions; thread-safe.
"""
