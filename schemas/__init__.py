"""Locate, load and resolve the project's Avro schemas (`*.avsc`) into self-contained JSON schemas.

Pure functions over read-only package data: safe to call from any thread. Results are fresh
dicts that the caller may mutate.

Layout: the current schemas sit next to this file (`schemas/RecordBatch.avsc`); other versions,
when kept, sit in `schemas/vN/`. A schema file names other named types by full name
(`"kraft_acl.Uuid"`); `load_schema` inlines each referenced type's file (looked up as
`<Name>.avsc` or `<namespace>.<Name>.avsc` in the same directory) at its first use, so the result
can be embedded on its own, e.g. as the writer schema in a log segment header.
"""

from __future__ import annotations

import json
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

__all__ = [
    "SchemaNotFoundError",
    "available_schemas",
    "load_schema",
    "load_schema_file",
    "parse_schema",
    "schema_dir",
]

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED_KINDS = frozenset({"record", "error", "enum", "fixed"})

SchemaDir = Traversable | Path


class SchemaNotFoundError(LookupError):
    """No `.avsc` file defines the requested schema name."""


def schema_dir(version: str | None = None) -> Traversable:
    """The directory of the built-in schemas: the current ones, or `vN/` when `version` is given."""
    root = resources.files(__name__)
    return root if version is None else root.joinpath(version)


def available_schemas(directory: SchemaDir | None = None) -> list[str]:
    """The schema names (file names without `.avsc`) in `directory` (default: the current schemas)."""
    base = schema_dir() if directory is None else directory
    return sorted(p.name[: -len(".avsc")] for p in base.iterdir() if p.name.endswith(".avsc"))


def load_schema_file(name: str, directory: SchemaDir | None = None) -> dict[str, Any]:
    """The raw JSON of one schema file, references left as names."""
    base = schema_dir() if directory is None else directory
    short = name.rsplit(".", 1)[-1]
    for candidate in (f"{name}.avsc", f"{short}.avsc"):
        path = base.joinpath(candidate)
        if path.is_file():
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise SchemaNotFoundError(f"schema file {path} is not valid JSON: {exc}") from exc
            if not isinstance(loaded, dict):
                raise SchemaNotFoundError(f"schema file {path} does not hold a JSON object")
            return loaded
    raise SchemaNotFoundError(f"no schema file for {name!r} in {base}")


def load_schema(name: str, directory: SchemaDir | None = None) -> dict[str, Any]:
    """The schema `name` with every referenced named type inlined once (a self-contained schema)."""
    base = schema_dir() if directory is None else directory
    defined: set[str] = set()
    resolved = _resolve(load_schema_file(name, base), "", base, defined)
    if not isinstance(resolved, dict):  # pragma: no cover - a file always holds an object
        raise SchemaNotFoundError(f"schema {name!r} did not resolve to an object")
    return resolved


def parse_schema(name: str, directory: SchemaDir | None = None) -> Any:
    """`load_schema` then fastavro's `parse_schema`: ready for fastavro's readers and writers."""
    import fastavro  # local: locating and loading schemas needs no third-party package

    return fastavro.parse_schema(load_schema(name, directory))


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _resolve(node: Any, namespace: str, base: SchemaDir, defined: set[str]) -> Any:
    """Walk one schema node; inline the first use of each named type defined in another file."""
    if isinstance(node, str):
        if node in PRIMITIVES:
            return node
        full = _full_name(node, namespace)
        if full in defined:
            return full
        return _resolve(load_schema_file(full, base), namespace, base, defined)
    if isinstance(node, list):
        return [_resolve(branch, namespace, base, defined) for branch in node]
    if not isinstance(node, dict):
        raise SchemaNotFoundError(f"unexpected schema node {node!r}")
    kind = node.get("type")
    out = dict(node)
    if kind in NAMED_KINDS:
        inner_ns = str(node.get("namespace", namespace))
        full = _full_name(str(node["name"]), inner_ns)
        defined.add(full)
        inner_ns = full.rsplit(".", 1)[0] if "." in full else ""
        if kind in ("record", "error"):
            fields = node["fields"]
            out["fields"] = [{**f, "type": _resolve(f["type"], inner_ns, base, defined)} for f in fields]
        return out
    if kind == "array":
        out["items"] = _resolve(node["items"], namespace, base, defined)
    elif kind == "map":
        out["values"] = _resolve(node["values"], namespace, base, defined)
    elif isinstance(kind, dict | list) or (isinstance(kind, str) and kind not in PRIMITIVES):
        return _resolve(kind, namespace, base, defined)
    return out
