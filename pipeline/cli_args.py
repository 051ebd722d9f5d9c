"""The driver's command line (argparse: the jobs run where typer is not installed, e.g. a cluster's driver). It
imports nothing of Spark, so that `--help` and bad options answer where the spark extra is not installed.

`Args` is an immutable value parsed once per process.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from kraftacl.metadata_log.backends.kafka_topic.message import DEFAULT_TOPIC
from kraftacl.pipeline.errors import PipelineError
from kraftacl.pipeline.inputs import check_principal, parse_settings, parse_time
from kraftacl.pipeline.sources.source import LogSource

STATE_AT = "the state at offset N: every record below N applied (N between two batches; default: the high-water mark)"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"kraft-acl: error: {self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def _common(sub: argparse.ArgumentParser) -> None:
    log = sub.add_argument_group("the log (exactly one of)")
    log.add_argument(
        "--log-dir",
        type=Path,
        help="the embedded file log's directory, or Apache Kafka's metadata.log.dir (or __cluster_metadata-0): "
        "offsets are then Kafka's",
    )
    log.add_argument(
        "--bootstrap-server", metavar="HOST:PORT", help="a Kafka-backed log, read with Spark's Kafka source"
    )
    log.add_argument("--metadata-topic", default=DEFAULT_TOPIC, help=f"its topic (default {DEFAULT_TOPIC})")
    log.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka consumer setting (e.g. security.protocol=SASL_SSL); repeatable",
    )
    spark = sub.add_argument_group("Spark")
    spark.add_argument("--master", help="Spark master URL (default local[*]; under spark-submit, its --master)")
    spark.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting; repeatable")
    spark.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Spark's progress bar on stderr (default: when stderr is a terminal)",
    )
    sub.add_argument(
        "-o",
        "--output",
        type=str.lower,
        choices=("table", "text", "json"),
        default="table",
        help="table (the job's result as text, for people; text is the same) or json (one object)",
    )


def _state(sub: argparse.ArgumentParser, required: bool = False) -> None:
    at = sub.add_mutually_exclusive_group(required=required)
    at.add_argument("--to-offset", type=int, metavar="N", help=STATE_AT)
    at.add_argument(
        "--at-time",
        metavar="TIME",
        help="the state after the last batch written at or before TIME (ISO-8601 or epoch ms)",
    )


def _example(command: str) -> dict[str, Any]:
    """A job's help ends with an example, its lines kept as written."""
    return {"epilog": f"Example:\n  {command}", "formatter_class": argparse.RawDescriptionHelpFormatter}


def parser() -> argparse.ArgumentParser:
    """`JOB [options]` for the four jobs."""
    top = _Parser(prog="kraft-acl audit", description="Spark jobs over the metadata log (local[*] by default).")
    jobs = top.add_subparsers(dest="job", required=True, parser_class=_Parser)
    fold = jobs.add_parser(
        "fold",
        help="the ACL state at an offset or time, as a snapshot file",
        **_example("kraft-acl audit fold --log-dir data/meta --to-offset 1200 --out state-1200.checkpoint"),
    )
    _state(fold)
    fold.add_argument("--out", required=True, type=Path, metavar="FILE.checkpoint", help="the snapshot file to write")
    perms = jobs.add_parser(
        "permissions",
        help="who can do what on which resource",
        **_example("kraft-acl audit permissions --log-dir data/meta --config server.properties --out report/"),
    )
    _state(perms)
    perms.add_argument(
        "--resources",
        type=Path,
        metavar="FILE",
        help="CSV (resource_type,resource_name) or Parquet; default: every literal name in the ACLs",
    )
    perms.add_argument(
        "--principals", type=Path, metavar="FILE", help="one principal per line, added to those the ACLs name"
    )
    perms.add_argument("--principal", action="append", default=[], help="a principal to add; repeatable")
    perms.add_argument(
        "--config", type=Path, metavar="server.properties", help="super.users and allow.everyone.if.no.acl.found"
    )
    perms.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="permissions.csv, permissions.parquet, resources.csv, principal_summary.csv, resource_summary.csv",
    )
    changes = jobs.add_parser(
        "changes",
        help="ACLs added and removed between two offsets or times",
        **_example(
            "kraft-acl audit changes --log-dir data/meta --from-time 2026-11-01T00:00Z --to-time 2026-11-25T00:00Z"
        ),
    )
    start = changes.add_mutually_exclusive_group(required=True)
    start.add_argument("--from-offset", type=int, metavar="A")
    start.add_argument("--from-time", metavar="TIME")
    end = changes.add_mutually_exclusive_group()
    end.add_argument("--to-offset", type=int, metavar="B", help="default: the high-water mark")
    end.add_argument("--to-time", metavar="TIME")
    changes.add_argument("--out", metavar="DIR", help="write changes.csv and changes.parquet there (else print them)")
    usage = jobs.add_parser(
        "usage",
        help="ACL hits, unused ACLs, most denied requests, ACLs broader than needed",
        **_example(
            "kraft-acl audit usage --log-dir data/meta --decision-log decisions.log --from-time 2026-11-01 --out usage/"
        ),
    )
    _state(usage)
    usage.add_argument(
        "--decision-log",
        required=True,
        type=Path,
        metavar="FILE",
        help="serve's decision log (and its rotated FILE.1, FILE.2, ...)",
    )
    usage.add_argument("--from-time", metavar="TIME", help="decisions at or after TIME")
    usage.add_argument("--until-time", metavar="TIME", help="decisions before TIME")
    usage.add_argument("--top", type=int, default=20, help="how many most-denied triples (default 20)")
    usage.add_argument(
        "--few",
        type=int,
        default=3,
        help="a prefixed or * ACL is broad when its hits fell on at most this many names (default 3)",
    )
    usage.add_argument(
        "--out", required=True, metavar="DIR", help="acl_hits.csv, unused_acls.csv, top_denied.csv, broad_acls.csv"
    )
    for sub in (fold, perms, changes, usage):
        _common(sub)
    return top


@dataclass(frozen=True)
class Args:
    """The parsed command line, checked."""

    job: str
    source: LogSource
    output: str
    master: str | None
    progress: bool
    conf: dict[str, str]
    options: argparse.Namespace = field(repr=False)

    @staticmethod
    def parse(ns: argparse.Namespace) -> Args:
        """Check what argparse cannot: one log, well-formed settings, principals and times."""
        if (ns.log_dir is None) == (ns.bootstrap_server is None):
            raise PipelineError(
                "give exactly one of --log-dir DIR (embedded log) and --bootstrap-server HOST:PORT (Kafka)"
            )
        source = LogSource(
            ns.log_dir, ns.bootstrap_server, ns.metadata_topic, parse_settings("--kafka-option", ns.kafka_option)
        )
        for principal in getattr(ns, "principal", []):
            check_principal(principal, "--principal")
        for option in ("at_time", "from_time", "to_time", "until_time"):
            if getattr(ns, option, None) is not None:
                setattr(ns, option, parse_time("--" + option.replace("_", "-"), getattr(ns, option)))
        progress = sys.stderr.isatty() if ns.progress is None else ns.progress
        output = "json" if ns.output == "json" else "table"  # text: the same as table, as in every command
        return Args(ns.job, source, output, ns.master, progress, parse_settings("--conf", ns.conf), ns)
