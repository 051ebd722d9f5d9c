"""The `kraft-acl` command line: a thin typer app whose commands each call one library function.

Stateless; every invocation is its own process.
"""

from __future__ import annotations

import typer

from shell.acls_cmd import acls_command
from shell.audit_cmd import audit_app
from shell.bench_cmd import bench_command
from shell.log_cmds import diff_command, log_app, replay_command
from shell.snapshot_cmd import snapshot_app
from shell.whatif_cmd import authorize_command

app = typer.Typer(
    name="kraft-acl",
    help="A KRaft-style, event-sourced ACL authorizer for Apache Kafka (KIP-801 StandardAuthorizer).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("authorize")(authorize_command)
app.command("bench")(bench_command)
app.command("acls")(acls_command)
app.add_typer(snapshot_app, name="snapshot")
app.add_typer(log_app, name="log")
app.command("replay")(replay_command)
app.command("diff")(diff_command)
app.add_typer(audit_app, name="audit")


@app.callback()
def _root() -> None:
    """kraft-acl: Kafka's StandardAuthorizer on an event-sourced metadata log."""


def main() -> None:
    """Console-script entry point."""
    app()
