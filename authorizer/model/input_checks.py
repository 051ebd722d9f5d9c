"""The checks every input value passes at the edge: strict JSON, Kafka's string limit, enum names and codes.

Pure functions and one immutable exception type; thread-safe. `authorizer.inputs.validate` is the public API
that builds on these (it re-exports every name a caller needs).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from functools import lru_cache
from typing import Any, TypeVar

from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.metadata_log import strict_json

MAX_STRING_BYTES = 32767  # Kafka's limit for every string field (spec §2), in UTF-8 bytes
MAX_DEPTH = strict_json.MAX_DEPTH  # JSON nesting accepted (the formats need 3 levels)

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


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON strictly (`metadata_log.strict_json`): a refusal is an InputError with the field path of
    the first offending value; bytes that are not UTF-8 name the offset of the first bad byte."""
    if isinstance(text, bytes | bytearray):
        text = decode_utf8(text)
    try:
        return strict_json.loads(text)
    except strict_json.StrictJsonError as exc:
        raise InputError(exc.reason, exc.path) from None


def decode_utf8(data: bytes | bytearray) -> str:
    """Strict UTF-8 text; the error names the offset of the first bad byte."""
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}") from None
