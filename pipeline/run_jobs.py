"""The four jobs as the driver runs them: read the inputs, call the library functions, write the reports and
return what to print (`lines` for people, the rest for `-o json`).

Functions of a SparkSession and parsed Args; one job per process.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kraftacl.authorizer.decision.config import AuthorizerConfig, load_config
from kraftacl.pipeline.cli_args import Args
from kraftacl.pipeline.errors import PipelineError
from kraftacl.pipeline.inputs import read_principals, read_resources
from kraftacl.pipeline.jobs.changes import changes
from kraftacl.pipeline.jobs.fold import fold, state_at
from kraftacl.pipeline.jobs.names import with_names
from kraftacl.pipeline.jobs.permissions import (
    default_principals,
    default_resources,
    principal_summary,
    report,
    resource_summary,
)
from kraftacl.pipeline.jobs.usage import decision_files, read_decisions, usage
from kraftacl.pipeline.output import prepare, write_csv, write_parquet
from kraftacl.pipeline.sources.log import load_events
from kraftacl.pipeline.sources.log_events import LogEvents

Job = Callable[[SparkSession, Args], dict[str, Any]]


def say(args: Args, message: str) -> None:
    """One line of the job's progress on stderr (with --progress, the default when stderr is a terminal)."""
    if args.progress:
        print(f"kraft-acl audit {args.job}: {message}", file=sys.stderr, flush=True)


def _load(spark: SparkSession, args: Args) -> LogEvents:
    say(args, f"reading the log ({args.source.describe()})")
    log = load_events(spark, args.source)
    say(args, f"{log.high_watermark - log.log_start} records, offsets {log.log_start}..{log.high_watermark - 1}")
    return log


def _offset(log: LogEvents, offset: int | None, at_time: int | None) -> int:
    """The offset an option pair names: an offset, the state at a time, or the high-water mark."""
    if at_time is not None:
        return log.offset_at_time(at_time)
    return log.high_watermark if offset is None else offset


def _iso(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, UTC).isoformat(timespec="milliseconds")


def fold_job(spark: SparkSession, args: Args) -> dict[str, Any]:
    """fold: the state at an offset or time, written as a snapshot file."""
    o = args.options
    log = _load(spark, args)
    offset = _offset(log, o.to_offset, o.at_time)
    say(args, f"folding to offset {offset}")
    result = fold(log, offset, o.out)
    h = result.header
    return {
        "snapshot": str(result.path),
        "end_offset": h.end_offset,
        "epoch": h.epoch,
        "timestamp_ms": h.timestamp_ms,
        "acls": result.acls,
        "lines": [
            f"State at offset {h.end_offset}: {result.acls} ACL(s) "
            f"(last batch: epoch {h.epoch}, {_iso(h.timestamp_ms)})",
            f"Wrote {result.path}",
        ],
    }


def _config(args: Args) -> AuthorizerConfig:
    path: Path | None = args.options.config
    return load_config(path) if path is not None else AuthorizerConfig()


def permissions_job(spark: SparkSession, args: Args) -> dict[str, Any]:
    """permissions: the report over a resource catalog and a principal list, plus the two summaries."""
    o = args.options
    config = _config(args)
    log = _load(spark, args)
    offset = _offset(log, o.to_offset, o.at_time)
    acls = state_at(log, offset).cache()
    resources = read_resources(spark, o.resources) if o.resources is not None else default_resources(acls)
    named = [*(read_principals(o.principals) if o.principals is not None else []), *o.principal]
    principals = default_principals(acls, named)
    say(args, f"deciding for {len(principals)} principal(s) at offset {offset}")
    prepare(o.out)
    built = report(spark, acls, resources.cache(), principals, config)
    rows = built.rows.orderBy("principal", "resource_type", "resource_name", "operation", "host").cache()
    written = [write_parquet(rows, o.out, "permissions"), write_csv(rows, o.out, "permissions")]
    written.append(write_csv(built.resources.orderBy("resource_type", "resource_name"), o.out, "resources"))
    written.append(write_csv(principal_summary(rows), o.out, "principal_summary"))
    written.append(write_csv(resource_summary(rows), o.out, "resource_summary"))
    counts = rows.groupBy("result").count().collect()
    by_result = {r["result"]: int(r["count"]) for r in counts}
    catalog = built.resources.count()
    return {
        "offset": offset,
        "principals": len(principals),
        "resources": catalog,
        "rows": sum(by_result.values()),
        "allowed": by_result.get("ALLOWED", 0),
        "denied": by_result.get("DENIED", 0),
        "files": written,
        "lines": [
            f"State at offset {offset}: {len(principals)} principal(s) x {catalog} resource(s)",
            f"{sum(by_result.values())} decision row(s): {by_result.get('ALLOWED', 0)} ALLOWED, "
            f"{by_result.get('DENIED', 0)} DENIED (every other principal/resource/operation: the default, "
            "see resources.csv)",
            *(f"Wrote {path}" for path in written),
        ],
    }


