"""The JSON shapes of serve's bulk import (POST /v1/acls/import) as msgspec Structs, next to `api.wire`'s.

Immutable values; decoded and validated in one C pass, and part of the OpenAPI document.
"""

from __future__ import annotations

from kraftacl.api.wire import AclIn, _In, _Out


class ImportIn(_In, frozen=True):
    """Every ACL to import (the acls.json form), written as ONE batch; `dry_run` only says what would be added."""

    acls: list[AclIn]
    dry_run: bool = False


class ImportOut(_Out, frozen=True):
    """Counts as `kraft-acl import` reports them; `base_offset` of the batch (null: nothing written, or a dry
    run); `offset` of the state after the call; `would_add` (dry run only) in input order."""

    read: int
    added: int
    present: int
    repeated: int
    offset: int
    base_offset: int | None = None
    would_add: list[AclIn] | None = None
