"""acls.json written back sorted and stable (one ACL per line), so a set of ACLs can be kept in git and
imported in one step.

Pure functions. The format is the what-if one (docs/cli.md "kraft-acl authorize"): a JSON array of objects
with the seven fields of an ACL; reading it is `authorizer.inputs.whatif.load_acls`
(`authorizer.inputs.validate.parse_acls`: strict JSON, every element validated, errors naming the file, element
and field).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from kraftacl.authorizer.inputs.whatif import acl_to_json
from kraftacl.authorizer.model.acls import StandardAcl

_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")


def acls_json_text(acls: Iterable[StandardAcl]) -> str:
    """acls.json text: sorted by resource type, name, pattern, principal, host, operation, permission
    (enum names), one ACL per line, so the same set always gives the same bytes and git diffs show ACLs."""
    rows = sorted({tuple(acl_to_json(a).values()) for a in acls})
    lines = [json.dumps(dict(zip(_FIELDS, row, strict=True)), ensure_ascii=False) for row in rows]
    return "[\n" + ",\n".join(lines) + ("\n]\n" if lines else "]\n")
