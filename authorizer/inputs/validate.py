"""The one place input objects are validated: ACLs, describe filters and requests, from files or an HTTP body.

Every function is pure and every model immutable; thread-safe. API (what the CLI and the HTTP server use):

* `loads_strict(text)`: JSON without duplicate keys, NaN/Infinity, out-of-range integers or deep nesting.
* `parse_acl(obj)`, `parse_filter(obj)`, `parse_request(obj)`: one JSON object into a `StandardAcl`, an
  `AclBindingFilter` or a `Request`; unknown keys, wrong types, enum names Kafka's `fromString` does not
  accept, strings over 32,767 UTF-8 bytes are refused.
* `parse_acls(data, source)`, `parse_requests(data, source)`: whole acls.json / requests.jsonl texts.
* Every refusal is an `InputError` carrying `field_path`, `field` (`filter.pattern_type`), `reason` and
  `source`; `err.inside("acls", 3)` prefixes the path, `err.at("file: line 2")` sets where it came from.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from enum import IntEnum
from operator import itemgetter
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from kraftacl.authorizer.model.acls import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
    split_principal,
)
from kraftacl.authorizer.model.filters import AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter
from kraftacl.authorizer.model.input_checks import (
    MAX_DEPTH,
    MAX_STRING_BYTES,
    InputError,
    check_string,
    decode_utf8,
    json_type,
    loads_strict,
    parse_enum,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_STRING_BYTES",
    "AclEntry",
    "FilterSpec",
    "InputError",
    "Request",
    "check_string",
    "loads_strict",
    "parse_acl",
    "parse_acls",
    "parse_enum",
    "parse_filter",
    "parse_request",
    "parse_requests",
]


def _checked(check: Callable[[Any], Any], nullable: bool = False) -> BeforeValidator:
    return BeforeValidator((lambda v: v if v is None else check(v)) if nullable else (lambda v: check(v)))


def _enum(cls: Any, nullable: bool = False) -> BeforeValidator:
    if nullable:
        return BeforeValidator(lambda v: v if v is None else parse_enum(cls, v))
    return BeforeValidator(lambda v: parse_enum(cls, v))


Str = Annotated[str, _checked(check_string)]
OptStr = Annotated[str | None, _checked(check_string, nullable=True)]
RType = Annotated[ResourceType, _enum(ResourceType)]
PType = Annotated[PatternType, _enum(PatternType)]
Op = Annotated[AclOperation, _enum(AclOperation)]
Perm = Annotated[AclPermissionType, _enum(AclPermissionType)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class AclEntry(_Model):
    """One ACL object of acls.json (the fields of Kafka's StandardAcl)."""

    resource_type: RType
    resource_name: Str
    pattern_type: PType
    principal: Str
    host: Str
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
    """The `filter` of a describe request (Kafka's AclBindingFilter); a missing field, or a null name,
    principal or host, matches anything."""

    resource_type: RType = ResourceType.ANY
    resource_name: OptStr = None
    pattern_type: PType = PatternType.ANY
    principal: OptStr = None
    host: OptStr = None
    operation: Op = AclOperation.ANY
    permission_type: Perm = AclPermissionType.ANY

    def to_filter(self) -> AclBindingFilter:
        """Kafka's AclBindingFilter."""
        return AclBindingFilter(
            ResourcePatternFilter(self.resource_type, self.resource_name, self.pattern_type),
            AccessControlEntryFilter(self.principal, self.host, self.operation, self.permission_type),
        )


Kind = Literal["authorize", "by_resource_type", "authorized_operations", "describe"]
# The fields each kind of request takes (required ones first); `id`, `why` and `kind` go with every kind.
KIND_FIELDS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "authorize": (("principal", "host", "operation", "resource_type", "resource_name"), ("pattern_type",)),
    "by_resource_type": (("principal", "host", "operation", "resource_type"), ()),
    "authorized_operations": (("principal", "host", "resource_type", "resource_name"), ()),
    "describe": (("filter",), ()),
}
COMMON_FIELDS = ("kind", "id", "why")


def check_client_address(value: object) -> str:
    """A request's host: the client's IP address (IPv4, or IPv6 with an optional %scope), as Kafka has it."""
    text = check_string(value)
    try:
        ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        raise InputError(f"{text[:100]!r} is not an IP address (a request comes from a client's address)") from None
    return text


def check_client_principal(value: object) -> str:
    """A request's principal: `Type:name`, as every Kafka session has it (split at the first colon)."""
    text = check_string(value)
    if split_principal(text) is None:
        raise InputError(f"{text[:100]!r} is not a principal of the form Type:name (User:alice)")
    return text


class Request(_Model):
    """One question of requests.jsonl (tests/conformance/README.md); which fields it takes depends on `kind`.

    `pattern_type` (authorize only, LITERAL when absent) exists so that a non-LITERAL request pattern can be
    asked: Kafka refuses it when deciding ("Only literal resources are supported"), and so does `evaluate`.
    """

    kind: Kind = "authorize"
    id: OptStr = None
    why: OptStr = None
    principal: Annotated[str | None, _checked(check_client_principal, nullable=True)] = None
    host: Annotated[str | None, _checked(check_client_address, nullable=True)] = None
    operation: Annotated[AclOperation | None, _enum(AclOperation, nullable=True)] = None
    resource_type: Annotated[ResourceType | None, _enum(ResourceType, nullable=True)] = None
    resource_name: OptStr = None
    pattern_type: Annotated[PatternType | None, _enum(PatternType, nullable=True)] = None
    filter: FilterSpec | None = None


