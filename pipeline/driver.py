"""The jobs' driver program: `python -m kraftacl.pipeline JOB ...` (what `kraft-acl audit JOB` runs, in local mode by
default) or `spark-submit [--master URL] pipeline/driver.py JOB ...` on a cluster.

One job per process: it builds the session, runs, prints, stops the session. Bad input or a log that
breaks an invariant ends with one line `kraft-acl: error: ...` on stderr and exit code 2. The command line is parsed
before anything of Spark is imported: `--help` and bad options answer where the spark extra is not installed, and a
job asked of such an install is one line (exit 2).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.metadata_log.errors import LogError
from kraftacl.pipeline.cli_args import Args, parser
from kraftacl.pipeline.errors import PipelineError
from kraftacl.snapshots.errors import SnapshotError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXIT_INPUT = 2
EXIT_FAILED = 1
INPUT_ERRORS = (PipelineError, LogError, SnapshotError, AuthorizerError, OSError)


def fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    """One line on stderr, then exit."""
    print(f"kraft-acl: error: {' '.join(str(message).split())}", file=sys.stderr)
    raise SystemExit(code)


def _spark_message(exc: BaseException) -> str:
    """The first meaningful line of a Spark or JVM error (no JVM stack trace)."""
    text = str(getattr(exc, "java_exception", None) or exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


@contextmanager
def _session(args: Args) -> Iterator[SparkSession]:
    from kraftacl.pipeline.run_jobs import say
    from kraftacl.pipeline.session import build_session

    say(args, f"starting Spark ({args.master or 'local[*]'} unless spark-submit says otherwise)")
    spark = build_session(
        f"kraft-acl audit {args.job}",
        args.master,
        kafka=args.source.bootstrap is not None,
        progress=args.progress,
        conf=args.conf,
    )
    say(args, f"Spark {spark.version} is up (master {spark.sparkContext.master})")
    try:
        yield spark
    finally:
        spark.stop()
        say(args, "Spark stopped")


def run(argv: list[str]) -> dict[str, Any]:
    """Parse, run one job, print its result; returns the result object (what `-o json` prints)."""
    return run_args(Args.parse(parser().parse_args(argv)))


def run_args(args: Args) -> dict[str, Any]:
    """Run one parsed job and print its result."""
    from kraftacl.pipeline.run_jobs import JOBS

    job: Callable[[SparkSession, Args], dict[str, Any]] = JOBS[args.job]
    with _session(args) as spark:
        result = job(spark, args)
    if args.output == "json":
        print(json.dumps(result))
    else:
        for line in result.get("lines", []):
            print(line)
    return result


def main(argv: list[str] | None = None) -> None:
    """Console entry: parse (help and bad options need no Spark), then run, turning every known failure into one line
    and an exit code."""
    try:
        args = Args.parse(parser().parse_args(sys.argv[1:] if argv is None else argv))
    except INPUT_ERRORS as exc:
        fail(str(exc))
    try:
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException

        import kraftacl.pipeline.run_jobs  # noqa: F401  (pyarrow and pandas too)
    except ImportError as exc:
        fail(
            f"kraft-acl audit runs on Spark, and this Python cannot import {exc.name}: install the spark extra "
            "(`pip install -e '.[spark]'` in the checkout, or `make setup`)"
        )
    try:
        run_args(args)
    except INPUT_ERRORS as exc:
        fail(str(exc))
    except (PySparkException, Py4JError) as exc:
        fail(f"Spark: {_spark_message(exc)}", EXIT_FAILED)
    except KeyboardInterrupt:
        fail("interrupted", EXIT_FAILED)


if __name__ == "__main__":
    main()
