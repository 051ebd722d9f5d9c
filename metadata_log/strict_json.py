"""Strict JSON for the headers and small files of the log and its snapshots: no duplicate key, no NaN or Infinity,
no nesting deep enough to exhaust the stack.

Pure functions; thread-safe.
"""

from __future__ import annotations

import json
from typing import Any


def loads(data: str | bytes) -> Any:
    """Parse JSON strictly; every refusal is a ValueError saying what was wrong."""
    try:
        return json.loads(data, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
