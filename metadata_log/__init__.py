"""The event-sourced `__cluster_metadata` log: records, codec, backends and the ordered replayer.

This package imports nothing from the rest of kraft-acl (docs/ARCHITECTURE.md import rules).
"""
