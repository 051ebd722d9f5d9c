"""`kraft-acl log`: the command group that looks inside a metadata log directory (`dump`, `check`, `recover`).

Stateless; built once per process.
"""

from __future__ import annotations

import typer

from kraftacl.cli.log_check import check_command, recover_command
from kraftacl.cli.log_dump import dump_command

log_app = typer.Typer(help="Look inside a metadata log directory.", no_args_is_help=True)
log_app.command("dump")(dump_command)
log_app.command("check")(check_command)
log_app.command("recover")(recover_command)
