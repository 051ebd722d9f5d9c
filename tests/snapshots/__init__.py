"""Tests of the `snapshots` package: naming, the file format, the store."""
