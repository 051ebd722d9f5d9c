"""The `kraft-acl` command line: a thin typer app whose commands each call one library function.

Stateless; every invocation is its own process.

Conventions every command follows (new commands inherit the first three from `cli.root.KraftGroup`):

* Errors. Bad input or usage prints one line, `kraft-acl: error: <what, and where: file, line, offset,
  field, option>`, on stderr and exits 2 (`cli.errors.fail(message)`, or let `KraftGroup` turn a
  click usage error such as a missing option or a bad `-o` value into that line). A command that ran
  but failed at what it was asked exits 1 (`fail(message, EXIT_FAILED)`). Never a traceback: an
  unexpected exception becomes one `kraft-acl: error: internal error: ...` line, exit 1
  (`KRAFT_ACL_DEBUG=1` shows the traceback).
* Limits. Every command-line argument is checked against Kafka's string limit (32,767 UTF-8 bytes,
  valid Unicode) before any command runs. Input objects (ACLs, requests, filters; files or HTTP
  bodies) are read with `authorizer.inputs.validate` (`loads_strict`, `parse_acl`, `parse_request`,
  `parse_filter`, ...), whose `InputError` names the field: `fail(str(exc))`.
* Help. Plain click help (no rich boxes); every option has a help text and a `metavar` (FILE, DIR,
  N, PRINCIPAL, ...: never a Python type name; an option without one gets its name in capitals),
  and each command's docstring ends with an `Example:` paragraph (start it with a `\\b` line so the
  lines are kept): `cli.root.plain_help` makes it the epilog, so help ends with it, after the options.
* Output. `output: OutputOpt = Output.table` (`cli.output`): `-o/--output table|json`, `text`
  accepted as `table`; `table` is the human form (a table or the command's own text), `json` one
  JSON value per line. Tables go through `cli.output.print_table` (terminal width).
"""

from __future__ import annotations

from typing import Annotated

import typer
from typer_injector import InjectingTyper

from kraftacl.cli.acls import acls_command
from kraftacl.cli.audit import audit_app
from kraftacl.cli.authorize import authorize_command
from kraftacl.cli.bench import bench_command
from kraftacl.cli.import_export import export_command, import_command
from kraftacl.cli.log import log_app
from kraftacl.cli.replay import diff_command, replay_command
from kraftacl.cli.root import PROG, KraftGroup, print_version
from kraftacl.cli.serve import serve_command
from kraftacl.cli.shell import CONTEXT, shell_command
from kraftacl.cli.snapshot import snapshot_app

app = InjectingTyper(  # the commands' shared parameter sets (cli.options.Server) are typer-injector dependencies
    name=PROG,
    cls=KraftGroup,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
app.command("authorize")(authorize_command)
app.command("bench")(bench_command)
app.command("acls")(acls_command)
app.add_typer(snapshot_app, name="snapshot")
app.add_typer(log_app, name="log")
app.command("replay")(replay_command)
app.command("diff")(diff_command)
app.command("import")(import_command)
app.command("export")(export_command)
app.command("shell", context_settings=CONTEXT)(shell_command)
app.command("serve")(serve_command)
app.add_typer(audit_app, name="audit")


@app.callback()
def _root(
    _: Annotated[
        bool, typer.Option("--version", callback=print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Kafka's KRaft StandardAuthorizer (KIP-801) on an event-sourced metadata log: what-if decisions,
    kafka-acls on the log, and tools to look into the log and its snapshots. Shell completion:
    `kraft-acl --install-completion` (bash, zsh, fish, PowerShell).

    \b
    Example:
      kraft-acl acls --log-dir data/meta --add --allow-principal User:alice --operation Read --topic orders
      kraft-acl authorize --acls acls.json --principal User:alice --host 10.0.0.1 --operation Read --topic orders
    """


def main() -> None:
    """Console-script entry point."""
    app(prog_name=PROG)
