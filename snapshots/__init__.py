"""Snapshot files of the ACL state at a log offset: naming, writer, validating reader, store and policy.

This package imports only `metadata_log` (docs/ARCHITECTURE.md import rules).
"""
