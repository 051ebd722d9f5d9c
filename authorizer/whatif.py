"""The what-if file formats (acls.json, requests.jsonl of spec/conformance/README.md) and their evaluation.

Pure functions over immutable inputs; errors name the file, the line (or array index) and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from authorizer.errors import AuthorizerError
from authorizer.filters import AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter
from authorizer.model import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
)
from authorizer.standard import Action, RequestContext, StandardAuthorizer


class InputError(AuthorizerError, ValueError):
    """A malformed input file; the message is one line naming file, line and field."""


def _enum(cls: type[Any], value: Any) -> Any:
    """Accept an enum name (Kafka's parsing rules) or its code; reject text that names nothing."""
    if isinstance(value, int) and not isinstance(value, bool):
        return cls.from_code(value)
    if not isinstance(value, str):
        raise ValueError(f"expected one of {', '.join(cls.__members__)}")
    parsed = cls.from_string(value)
    if parsed == 0 and value.upper() != "UNKNOWN":
        raise ValueError(f"{value!r} is not one of {', '.join(cls.__members__)}")
    return parsed


RType = Annotated[ResourceType, BeforeValidator(lambda v: _enum(ResourceType, v))]
PType = Annotated[PatternType, BeforeValidator(lambda v: _enum(PatternType, v))]
Op = Annotated[AclOperation, BeforeValidator(lambda v: _enum(AclOperation, v))]
Perm = Annotated[AclPermissionType, BeforeValidator(lambda v: _enum(AclPermissionType, v))]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class AclEntry(_Model):
    """One ACL object of acls.json."""

    resource_type: RType
    resource_name: str
    pattern_type: PType
    principal: str
    host: str
    operation: Op
    permission_type: Perm

    def to_acl(self) -> StandardAcl:
        """The stored form."""
        return StandardAcl(
            self.resource_type,
            self.resource_name,
            self.pattern_type,
            self.principal,
            self.host,
            self.operation,
            self.permission_type,
        )


class FilterSpec(_Model):
    """The `filter` of a describe request: null means any."""

    resource_type: RType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Op = AclOperation.ANY
    permission_type: Perm = AclPermissionType.ANY

    def to_filter(self) -> AclBindingFilter:
        """Kafka's AclBindingFilter."""
        return AclBindingFilter(
            ResourcePatternFilter(self.resource_type, self.resource_name, self.pattern_type),
            AccessControlEntryFilter(self.principal, self.host, self.operation, self.permission_type),
        )


class Request(_Model):
    """One line of requests.jsonl; which fields are required depends on `kind`."""

    kind: Literal["authorize", "by_resource_type", "authorized_operations", "describe"] = "authorize"
    id: str | None = None
    principal: str | None = None
    host: str | None = None
    operation: Op | None = None
    resource_type: RType | None = None
    resource_name: str | None = None
    filter: FilterSpec | None = None

    def required(self) -> tuple[str, ...]:
        """The fields this kind needs."""
        return {
            "authorize": ("principal", "host", "operation", "resource_type", "resource_name"),
            "by_resource_type": ("principal", "host", "operation", "resource_type"),
            "authorized_operations": ("principal", "host", "resource_type", "resource_name"),
            "describe": ("filter",),
        }[self.kind]


def first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or "(object)"
    return f"field '{field}': {err['msg']}"


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


def read_json_array(path: Path) -> list[Any]:
    """The JSON array an acls.json holds; InputError names the file and what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON array of ACL objects, got {type(data).__name__}")
    return data


def load_acls(path: Path) -> list[StandardAcl]:
    """Parse an acls.json array; a bad element is reported as `file: element N: field 'x': reason`."""
    data = read_json_array(path)
    acls = []
    for number, item in enumerate(data):
        try:
            acls.append(AclEntry.model_validate(item).to_acl())
        except ValidationError as exc:
            raise InputError(f"{path}: element {number}: {first_error(exc)}") from exc
    return acls


def load_requests(path: Path) -> Iterator[tuple[int, Request]]:
    """Parse requests.jsonl lazily, yielding (line number, request); blank lines are skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            request = Request.model_validate_json(line)
        except ValidationError as exc:
            if exc.errors()[0]["type"] == "json_invalid":
                raise InputError(f"{path}: line {number}: not valid JSON: {exc.errors()[0]['msg']}") from exc
            raise InputError(f"{path}: line {number}: {first_error(exc)}") from exc
        missing = [name for name in request.required() if getattr(request, name) is None]
        if missing:
            raise InputError(f"{path}: line {number}: field '{missing[0]}' is required for kind '{request.kind}'")
        yield number, request


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
    action = Action(request.operation, request.resource_type, request.resource_name)
    if explain:
        decision = authorizer.explain(ctx, action)
        return {"result": decision.result.name, "rule": str(decision.rule)}
    return {"result": authorizer.authorize(ctx, [action])[0].name}
