"""The index the decision reads: `AclIndex`, its build, the per-type and per-principal views, the prefix tries,
the copy-on-write overlay and the bulk loops (`bulk_rows`, compiled by mypyc when built).

Every published structure is immutable; a change builds the next one beside it.
"""
