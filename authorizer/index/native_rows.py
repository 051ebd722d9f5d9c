"""The bulk row loops in use: the mypyc-compiled copy of `bulk_rows` when it is built and current, else the source.

Module-level state is set once at import and never changes: safe from any thread.
"""

from __future__ import annotations

from kraftacl.authorizer.index import bulk_rows
from kraftacl.metadata_log.native import load_native

# "native", "disabled", "not built" or "stale" (see metadata_log/native.py).
_compiled, BULK_ROWS = load_native(bulk_rows, "kraftacl.authorizer.index._bulk_rows_native")
_module = _compiled if _compiled is not None else bulk_rows
group_acls = _module.group_acls
apply_new_rows = _module.apply_new_rows
add_columns = _module.add_columns
hashed_dict = _module.hashed_dict
prefix_trie = _module.prefix_trie
prefix_tries = _module.prefix_tries
grant_mask = _module.grant_mask
decide_many = _module.decide_many
decide_code = _module.decide_code
code_of_mask = _module.code_of_mask
