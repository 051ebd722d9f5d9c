"""Typed reads of serve's properties (integers, choices, names, files) with one-line errors naming file, key and
value.

A `PropertyReader` belongs to one parse of one file; it remembers which keys were read, so the parse can warn
about the others. Not thread-safe (a parse is one call).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from kraftacl.authorizer.decision.config import java_trim
from kraftacl.authorizer.errors import ConfigError


class ServeConfigError(ConfigError):
    """A configuration value serve cannot use; the message is one line naming the key and the value."""


class PropertyReader:
    """Typed access to the properties with one-line errors; remembers which keys were read."""

    def __init__(self, path: Path, props: Mapping[str, str]) -> None:
        self.path = path
        self.props = props
        self.used: set[str] = set()

    def error(self, key: str, value: str, why: str) -> ServeConfigError:
        """The one-line error for `key=value`."""
        return ServeConfigError(f"{self.path}: {key}={value!r}: {why}")

    def get(self, key: str) -> str | None:
        """The trimmed value, or None when the key is absent."""
        self.used.add(key)
        value = self.props.get(key)
        return None if value is None else java_trim(value)

    def text(self, key: str, default: str | None = None) -> str | None:
        """The value, or `default` when absent or empty."""
        value = self.get(key)
        return default if value is None or value == "" else value

    def integer(self, key: str, default: int, low: int, high: int = 2**31 - 1) -> int:
        """An integer within [low, high]."""
        value = self.get(key)
        if value is None or value == "":
            return default
        if not re.fullmatch(r"[+-]?[0-9]+", value):
            raise self.error(key, value, "not an integer")
        # int() refuses more than 4300 digits, leading zeros too (ValueError: an "internal error", exit 1)
        digits = value.lstrip("+-").lstrip("0") or "0"
        too_long = len(digits) > len(str(max(abs(low), abs(high))))  # beyond every bound
        number = 0 if too_long else int(digits) * (-1 if value.startswith("-") else 1)
        if too_long or not low <= number <= high:
            raise self.error(key, value, f"must be between {low} and {high}")
        return number

    def choice(self, key: str, default: str, allowed: tuple[str, ...]) -> str:
        """One of `allowed` (case-insensitive), lower-cased."""
        value = self.text(key, default)
        assert value is not None
        if value.lower() not in allowed:
            raise self.error(key, value, f"must be one of {', '.join(allowed)}")
        return value.lower()

    def names(self, key: str) -> tuple[str, ...]:
        """A comma-separated list, trimmed, empty entries dropped."""
        value = self.get(key) or ""
        return tuple(java_trim(n) for n in value.split(",") if java_trim(n))

    def existing_file(self, key: str) -> Path | None:
        """A path that must name an existing file."""
        value = self.text(key)
        if value is None:
            return None
        path = Path(value)
        if not path.is_file():
            raise self.error(key, value, "no such file")
        return path

    def boolean(self, key: str, default: bool) -> bool:
        """true or false (case-insensitive)."""
        value = self.text(key)
        if value is None:
            return default
        if value.lower() not in ("true", "false"):
            raise self.error(key, value, "must be true or false")
        return value.lower() == "true"
