"""Strict JSON, the one parser of every JSON input: log and snapshot headers, acls.json, requests, API bodies.

Refused, each as a `StrictJsonError` with the path of the first offending value in document order: a
duplicate key in an object, NaN and Infinity (also as an overflowing number such as 1e999), an
integer outside Java's long, text that is not UTF-8, and nesting deeper than `MAX_DEPTH` (the
parser's own recursion limit stops far deeper text before it is walked). Pure functions; thread-safe.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

MAX_DEPTH = 64  # JSON nesting accepted (the formats need 3 levels)
INT_RANGE = (-(2**63), 2**63 - 1)  # a JSON integer outside Java's long is refused wherever it appears


class StrictJsonError(ValueError):
    """What was refused (`reason`) and where (`path`: keys and array indexes; empty for the text as a whole)."""

    def __init__(self, reason: str, path: Sequence[str | int] = ()) -> None:
        self.reason = reason
        self.path: tuple[str | int, ...] = tuple(path)
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path)
        super().__init__(f"{reason} (at ${where})" if where else reason)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse a parsed JSON value nested deeper than `limit` (walked level by level, containers only).

    A container whose members are all scalars (an acls.json entry) is skipped by one set of their
    types, so a million flat objects cost no Python-level step per field."""
    level, depth = [value] if type(value) is dict or type(value) is list else [], 0
    while level:
        depth += 1
        if depth > limit:
            raise StrictJsonError(f"JSON nested more than {limit} levels deep")
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


def loads(text: str | bytes | bytearray) -> Any:
    """Parse JSON, refusing what Kafka's or any strict parser would not take silently (see the module)."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StrictJsonError(f"not UTF-8 text: byte 0x{text[exc.start]:02x} at offset {exc.start}") from None
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
        raise StrictJsonError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:  # the parser recurses once per level: far deeper than MAX_DEPTH
        raise StrictJsonError(f"JSON nested more than {MAX_DEPTH} levels deep") from None
    check_depth(value)
    if refused:
        path, offender = _first_refused(value)
        raise StrictJsonError(offender.reason, path)
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
