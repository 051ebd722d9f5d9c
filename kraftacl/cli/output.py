"""The one output option every command takes (`-o/--output table|json`, `text` meaning `table`) and the
printing of tables at the width of the terminal.

Stateless helpers; each call builds its own rich Console.
"""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table


class Output(StrEnum):
    """Output formats: `table` for people (a table, or the command's own text form) and `json` for programs.

    `text` is another name of `table` (`Output.text is Output.table`), on the command line and in code.
    """

    table = "table"
    json = "json"
    text = "table"  # an alias, not a third format

    @property
    def is_json(self) -> bool:
        """True for json."""
        return self is Output.json


OUTPUT_HELP = "table (for people; text is the same) or json (for programs)"
_NAMES = {"table": Output.table, "text": Output.table, "json": Output.json}


def parse_output(value: str | Output) -> Output:
    """The -o value, in any case; anything else is a usage error naming the choices."""
    if isinstance(value, Output):
        return value
    parsed = _NAMES.get(value.lower())
    if parsed is None:
        raise typer.BadParameter(f"{value!r} is not one of table, json (text is the same as table)")
    return parsed


def output_option(help_text: str = OUTPUT_HELP) -> Any:
    """The `-o/--output` option; pass a help text only to say what the json form holds."""
    return typer.Option(
        "--output",
        "-o",
        metavar="table|json",
        parser=parse_output,
        autocompletion=lambda: list(_NAMES),
        help=help_text,
    )


# `output: OutputOpt = Output.table` in a command's signature.
OutputOpt = Annotated[Output, output_option()]


def print_table(table: Table) -> None:
    """Print `table` at the terminal's width, folding long cells rather than cutting them short; into a
    pipe or a file (no terminal, no COLUMNS), at the table's natural width, so that no line is folded
    for the program reading it."""
    for column in table.columns:
        if column.overflow == "ellipsis":  # rich's default would drop the end of a name or an id
            column.overflow = "fold"
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        natural = Measurement.get(console, console.options.update_width(1 << 16), table).maximum
        console = Console(width=max(natural, 20))
    console.print(table)
