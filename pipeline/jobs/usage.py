"""usage: from `kraft-acl serve`'s decision log, the hits of each ACL over a period, the ACLs no decision used,
the most denied (principal, resource, operation) triples, and the prefixed or `*` ACLs whose hits all fell on a
few names (broader than what they were needed for).

Functions of DataFrames. The decision log is JSON lines, one decision per line, in `<file>` and the
rotated `<file>.1`, `<file>.2`, ... (Python's RotatingFileHandler naming); `acl_id` names the deciding ACL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kraftacl.authorizer.model.acls import WILDCARD_RESOURCE, PatternType
from kraftacl.pipeline.errors import PipelineError

DECISION_DDL = (
    "time string, ts_ms long, principal string, host string, listener string, request string, operation string, "
    "resource_type string, resource_name string, result string, rule string, acl_id string, offset long, "
    "_corrupt string"
)
REQUIRED = ("ts_ms", "principal", "operation", "resource_type", "resource_name", "result", "rule")


def decision_files(base: Path) -> list[Path]:
    """`<base>` and its rotated files `<base>.1`, `<base>.2`, ..., oldest last; an error if there are none."""
    rotated = re.compile(re.escape(base.name) + r"\.(\d+)")
    found = [base] if base.is_file() else []
    if base.parent.is_dir():
        numbered = [(int(m.group(1)), p) for p in base.parent.iterdir() if (m := rotated.fullmatch(p.name))]
        found += [p for _, p in sorted(numbered)]
    if not found:
        raise PipelineError(f"decision log {base} does not exist (nor any rotated {base.name}.N)")
    return found


def read_decisions(spark: SparkSession, files: list[Path], from_ms: int | None, to_ms: int | None) -> DataFrame:
    """The decisions of the period [from_ms, to_ms); a line that is not a decision object fails, named."""
    raw = (
        spark.read.schema(DECISION_DDL)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt")
        .json([str(f) for f in files])
        .withColumn("file", F.input_file_name())
    )
    incomplete = F.lit(False)
    for name in REQUIRED:
        incomplete = incomplete | F.col(name).isNull()
    bad = raw.filter(F.col("_corrupt").isNotNull() | incomplete).select("file", "_corrupt", *REQUIRED).first()
    if bad is not None:
        where = f"decision log {bad['file'].removeprefix('file://')}"
        if bad["_corrupt"] is not None:
            raise PipelineError(f"{where}: a line is not a JSON object: {bad['_corrupt'].strip()[:120]}")
        missing = ", ".join(name for name in REQUIRED if bad[name] is None)
        raise PipelineError(f"{where}: a decision has no {missing}")
    decisions = raw.drop("_corrupt", "file")
    if from_ms is not None:
        decisions = decisions.filter(F.col("ts_ms") >= from_ms)
    if to_ms is not None:
        decisions = decisions.filter(F.col("ts_ms") < to_ms)
    return decisions


@dataclass(frozen=True)
class Usage:
    """The four reports."""

    hits: DataFrame  # per ACL id that decided: hits, allowed, denied, principals, names, first and last ts_ms
    unused: DataFrame  # ACLs of the state that decided nothing in the period
    top_denied: DataFrame  # (principal, resource_type, resource_name, operation, denied), most denied first
    broad: DataFrame  # prefixed or `*` ACLs whose hits fell on at most `few` names, with those names


def usage(decisions: DataFrame, acls: DataFrame, top: int, few: int) -> Usage:
    """The reports of `decisions` against the ACL state `acls` (id + the ACL fields as codes)."""
    decided = decisions.filter(F.col("acl_id").isNotNull())
    hits = decided.groupBy(F.col("acl_id").alias("id")).agg(
        F.count("*").alias("hits"),
        F.sum(F.when(F.col("result") == "ALLOWED", 1).otherwise(0)).alias("allowed"),
        F.sum(F.when(F.col("result") == "DENIED", 1).otherwise(0)).alias("denied"),
        F.countDistinct("principal").alias("principals"),
        F.countDistinct("resource_name").alias("names"),
        F.array_sort(F.collect_set("resource_name")).alias("names_hit"),
        F.min("ts_ms").alias("first_ts_ms"),
        F.max("ts_ms").alias("last_ts_ms"),
    )
    described = hits.join(acls, "id", "left")
    unused = acls.join(hits.select("id"), "id", "left_anti")
    broad_pattern = (F.col("pattern_type") != int(PatternType.LITERAL)) | (F.col("resource_name") == WILDCARD_RESOURCE)
    broad = (
        described.filter(broad_pattern & (F.col("names") <= few))
        .withColumn("names_hit", F.array_join("names_hit", " "))
        .orderBy("names", F.desc("hits"), "id")
    )
    denied = decisions.filter(F.col("result") == "DENIED")
    top_denied = (
        denied.groupBy("principal", "resource_type", "resource_name", "operation")
        .agg(F.count("*").alias("denied"))
        .orderBy(F.desc("denied"), "principal", "resource_type", "resource_name", "operation")
        .limit(top)
    )
    return Usage(described.drop("names_hit").orderBy(F.desc("hits"), "id"), unused.orderBy("id"), top_denied, broad)
