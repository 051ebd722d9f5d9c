"""`kraft-acl audit fold|permissions|changes|usage`: runs the Spark jobs of `pipeline/` (local[*] by default).

Stateless. The jobs run in their own driver process, `python -m kraftacl.pipeline JOB ...`, the same program
`spark-submit` runs on a cluster: the shell and the pipeline are separate faces that do not import each
other (pyproject's import contracts), and the driver owns its JVM. Options, help and errors are the
driver's; this command passes them through and exits with its code.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import typer

audit_app = typer.Typer(
    help="Spark jobs over the metadata log: fold, permissions, changes, usage (`kraft-acl audit JOB --help`).",
    no_args_is_help=True,
)
_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


_JOBS = {
    "fold": "The ACL state at an offset or time, written as a snapshot file (`snapshot verify` accepts it).",
    "permissions": "Who can do what on which resource: decisions and deciding rules (CSV, Parquet) and summaries.",
    "changes": "The ACLs added and removed between two offsets or times, with their offsets, batches and times.",
    "usage": "From serve's decision log: hits per ACL, unused ACLs, most denied requests, ACLs broader than needed.",
}


def _job_command(job: str) -> Callable[[typer.Context], None]:
    def run(ctx: typer.Context) -> None:
        argv = [sys.executable, "-m", "kraftacl.pipeline", job, *ctx.args]
        if "--help" in ctx.args or "-h" in ctx.args:  # the driver's help, through this process's output
            shown = subprocess.run(argv, capture_output=True, text=True, check=False)
            typer.echo(shown.stdout, nl=False)
            typer.echo(shown.stderr, nl=False, err=True)
            raise typer.Exit(shown.returncode)
        raise typer.Exit(subprocess.call(argv))

    return run


for _job, _summary in _JOBS.items():
    audit_app.command(_job, help=_summary, context_settings=_PASS_THROUGH)(_job_command(_job))
