"""The table form of `kraft-acl authorize`: one row per request, its answer in words (operation names, ACLs).

Pure functions building rich tables; nothing here is shared between threads.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from kraftacl.authorizer.inputs.validate import FilterSpec, Request
from kraftacl.authorizer.model.acls import AclOperation

ANY = "(any)"


def operation_names(field: int) -> list[str]:
    """The operations set in a KIP-430 bit field (bit `1 << code`, a signed int32)."""
    return [op.name for op in AclOperation if (field >> op) & 1]


def _resource(rtype: str, name: str | None, pattern: str | None = None) -> str:
    text = rtype if name is None else f"{rtype}:{name}"
    return text if pattern is None else f"{text} ({pattern})"


def _filter_cells(spec: FilterSpec) -> tuple[str, str, str, str]:
    """principal, host, operation, resource of a describe filter ("(any)" where it matches anything)."""
    rtype = spec.resource_type.name
    return (
        spec.principal if spec.principal is not None else ANY,
        spec.host if spec.host is not None else ANY,
        spec.operation.name,
        _resource(rtype, spec.resource_name if spec.resource_name is not None else ANY, spec.pattern_type.name),
    )


def request_text(request: Request) -> str:
    """What a request asks, on two lines: `kind: principal from host` and `operation on resource`."""
    if request.filter is not None:
        principal, host, op, resource = _filter_cells(request.filter)
    else:
        rtype = request.resource_type.name if request.resource_type is not None else ""
        pattern = request.pattern_type.name if request.pattern_type is not None else None
        name = request.resource_name if request.kind != "by_resource_type" else "(at least one)"
        principal, host, resource = request.principal or "", request.host or "", _resource(rtype, name, pattern)
        if request.operation is None:  # authorized_operations
            return f"{request.kind}: {principal} from {host}\nwhich operations on {resource}?"
        op = request.operation.name
    return f"{request.kind}: {principal} from {host}\n{op} on {resource}"


def acl_line(acl: dict[str, str]) -> str:
    """One ACL (in its acls.json form) as a line: `TOPIC:orders- (PREFIXED) ALLOW User:alice READ from *`."""
    where = _resource(acl["resource_type"], acl["resource_name"], acl["pattern_type"])
    return f"{where} {acl['permission_type']} {acl['principal']} {acl['operation']} from {acl['host']}"


def answer_text(answer: dict[str, Any]) -> str:
    """The answer in words: the decision, the operation names of a bit field, or the ACLs a filter found."""
    if "error" in answer:
        return f"ERROR: {answer['error']}"
    if "result" in answer:
        return str(answer["result"])
    if "authorized_operations" in answer:
        field = answer["authorized_operations"]
        return f"{', '.join(operation_names(field)) or 'none'} ({field})"
    acls = answer["acls"]
    head = f"{len(acls)} ACL{'' if len(acls) == 1 else 's'}"
    return "\n".join([head + (":" if acls else ""), *(acl_line(a) for a in acls)])


def answers_table(answers: list[tuple[Request, dict[str, Any]]], explain: bool) -> Table:
    """One row per request: what it asks, and the answer (with the deciding rule when explaining)."""
    table = Table("#", "request", "answer", show_lines=True)
    if explain:
        table.add_column("rule")
    for number, (request, answer) in enumerate(answers, start=1):
        cells = [str(number), request_text(request), answer_text(answer)]
        if explain:
            cells.append(str(answer.get("rule", "")))
        table.add_row(*cells)
    return table
