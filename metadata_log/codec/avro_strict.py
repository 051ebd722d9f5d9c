"""A strict pre-read of Avro binary data: rejects the out-of-range union and enum indexes fastavro accepts.

Pure functions; safe from any thread.

Why: fastavro (1.13.1, both its Cython and its pure-Python reader) picks a union branch or an enum
symbol with `schema[index]`, so a negative index from damaged bytes silently reads as a branch
counted from the end (`-1` in a two-branch union is the second branch) instead of failing. The
hand-written v1 decoder rejects such bytes; this walk gives the fastavro paths (other writer schemas,
snapshot chunks) the same answer. It reads the data exactly as a decoder would and raises only for
an index out of range: a truncated payload simply ends the walk, and fastavro then reports it.
"""

from __future__ import annotations

from typing import Any

_FIXED_SIZES = {"null": 0, "boolean": 1, "float": 4, "double": 8}
_VARINTS = frozenset(("int", "long"))
_LENGTH_PREFIXED = frozenset(("bytes", "string"))


class _Ended(Exception):
    """The payload ended inside a value (fastavro reports it; the walk just stops)."""


class _Reader:
    """A cursor over the payload with Avro's zigzag varint."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def long(self) -> int:
        """One zigzag varint; _Ended if the payload ends inside it."""
        data, pos, shift, value = self.data, self.pos, 0, 0
        while True:
            if pos >= len(data) or shift > 63:
                raise _Ended
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        self.pos = pos
        return (value >> 1) ^ -(value & 1)

    def skip(self, size: int) -> None:
        """Step over `size` bytes; _Ended if fewer remain."""
        if size < 0 or self.pos + size > len(self.data):
            raise _Ended
        self.pos += size


def check_indexes(payload: bytes, parsed_schema: Any) -> None:
    """ValueError naming the byte offset and the index when a union or enum index is out of range."""
    try:
        _walk(_Reader(payload), parsed_schema, _named_types(parsed_schema))
    except _Ended:
        return


def has_indexes(parsed_schema: Any) -> bool:
    """True when the schema holds a union or an enum anywhere (only then can an index be wrong)."""
    return _has_indexes(parsed_schema, _named_types(parsed_schema), set())


def _named_types(parsed_schema: Any) -> dict[str, Any]:
    """fastavro's table of the named types a parsed schema defines (references to them are their names)."""
    named: dict[str, Any] = parsed_schema.get("__named_schemas", {}) if isinstance(parsed_schema, dict) else {}
    return named


def _has_indexes(schema: Any, named: dict[str, Any], seen: set[str]) -> bool:
    if isinstance(schema, list):
        return True
    if isinstance(schema, str):
        if schema not in named or schema in seen:
            return False
        seen.add(schema)
        return _has_indexes(named[schema], named, seen)
    kind = schema["type"]
    if kind == "enum":
        return True
    if kind in ("record", "error"):
        return any(_has_indexes(field["type"], named, seen) for field in schema["fields"])
    if kind in ("array", "map"):
        return _has_indexes(schema["items" if kind == "array" else "values"], named, seen)
    return not isinstance(kind, str) and _has_indexes(kind, named, seen)


def _walk(reader: _Reader, schema: Any, named: dict[str, Any]) -> None:
    """Read one value of `schema` (fastavro's parsed form: names resolve through `named`)."""
    if isinstance(schema, list):
        start = reader.pos
        index = reader.long()
        if not 0 <= index < len(schema):
            raise ValueError(f"union index {index} at byte {start} is outside 0..{len(schema) - 1}")
        _walk(reader, schema[index], named)
        return
    if isinstance(schema, str):
        if schema in _VARINTS:
            reader.long()
        elif schema in _LENGTH_PREFIXED:
            reader.skip(reader.long())
        elif schema in _FIXED_SIZES:
            reader.skip(_FIXED_SIZES[schema])
        else:
            _walk(reader, named[schema], named)
        return
    kind = schema["type"]
    if kind == "record" or kind == "error":
        for field in schema["fields"]:
            _walk(reader, field["type"], named)
    elif kind == "enum":
        start = reader.pos
        index = reader.long()
        if not 0 <= index < len(schema["symbols"]):
            raise ValueError(f"enum index {index} at byte {start} is outside 0..{len(schema['symbols']) - 1}")
    elif kind == "fixed":
        reader.skip(schema["size"])
    elif kind == "array" or kind == "map":
        _walk_blocks(reader, schema, named)
    else:  # a primitive with attributes (a logical type): read as its underlying type
        _walk(reader, kind, named)


def _walk_blocks(reader: _Reader, schema: dict[str, Any], named: dict[str, Any]) -> None:
    """Read the blocks of an array or map until the zero count that ends them."""
    while True:
        count = reader.long()
        if count == 0:
            return
        if count < 0:  # a sized block: the count is negated and followed by the block's byte size
            count = -count
            reader.long()
        for _ in range(count):
            if schema["type"] == "map":
                reader.skip(reader.long())
                _walk(reader, schema["values"], named)
            else:
                _walk(reader, schema["items"], named)
