"""The checks every input value passes at the edge: strict JSON, Kafka's string limit, enum names and codes.

Pure functions and one immutable exception type; thread-safe. `authorizer.inputs` is the public API
that builds on these (it re-exports every name a caller needs).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import IntEnum
from functools import lru_cache
from typing import Any, TypeVar

from authorizer.errors import AuthorizerError

MAX_STRING_BYTES = 32767  # Kafka's limit for every string field (spec §2), in UTF-8 bytes
MAX_DEPTH = 64  # JSON nesting accepted (the formats need 3 levels)
INT_RANGE = (-(2**63), 2**63 - 1)  # a JSON integer outside Java's long is refused wherever it appears

E = TypeVar("E", bound=IntEnum)
FieldPath = Sequence[str | int]


class InputError(AuthorizerError, ValueError):
    """Bad input: `reason`, the `field_path` it concerns (keys and array indexes) and the `source`
    (a file name with its line or element, or an API request) when known. `str()` is one line."""

    def __init__(self, reason: str, field_path: FieldPath = (), source: str = "") -> None:
        self.reason = reason
        self.field_path: tuple[str | int, ...] = tuple(field_path)
        self.source = source
        super().__init__(": ".join(p for p in (source, f"field '{self.field}'" if self.field else "", reason) if p))

    @property
    def field(self) -> str:
        """The field path as text: `filter.resource_type`, `acls[3].operation`; '' for the value as a whole."""
        text = ""
        for part in self.field_path:
            if isinstance(part, str) and len(part) > 100:
                part = part[:100] + "..."
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
        return text

    def inside(self, *outer: str | int) -> InputError:
        """The same error, its field path prefixed by the path of the value that holds it."""
        return InputError(self.reason, (*outer, *self.field_path), self.source)

    def at(self, source: str) -> InputError:
        """The same error, located in `source` (e.g. `acls.json: element 3`)."""
        return InputError(self.reason, self.field_path, source)


def json_type(value: object) -> str:
    """How a JSON value is named in messages: `null`, `a boolean`, `the number 5`, `a string`, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    names: dict[type, str] = {str: "a string", list: "an array", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def check_string(value: object, field_path: FieldPath = (), limit: int = MAX_STRING_BYTES) -> str:
    """`value` if it is a string Kafka can carry: valid Unicode (no lone surrogate) of at most `limit` UTF-8 bytes."""
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {json_type(value)}", field_path)
    if value.isascii():
        size = len(value)
    else:
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise InputError(
                f"not valid Unicode: a lone surrogate {value[exc.start]!r} at character {exc.start}", field_path
            ) from None
    if size > limit:
        raise InputError(f"{size} UTF-8 bytes, over Kafka's limit of {limit} bytes for a string", field_path)
    return value


@lru_cache(maxsize=4096)
def _enum_by_text(cls: type[E], text: str) -> E | None:
    """`cls.from_string(text)` unless that is the UNKNOWN fallback for a name Kafka does not know (cached:
    a file repeats a few names many times)."""
    parsed: E = cls.from_string(text)  # type: ignore[attr-defined]
    return parsed if parsed != 0 or text.upper() == "UNKNOWN" else None


def parse_enum(cls: type[E], value: object, field_path: FieldPath = ()) -> E:
    """A Kafka enum from its name, as Kafka's `fromString` accepts it (spec §1.6), or from its code.

    ResourceType, AclOperation and AclPermissionType names are upper-cased first (`transactional_id`
    works); PatternType names are case-sensitive (`prefixed` does not). Where Kafka would fall back to
    UNKNOWN for a name or code it does not know, this refuses the value, naming the valid ones;
    `UNKNOWN` itself is accepted. A member of `cls` is returned as is.
    """
    if isinstance(value, str):
        parsed: E | None = _enum_by_text(cls, value)
        if parsed is not None:
            return parsed
    elif isinstance(value, cls):
        return value
    names = ", ".join(cls.__members__)
    if isinstance(value, int) and not isinstance(value, bool):
        if value in cls._value2member_map_:
            return cls(value)
        raise InputError(f"{value} is not a code of {cls.__name__} (0..{len(cls) - 1}: {names})", field_path)
    if not isinstance(value, str):
        raise InputError(f"expected one of {names}, got {json_type(value)}", field_path)
    hint = ""
    if value.upper() in cls.__members__:
        hint = f" ({cls.__name__} names are case-sensitive in Kafka: {value.upper()})"
    raise InputError(f"{value[:100]!r} is not one of {names}{hint}", field_path)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse a parsed JSON value nested deeper than `limit` (walked level by level, containers only).

    A container whose members are all scalars (an acls.json entry) is skipped by one set of their
    types, so a million flat objects cost no Python-level step per field."""
    level, depth = [value] if type(value) is dict or type(value) is list else [], 0
    while level:
        depth += 1
        if depth > limit:
            raise InputError(f"JSON nested more than {limit} levels deep")
        children: list[Any] = []
        for item in level:
            members = item.values() if type(item) is dict else item
            if not _SCALARS.issuperset(map(type, members)):
                children.extend(m for m in members if type(m) is dict or type(m) is list)
        level = children


class _Refused:
    """Stands in for a value the parser hooks refused, so that the error can name where it was."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON, refusing what Kafka's or any strict parser would not take silently.

    Refused, with the field path of the first offence: a duplicate key in an object, NaN and
    Infinity (also as an overflowing number such as 1e999), an integer outside Java's long, text
    that is not UTF-8, and nesting deeper than `MAX_DEPTH` (the parser's own recursion limit stops
    far deeper text before it is walked).
    """
    if isinstance(text, bytes | bytearray):
        text = decode_utf8(text)
    refused: list[_Refused] = []

    def refuse(reason: str) -> _Refused:
        refused.append(_Refused(reason))
        return refused[-1]

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any] | _Refused:
        obj = dict(items)
        if len(obj) == len(items):
            return obj
        seen: set[str] = set()
        for key, _ in items:  # name the first repeated key
            if key in seen:
                break
            seen.add(key)
        return refuse(f"duplicate key {key[:100]!r} in one object")

    def integer(digits: str) -> int | _Refused:
        value = int(digits) if len(digits) <= 20 else None  # int() refuses 4,300+ digits
        if value is None or not INT_RANGE[0] <= value <= INT_RANGE[1]:
            return refuse(f"the integer {digits[:40]}{'...' if len(digits) > 40 else ''} is outside Java's long range")
        return value

    def number(digits: str) -> float | _Refused:
        value = float(digits)
        return refuse(f"the number {digits[:40]} is not finite") if value in (float("inf"), float("-inf")) else value

    try:
        value = json.loads(
            text,
            object_pairs_hook=pairs,
            parse_int=integer,
            parse_float=number,
            parse_constant=lambda name: refuse(f"{name} is not a JSON number"),
        )
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:  # the parser recurses once per level: far deeper than MAX_DEPTH
        raise InputError(f"JSON nested more than {MAX_DEPTH} levels deep") from None
    check_depth(value)
    if refused:
        path, offender = _first_refused(value)
        raise InputError(offender.reason, path)
    return value


def _first_refused(value: Any) -> tuple[tuple[str | int, ...], _Refused]:
    """The path to the first refused value, in document order (depth is bounded by `check_depth`)."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, _Refused):
            return path, item
        children: list[tuple[str | int, Any]] = (
            list(item.items()) if isinstance(item, dict) else list(enumerate(item)) if isinstance(item, list) else []
        )
        stack.extend(((*path, key), child) for key, child in reversed(children))
    raise AssertionError("a refused value was recorded but is not in the parsed document")


def decode_utf8(data: bytes | bytearray) -> str:
    """Strict UTF-8 text; the error names the offset of the first bad byte."""
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}") from None
