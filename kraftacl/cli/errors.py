"""How the CLI turns library errors into one clear line on stderr and an exit code.

Stateless helpers; safe anywhere.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

EXIT_INPUT = 2  # malformed input or usage: nothing was changed
EXIT_FAILED = 1  # the command ran but something it was asked to do failed


def error_text(message: str) -> str:
    """`kraft-acl: error: <message>` as one line: whitespace runs become one space and what cannot be encoded (a
    lone surrogate from a bad file or argument) is escaped."""
    one_line = " ".join(str(message).split())
    safe = one_line.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"kraft-acl: error: {safe}"


def error_line(message: str) -> None:
    """Print the one error line (`error_text`) on stderr."""
    print(error_text(message), file=sys.stderr)


def fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    """Print the one error line (`error_line`) and exit with `code`."""
    error_line(message)
    raise typer.Exit(code)
