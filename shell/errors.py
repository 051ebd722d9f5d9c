"""How the CLI turns library errors into one clear line on stderr and an exit code.

Stateless helpers; safe anywhere.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

EXIT_INPUT = 2  # malformed input or usage: nothing was changed
EXIT_FAILED = 1  # the command ran but something it was asked to do failed


def fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    """Print `kraft-acl: <message>` on one line to stderr and exit."""
    one_line = " ".join(str(message).split())
    print(f"kraft-acl: error: {one_line}", file=sys.stderr)
    raise typer.Exit(code)
