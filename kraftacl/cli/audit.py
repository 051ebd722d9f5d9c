"""`kraft-acl audit fold|permissions|changes|usage`: runs the Spark jobs of `pipeline/` (local[*] by default).

Stateless. The jobs run in their own driver process, `python -m kraftacl.pipeline JOB ...`, the same program
`spark-submit` runs on a cluster: the shell and the pipeline are separate faces that do not import each
other (pyproject's import contracts), and the driver owns its JVM. Options, help and errors are the
driver's; this command passes them through and exits with its code. An install without the `spark` extra
gets one line saying how to add it (exit 2) before anything starts; the JVM's one start-up warning about
incubator modules is left out of stderr, everything else (the job's progress, Spark's progress bar) passes.
"""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
from collections.abc import Callable
from typing import BinaryIO, cast

import typer

from kraftacl.cli.errors import fail

audit_app = typer.Typer(
    help="Spark jobs over the metadata log: fold, permissions, changes, usage (`kraft-acl audit JOB --help`).",
    no_args_is_help=True,
)
_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
#: The JVM prints it for the --add-modules Spark's launcher always passes; it says nothing about the job.
JVM_NOISE = b"WARNING: Using incubator modules: jdk.incubator.vector\n"
SPARK_MODULES = ("pyspark", "py4j", "pyarrow", "pandas")


_JOBS = {
    "fold": "The ACL state at an offset or time, written as a snapshot file (`snapshot verify` accepts it).",
    "permissions": "Who can do what on which resource: decisions and deciding rules (CSV, Parquet) and summaries.",
    "changes": "The ACLs added and removed between two offsets or times, with their offsets, batches and times.",
    "usage": "From serve's decision log: hits per ACL, unused ACLs, most denied requests, ACLs broader than needed.",
}


def missing_spark() -> list[str]:
    """The modules of the `spark` extra this Python cannot import (none when it is installed)."""
    missing = []
    for name in SPARK_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def _forward(stream: io.BufferedReader, out: BinaryIO) -> None:
    """Copy the driver's stderr as it comes (progress bars redraw with \\r), without the JVM's start-up warning
    (once, wherever it comes: before or after the job's first progress line)."""
    pending, dropped = b"", False
    while chunk := stream.read1(65536):
        data = pending + chunk
        if not dropped and (at := data.find(JVM_NOISE)) >= 0:
            data, dropped = data[:at] + data[at + len(JVM_NOISE) :], True
        pending = b"" if dropped else _partial_noise(data)
        out.write(data[: len(data) - len(pending)])
        out.flush()
    out.write(pending)
    out.flush()


def _partial_noise(data: bytes) -> bytes:
    """The longest end of `data` that the warning could start with (held back until the next chunk shows)."""
    for size in range(min(len(data), len(JVM_NOISE) - 1), 0, -1):
        if JVM_NOISE.startswith(data[-size:]):
            return data[-size:]
    return b""


def _job_command(job: str) -> Callable[[typer.Context], None]:
    def run(ctx: typer.Context) -> None:
        argv = [sys.executable, "-m", "kraftacl.pipeline", job, *ctx.args]
        if "--help" in ctx.args or "-h" in ctx.args:  # the driver's help, through this process's output
            shown = subprocess.run(argv, capture_output=True, text=True, check=False)
            typer.echo(shown.stdout, nl=False)
            typer.echo(shown.stderr, nl=False, err=True)
            raise typer.Exit(shown.returncode)
        missing = missing_spark()
        if missing:
            fail(
                f"kraft-acl audit runs on Spark, and this install lacks the spark extra ({', '.join(missing)}): "
                "install it with `pip install -e '.[spark]'` in the checkout (or `make setup`); the jobs also need "
                "Java 17"
            )
        with subprocess.Popen(argv, stderr=subprocess.PIPE) as driver:
            _forward(cast(io.BufferedReader, driver.stderr), sys.stderr.buffer)
        raise typer.Exit(driver.returncode)

    return run


for _job, _summary in _JOBS.items():
    audit_app.command(_job, help=_summary, context_settings=_PASS_THROUGH)(_job_command(_job))
