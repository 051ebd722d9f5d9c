"""kraft-acl's one import root: `kraftacl.<folder>` for each top-level folder (relative symlinks: metadata_log,
snapshots, authorizer, shell, server, pipeline, schemas), plus the rooms that live here: `cli` (the `kraft-acl`
commands), `api` (serve's contract and its clients), `bench` (the benchmark suites) and `harness` (drives real
components). docs/ARCHITECTURE.md draws the map.
"""