def _object(obj: object, allowed: tuple[str, ...], what: str) -> dict[str, Any]:
    """`obj` as a dict with only `allowed` keys; the first other key is named."""
    if not isinstance(obj, dict):
        raise InputError(f"expected {what} (a JSON object), got {json_type(obj)}")
    for key in obj:
        if key not in allowed:
            raise InputError(f"unknown field; {what} has the fields {', '.join(allowed)}", (key,))
    return obj


def _validate(model: type[_Model], obj: dict[str, Any]) -> Any:
    """Run the pydantic model; its first error becomes an InputError naming the field."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, InputError):
            raise InputError(cause.reason, tuple(err["loc"])) from None
        reason = "is required" if err["type"] == "missing" else f"{err['msg']}, got {json_type(err['input'])}"
        raise InputError(reason, tuple(err["loc"])) from None


_ACL_FIELDS = tuple(AclEntry.model_fields)
_GET_FIELDS = itemgetter(*_ACL_FIELDS)


def parse_acl(obj: object) -> StandardAcl:
    """One ACL object (every field required): the common spelling by dict lookups (`_plain_acl`), anything
    else through the validator, which names what is wrong."""
    acl = _plain_acl(obj)
    return acl if acl is not None else _validated_acl(obj)


def _validated_acl(obj: object) -> StandardAcl:
    entry: AclEntry = _validate(AclEntry, _object(obj, _ACL_FIELDS, "an ACL"))
    return entry.to_acl()


def parse_filter(obj: object) -> AclBindingFilter:
    """One describe filter object."""
    return _filter_spec(obj).to_filter()


def _filter_spec(obj: object) -> FilterSpec:
    spec: FilterSpec = _validate(FilterSpec, _object(obj, tuple(FilterSpec.model_fields), "a filter"))
    return spec


def parse_request(obj: object) -> Request:
    """One request object: `kind` (default authorize) decides which fields it must and may have."""
    if isinstance(obj, dict):
        kind = obj.get("kind", "authorize")
        if not isinstance(kind, str) or kind not in KIND_FIELDS:
            got = f"{kind[:100]!r}" if isinstance(kind, str) else json_type(kind)
            raise InputError(f"expected one of {', '.join(KIND_FIELDS)}, got {got}", ("kind",))
        required, optional = KIND_FIELDS[kind]
        _object(obj, COMMON_FIELDS + required + optional, f"a request of kind '{kind}'")
        if "filter" in obj:
            try:
                obj = {**obj, "filter": _filter_spec(obj["filter"])}
            except InputError as exc:
                raise exc.inside("filter") from None
    request: Request = _validate(Request, _object(obj, tuple(Request.model_fields), "a request"))
    missing = [name for name in KIND_FIELDS[request.kind][0] if getattr(request, name) is None]
    if missing:
        raise InputError(f"is required for kind '{request.kind}'", (missing[0],))
    return request


def parse_acls(data: str | bytes, source: str) -> list[StandardAcl]:
    """An acls.json text (a JSON array of ACL objects); errors read `<source>: element N: field 'x': ...`."""
    try:
        items = loads_strict(data)
    except InputError as exc:
        raise _located(exc, source) from None
    if not isinstance(items, list):
        raise InputError(f"expected a JSON array of ACL objects, got {json_type(items)}", source=source)
    acls = []
    for number, item in enumerate(items):
        try:
            acls.append(parse_acl(item))
        except InputError as exc:
            raise exc.at(f"{source}: element {number}") from None
    return acls


_E = TypeVar("_E", bound=IntEnum)


def _by_name(cls: type[_E]) -> dict[str, _E]:  # the names Kafka prints (UNKNOWN is left to parse_acl)
    return {m.name: m for m in cls if m.name != "UNKNOWN"}


_TYPES, _PATTERNS = _by_name(ResourceType), _by_name(PatternType)
_OPERATIONS, _PERMISSIONS = _by_name(AclOperation), _by_name(AclPermissionType)


def _plain_acl(item: object) -> StandardAcl | None:
    """The ACL of an object in the common spelling (exactly the seven fields, enums by their names, ASCII
    strings within Kafka's limit) by dict lookups, or None to let the validator decide: a fast path for
    a million ACLs (an acls.json, serve's image) that accepts nothing the validator refuses."""
    if type(item) is not dict or len(item) != len(_ACL_FIELDS):
        return None
    try:
        rt, name, pt, principal, host, op, pm = _GET_FIELDS(item)
        acl = StandardAcl(_TYPES[rt], name, _PATTERNS[pt], principal, host, _OPERATIONS[op], _PERMISSIONS[pm])
    except (KeyError, TypeError):  # a missing field, an unhashable value, another spelling or a code
        return None
    if (
        type(name) is not str
        or type(principal) is not str
        or type(host) is not str
        or not (name + principal + host).isascii()
        or max(len(name), len(principal), len(host)) > MAX_STRING_BYTES
    ):
        return None
    return acl


def parse_requests(data: str | bytes, source: str) -> list[tuple[int, Request]]:
    """A requests.jsonl text: (line number, request) for each non-blank line; errors name the line."""
    try:
        text = decode_utf8(data) if isinstance(data, bytes | bytearray) else data
    except InputError as exc:
        raise exc.at(source) from None
    out = []
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines(): U+2028 may sit in a string
        if not line.strip():
            continue
        try:
            out.append((number, parse_request(loads_strict(line))))
        except InputError as exc:
            raise exc.at(f"{source}: line {number}") from None
    return out


def _located(exc: InputError, source: str) -> InputError:
    """A whole-document error: a path into an array of ACLs names the element, the rest the field."""
    path = exc.field_path
    if path and isinstance(path[0], int):
        return InputError(exc.reason, path[1:], f"{source}: element {path[0]}")
    return exc.at(source)
