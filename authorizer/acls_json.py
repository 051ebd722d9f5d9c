"""acls.json in bulk: read a large file fast with the what-if format's exact rules, and write one back sorted
and stable (one ACL per line), so a set of ACLs can be kept in git and imported in one step.

Pure functions; the lookup tables are built once at import and never change.

The format is `authorizer.whatif`'s (README "kraft-acl authorize"): a JSON array of objects with the
seven fields named by enum name (or code). `read_acls_json` takes the common case (every field a string
naming its enum the usual way) through plain dict lookups and hands any other element to the what-if
validator (`AclEntry`), which accepts it or names the element and field at fault, exactly as
`whatif.load_acls` does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from authorizer.model import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from authorizer.whatif import AclEntry, InputError, acl_to_json, first_error, read_json_array

_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
# name -> member for the spellings `whatif._enum` accepts in the common case (the exact upper-case name;
# PatternType is case-sensitive anyway). UNKNOWN is left to the validator.
_TYPES = {m.name: m for m in ResourceType if m.name != "UNKNOWN"}
_PATTERNS = {m.name: m for m in PatternType if m.name != "UNKNOWN"}
_OPERATIONS = {m.name: m for m in AclOperation if m.name != "UNKNOWN"}
_PERMISSIONS = {m.name: m for m in AclPermissionType if m.name != "UNKNOWN"}


def read_acls_json(path: Path) -> list[StandardAcl]:
    """Every ACL of an acls.json file, in file order; InputError names the file, element and field."""
    data = read_json_array(path)
    out: list[StandardAcl] = []
    append = out.append
    for number, item in enumerate(data):
        acl = _common(item)
        if acl is None:
            try:
                acl = AclEntry.model_validate(item).to_acl()
            except ValidationError as exc:
                raise InputError(f"{path}: element {number}: {first_error(exc)}") from exc
        append(acl)
    return out


def _common(item: Any) -> StandardAcl | None:
    """The ACL of an element in the common spelling, or None to let the validator decide."""
    if type(item) is not dict:
        return None
    try:
        rt, name, pt, principal, host, op, pm = (item[f] for f in _FIELDS)
        acl = StandardAcl(_TYPES[rt], name, _PATTERNS[pt], principal, host, _OPERATIONS[op], _PERMISSIONS[pm])
    except (KeyError, TypeError):  # a missing field, a non-string name, an unusual spelling
        return None
    if type(name) is not str or type(principal) is not str or type(host) is not str:
        return None
    return acl


def acls_json_text(acls: Iterable[StandardAcl]) -> str:
    """acls.json text: sorted by resource type, name, pattern, principal, host, operation, permission
    (enum names), one ACL per line, so the same set always gives the same bytes and git diffs show ACLs."""
    rows = sorted({tuple(acl_to_json(a).values()) for a in acls})
    lines = [json.dumps(dict(zip(_FIELDS, row, strict=True)), ensure_ascii=False) for row in rows]
    return "[\n" + ",\n".join(lines) + ("\n]\n" if lines else "]\n")
