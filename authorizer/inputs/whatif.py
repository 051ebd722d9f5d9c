"""The what-if files (acls.json, requests.jsonl of tests/conformance/README.md) and their evaluation.

Pure functions over immutable inputs; the formats are validated by `authorizer.inputs.validate`, whose errors
name the file, the line (or array element) and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.inputs.validate import AclEntry, FilterSpec, InputError, Request, parse_acls, parse_requests
from kraftacl.authorizer.model.acls import PatternType, StandardAcl

__all__ = ["AclEntry", "FilterSpec", "InputError", "Request", "acl_to_json", "evaluate", "load_acls", "load_requests"]


def acl_to_json(acl: StandardAcl) -> dict[str, str]:
    """The acls.json object form of a stored ACL."""
    return {
        "resource_type": acl.resource_type.name,
        "resource_name": acl.resource_name,
        "pattern_type": acl.pattern_type.name,
        "principal": acl.principal,
        "host": acl.host,
        "operation": acl.operation.name,
        "permission_type": acl.permission_type.name,
    }


def read_input(path: Path) -> bytes:
    """The bytes of an input file; an unreadable file is an InputError naming it."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None


def load_acls(path: Path) -> list[StandardAcl]:
    """Parse an acls.json array; a bad element is reported as `file: element N: field 'x': reason`."""
    return parse_acls(read_input(path), str(path))


def load_requests(path: Path) -> list[tuple[int, Request]]:
    """Parse requests.jsonl: (line number, request) for each non-blank line; errors name the line."""
    return parse_requests(read_input(path), str(path))


def evaluate(authorizer: StandardAuthorizer, request: Request, explain: bool = False) -> dict[str, Any]:
    """Answer one request; the result object has the keys of expected.jsonl (plus `rule` when explaining)."""
    if request.kind == "describe":
        assert request.filter is not None
        found = authorizer.acls(request.filter.to_filter())
        ordered = sorted((acl_to_json(a) for a in found), key=lambda a: tuple(a.values()))
        return {"acls": ordered}
    assert request.principal is not None and request.host is not None and request.resource_type is not None
    ctx = RequestContext.of(request.principal, request.host)
    if request.kind == "authorized_operations":
        assert request.resource_name is not None
        return {
            "authorized_operations": authorizer.authorized_operations(ctx, request.resource_type, request.resource_name)
        }
    assert request.operation is not None
    if request.kind == "by_resource_type":
        result = authorizer.authorize_by_resource_type(ctx, request.operation, request.resource_type)
        return {"result": result.name}
    assert request.resource_name is not None
    pattern = request.pattern_type if request.pattern_type is not None else PatternType.LITERAL
    action = Action(request.operation, request.resource_type, request.resource_name, pattern)
    if explain:
        decision = authorizer.explain(ctx, action)
        return {"result": decision.result.name, "rule": str(decision.rule)}
    return {"result": authorizer.authorize(ctx, [action])[0].name}
