"""The root of the `kraft-acl` command tree: one place for the error line, the argument limits and plain help.

`KraftGroup` is stateless apart from the help it sets on the command tree once per invocation; each
invocation is its own process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # typer >= 0.29 vendors click
from typer.core import TyperArgument, TyperGroup, TyperOption

from kraftacl.api.targets import TargetError
from kraftacl.authorizer.inputs.validate import InputError, check_string
from kraftacl.cli.errors import EXIT_FAILED, EXIT_INPUT, error_line

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
        except NoArgsIsHelpError as exc:  # `kraft-acl` or `kraft-acl log` alone: a usage error like any other
            error_line(missing_command(exc.ctx))
            return EXIT_INPUT
        except UsageError as exc:
            where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            error_line(exc.format_message().replace("Value error, ", "") + where)
            return EXIT_INPUT
        except (InputError, TargetError) as exc:
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


def missing_command(ctx: Any) -> str:
    """The line for a group given no command: its commands, and where its help is."""
    if ctx is None:
        return f"missing command (see '{PROG} --help')"
    names = ", ".join(getattr(ctx.command, "commands", {}))
    return f"missing command: give one of {names} (see '{ctx.command_path} --help')"


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


#: where a command's docstring starts its examples (a `\b` line keeps their lines as written)
EXAMPLES = "\b\nExample"


def plain_help(command: Any) -> None:
    """Plain click help for `command` and every command below it, and a metavar on each option that takes a
    value (its name in capitals where the command gave none), so help never shows a Python type name. A docstring's
    closing `Example:` paragraph becomes the command's epilog, so its help ends with the examples, after the
    options."""
    command.rich_markup_mode = None
    help_text = getattr(command, "help", None)
    if help_text and not getattr(command, "epilog", None) and (at := help_text.find(EXAMPLES)) > 0:
        command.help, command.epilog = help_text[:at].rstrip(), help_text[at:]
    for param in command.params:
        if isinstance(param, TyperOption) and not param.is_flag and param.metavar is None:
            param.metavar = (param.name or "value").upper()
        if isinstance(param, TyperArgument):  # its name (metavar) is all help shows, not `<path>` after it
            param.display_type_rich = lambda ctx: None  # type: ignore[method-assign]
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub)


def print_version(value: bool) -> None:
    """The eager `--version` option's callback."""
    if value:
        try:
            typer.echo(f"{PROG} {version('kraft-acl')}")
        except PackageNotFoundError:  # run from a source tree that was never installed
            typer.echo(f"{PROG} (not installed)")
        raise typer.Exit()