def changes_job(spark: SparkSession, args: Args) -> dict[str, Any]:
    """changes: ACLs added and removed between two offsets or times."""
    o = args.options
    log = _load(spark, args)
    start = _offset(log, o.from_offset, o.from_time)
    end = _offset(log, o.to_offset, o.to_time)
    if start > end:
        raise PipelineError(f"the earlier state (offset {start}) is after the later one (offset {end})")
    log.check_offset("--from-offset", start)
    log.check_offset("--to-offset", end)
    view = log.for_states(start, end)
    rows = with_names(changes(view.events, view.cut(start), view.cut(end))).orderBy("offset", "change", "id").cache()
    listed = rows.collect() if o.out is None else []
    written = []
    if o.out is not None:
        prepare(o.out)
        written = [write_parquet(rows, o.out, "changes"), write_csv(rows, o.out, "changes")]
    added = rows.filter(F.col("change") == "added").count()
    removed = rows.filter(F.col("change") == "removed").count()
    lines = [f"Offsets {start} -> {end}: {added} added, {removed} removed"]
    lines += [_change_line(r.asDict()) for r in listed]
    lines += [f"Wrote {path}" for path in written]
    return {
        "from_offset": start,
        "to_offset": end,
        "added": added,
        "removed": removed,
        "files": written,
        "changes": [r.asDict() for r in listed],
        "lines": lines,
    }


def _change_line(r: dict[str, Any]) -> str:
    sign = "+" if r["change"] == "added" else "-"
    return (
        f"{sign} {r['id']} at offset {r['offset']} (batch {r['batch']}, epoch {r['epoch']}, {_iso(r['ts'])}) "
        f"{r['resource_type']}:{r['pattern_type']}:{r['resource_name']} {r['principal']} from {r['host']} "
        f"{r['permission_type']} {r['operation']}"
    )


def usage_job(spark: SparkSession, args: Args) -> dict[str, Any]:
    """usage: ACL hits from the decision log, unused ACLs, the most denied triples and broader-than-needed ACLs."""
    o = args.options
    files = decision_files(o.decision_log)
    log = _load(spark, args)
    offset = _offset(log, o.to_offset, o.at_time)
    acls = state_at(log, offset).drop("offset")
    say(args, f"reading {len(files)} decision log file(s)")
    decisions = read_decisions(spark, files, o.from_time, o.until_time).cache()
    found = usage(decisions, acls, o.top, o.few)
    prepare(o.out)
    reports: dict[str, DataFrame] = {
        "acl_hits": found.hits,
        "unused_acls": found.unused,
        "top_denied": found.top_denied,
        "broad_acls": found.broad,
    }
    written = [write_csv(with_names(df), o.out, name) for name, df in reports.items()]
    counts = {name: df.count() for name, df in reports.items()}
    total = decisions.count()
    return {
        "offset": offset,
        "decisions": total,
        **counts,
        "files": written,
        "lines": [
            f"{total} decision(s) in {len(files)} file(s); ACL state at offset {offset}",
            f"{counts['acl_hits']} ACL(s) decided something, {counts['unused_acls']} ACL(s) never used, "
            f"{counts['broad_acls']} broader than their hits",
            *(f"Wrote {path}" for path in written),
        ],
    }


JOBS: dict[str, Job] = {"fold": fold_job, "permissions": permissions_job, "changes": changes_job, "usage": usage_job}
