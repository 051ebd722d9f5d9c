"""`kraft-acl audit fold|permissions|changes|usage`: runs the Spark jobs of `pipeline/` (local[*] by default).

Stateless. The jobs run in their own driver process, `python -m pipeline JOB ...`, the same program
`spark-submit` runs on a cluster: the shell and the pipeline are separate faces that do not import each
other (pyproject's import contracts), and the driver owns its JVM. Options, help and errors are the
driver's; this command passes them through and exits with its code.
"""

from __future__ import annotations

import subprocess
import sys

import typer

audit_app = typer.Typer(
    help="Spark jobs over the metadata log: fold, permissions, changes, usage (`kraft-acl audit JOB --help`).",
    no_args_is_help=True,
)
_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _run(job: str, ctx: typer.Context) -> None:
    code = subprocess.call([sys.executable, "-m", "pipeline", job, *ctx.args])
    raise typer.Exit(code)


@audit_app.command("fold", context_settings=_PASS_THROUGH)
def fold_command(ctx: typer.Context) -> None:
    """The ACL state at an offset or time, written as a snapshot file (`snapshot verify` accepts it)."""
    _run("fold", ctx)


@audit_app.command("permissions", context_settings=_PASS_THROUGH)
def permissions_command(ctx: typer.Context) -> None:
    """Who can do what on which resource: decisions and deciding rules, as CSV and Parquet, with summaries."""
    _run("permissions", ctx)


@audit_app.command("changes", context_settings=_PASS_THROUGH)
def changes_command(ctx: typer.Context) -> None:
    """The ACLs added and removed between two offsets or times, with their offsets, batches and times."""
    _run("changes", ctx)


@audit_app.command("usage", context_settings=_PASS_THROUGH)
def usage_command(ctx: typer.Context) -> None:
    """From serve's decision log: hits per ACL, unused ACLs, most denied requests, ACLs broader than needed."""
    _run("usage", ctx)
