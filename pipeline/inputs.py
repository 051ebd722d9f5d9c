"""Parsing a job's inputs: times, principal lists, resource catalogs and `KEY=VALUE` settings, each error one
line naming the file, line or value.

Pure functions (the catalog reader uses the session it is given).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kraftacl.authorizer.model.operations import SUPPORTED_OPERATIONS
from kraftacl.pipeline.errors import PipelineError

if TYPE_CHECKING:  # Spark is imported where a session reads a catalog: the driver's command line parses without it
    from pyspark.sql import DataFrame, SparkSession


def parse_time(option: str, text: str) -> int:
    """ISO-8601 (`2026-11-25T12:00:00Z`; no zone means UTC) or epoch milliseconds, as epoch milliseconds."""
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise PipelineError(f"{option} {text!r} is not an ISO-8601 time or epoch milliseconds") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def parse_settings(option: str, pairs: list[str]) -> dict[str, str]:
    """`KEY=VALUE` pairs (repeatable options) as a dict."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise PipelineError(f"{option} {pair!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


def check_principal(principal: str, where: str) -> str:
    """A request principal must be `Type:name` (spec §2)."""
    if ":" not in principal:
        raise PipelineError(f"{where}: {principal!r} is not a principal (Type:name)")
    return principal


def read_principals(path: Path) -> list[str]:
    """One principal per line; blank lines and `#` comments are skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise PipelineError(f"--principals {path}: cannot read: {exc}") from exc
    out = []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if text and not text.startswith("#"):
            out.append(check_principal(text, f"{path} line {number}"))
    return out


def read_resources(spark: SparkSession, path: Path) -> DataFrame:
    """A catalog of resource_type (name or code of a concrete type) and resource_name: CSV with a header, or Parquet."""
    from pyspark.sql import functions as F

    if not path.exists():
        raise PipelineError(f"--resources {path} does not exist")
    if path.suffix == ".parquet":
        raw = spark.read.parquet(str(path))
    else:
        raw = spark.read.option("header", True).csv(str(path))
    missing = {"resource_type", "resource_name"} - set(raw.columns)
    if missing:
        raise PipelineError(f"--resources {path}: no column {', '.join(sorted(missing))} (columns: {raw.columns})")
    types = {t.name: int(t) for t in SUPPORTED_OPERATIONS} | {str(int(t)): int(t) for t in SUPPORTED_OPERATIONS}
    code = F.create_map(*(item for k, v in types.items() for item in (F.lit(k), F.lit(v))))
    typed = raw.select(
        F.col("resource_type").cast("string").alias("given"),
        code[F.upper(F.trim(F.col("resource_type").cast("string")))].alias("resource_type"),
        F.col("resource_name").cast("string").alias("resource_name"),
    )
    bad = typed.filter(F.col("resource_type").isNull() | F.col("resource_name").isNull()).first()
    if bad is not None:
        raise PipelineError(
            f"--resources {path}: resource_type {bad['given']!r} with resource_name {bad['resource_name']!r} is not "
            f"a resource (types: {', '.join(t.name for t in SUPPORTED_OPERATIONS)})"
        )
    return typed.select("resource_type", "resource_name").distinct()
