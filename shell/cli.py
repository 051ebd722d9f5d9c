"""The `kraft-acl` command line: a thin typer app whose commands each call one library function.

Stateless; every invocation is its own process.

Conventions every command follows (new commands inherit the first three from `KraftGroup` below):

* Errors. Bad input or usage prints one line, `kraft-acl: error: <what, and where: file, line, offset,
  field, option>`, on stderr and exits 2 (`shell.errors.fail(message)`, or let `KraftGroup` turn a
  click usage error such as a missing option or a bad `-o` value into that line). A command that ran
  but failed at what it was asked exits 1 (`fail(message, EXIT_FAILED)`). Never a traceback: an
  unexpected exception becomes one `kraft-acl: error: internal error: ...` line, exit 1
  (`KRAFT_ACL_DEBUG=1` shows the traceback).
* Limits. Every command-line argument is checked against Kafka's string limit (32,767 UTF-8 bytes,
  valid Unicode) before any command runs. Input objects (ACLs, requests, filters; files or HTTP
  bodies) are read with `authorizer.inputs` (`loads_strict`, `parse_acl`, `parse_request`,
  `parse_filter`, ...), whose `InputError` names the field: `fail(str(exc))`.
* Help. Plain click help (no rich boxes); every option has a help text and a `metavar` (FILE, DIR,
  N, PRINCIPAL, ...: never a Python type name; an option without one gets its name in capitals),
  and each command's docstring ends with an `Example:` paragraph (start it with a `\\b` line so the
  lines are kept).
* Output. `output: OutputOpt = Output.table` (`shell.output`): `-o/--output table|json`, `text`
  accepted as `table`; `table` is the human form (a table or the command's own text), `json` one
  JSON value per line. Tables go through `shell.output.print_table` (terminal width).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # typer >= 0.29 vendors click
from typer.core import TyperArgument, TyperGroup, TyperOption

from authorizer.inputs import InputError, check_string
from shell.acls_cmd import acls_command
from shell.bench_cmd import bench_command
from shell.errors import EXIT_FAILED, EXIT_INPUT, error_line
from shell.log_cmds import diff_command, log_app, replay_command
from shell.snapshot_cmd import snapshot_app
from shell.whatif_cmd import authorize_command

PROG = "kraft-acl"


class KraftGroup(TyperGroup):
    """The root command: checks every argument, then turns every usage error or escaped exception into one
    `kraft-acl: error: ...` line and an exit code (2 for usage, 1 otherwise)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        plain_help(self)
        code = self._run(argv, prog_name or PROG, complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(self, argv: list[str], prog_name: str, complete_var: str | None, **extra: Any) -> int:
        try:
            check_arguments(argv)
            result = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
            return result if isinstance(result, int) else 0
        except NoArgsIsHelpError as exc:  # `kraft-acl` or `kraft-acl log` alone: the help, as click shows it
            exc.show()
            return exc.exit_code
        except UsageError as exc:
            where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            error_line(exc.format_message().replace("Value error, ", "") + where)
            return EXIT_INPUT
        except InputError as exc:
            error_line(str(exc))
            return EXIT_INPUT
        except ClickException as exc:
            error_line(exc.format_message())
            return exc.exit_code
        except typer.Abort:
            error_line("aborted")
            return EXIT_FAILED
        except Exception as exc:
            if os.environ.get("KRAFT_ACL_DEBUG", "") not in ("", "0"):
                raise
            error_line(f"internal error: {type(exc).__name__}: {exc} (KRAFT_ACL_DEBUG=1 shows the traceback)")
            return EXIT_FAILED


def check_arguments(argv: Sequence[str]) -> None:
    """Every argument must be a string Kafka can carry (valid Unicode, at most 32,767 UTF-8 bytes)."""
    for number, arg in enumerate(argv):
        option, eq, value = arg.partition("=")
        if arg.startswith("--") and eq:
            where = f"the value of {option}"
        elif number and argv[number - 1].startswith("-"):
            where, value = f"the value of {argv[number - 1]}", arg
        else:
            where, value = f"argument {number + 1}", arg
        try:
            check_string(value)
        except InputError as exc:
            raise InputError(f"{where}: {exc.reason}") from None


def plain_help(command: Any) -> None:
    """Plain click help for `command` and every command below it, and a metavar on each option that takes a
    value (its name in capitals where the command gave none), so help never shows a Python type name."""
    command.rich_markup_mode = None
    for param in command.params:
        if isinstance(param, TyperOption) and not param.is_flag and param.metavar is None:
            param.metavar = (param.name or "value").upper()
        if isinstance(param, TyperArgument):  # its name (metavar) is all help shows, not `<path>` after it
            param.display_type_rich = lambda ctx: None  # type: ignore[method-assign]
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)


app = typer.Typer(
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


def _version(value: bool) -> None:
    if value:
        try:
            typer.echo(f"{PROG} {version('kraft-acl')}")
        except PackageNotFoundError:  # run from a source tree that was never installed
            typer.echo(f"{PROG} (not installed)")
        raise typer.Exit()


@app.callback()
def _root(
    _: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
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
