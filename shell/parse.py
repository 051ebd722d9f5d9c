"""The metadata shell's command table and argument parsing, with the messages and help layout Kafka's shell gets
from argparse4j (`invalid choice: ...`, `too few arguments`, `unrecognized arguments: ...`).

Immutable command descriptions and pure functions; thread-safe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HELP_COLUMN = 25  # argparse4j starts help text at this column
EXIT_ERROR = 1  # a command reported an error (a missing path, a bad offset)
EXIT_USAGE = 2  # a command line the shell does not accept


@dataclass(frozen=True, slots=True)
class Arg:
    """A positional argument: `nargs` is "1", "?", "*" or "+" (argparse's meanings)."""

    name: str
    nargs: str
    help: str

    def usage(self) -> str:
        """argparse4j's short syntax of the argument."""
        if self.nargs == "?":
            return f"[{self.name}]"
        if self.nargs == "*":
            return f"[{self.name} [{self.name} ...]]"
        if self.nargs == "+":
            return f"{self.name} [{self.name} ...]"
        return self.name


@dataclass(frozen=True, slots=True)
class CommandType:
    """One command: its name, one-line description, arguments, and what its arguments complete to."""

    name: str
    description: str
    args: tuple[Arg, ...] = ()
    completes: str = ""  # "paths" (every argument), "path" (the first only), "commands", or nothing
    notes: tuple[str, ...] = field(default=())  # extra lines `man` prints after the arguments


class ParseError(Exception):
    """A command line the table does not accept; the message is argparse4j's."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed command line: the command and each argument's words."""

    command: CommandType
    values: dict[str, list[str]]

    def one(self, name: str) -> str | None:
        """The word of a "1" or "?" argument (None when "?" got none)."""
        words = self.values.get(name, [])
        return words[0] if words else None


_NEGATIVE_NUMBER = re.compile(r"-\d+(\.\d+)?")


def parse(words: list[str], table: dict[str, CommandType]) -> Parsed | None:
    """Parse one command line (Kafka's `Commands.parseCommand`); None for an empty line."""
    while words and not words[-1]:
        words = words[:-1]  # trailing empty words are dropped, as in Kafka
    if not words:
        return None
    command = _resolve(words[0], table)
    rest = words[1:]
    if "--" in rest:
        cut = rest.index("--")
        flags, rest = (
            [w for w in rest[:cut] if _is_flag(w)],
            [w for w in rest[:cut] if not _is_flag(w)] + rest[cut + 1 :],
        )
    else:
        flags, rest = [w for w in rest if _is_flag(w)], [w for w in rest if not _is_flag(w)]
    pattern = "".join({"1": "(A)", "?": "(A?)", "*": "(A*)", "+": "(A+)"}[a.nargs] for a in command.args)
    for taken in range(len(rest), -1, -1):
        match = re.fullmatch(pattern, "A" * taken)
        if match is not None:
            break
    else:
        raise ParseError("too few arguments")
    extra = flags + rest[taken:]
    if extra:
        raise ParseError(f"unrecognized arguments: '{' '.join(extra)}'")
    values, position = {}, 0
    for arg, group in zip(command.args, match.groups(), strict=True):
        values[arg.name] = rest[position : position + len(group)]
        position += len(group)
    return Parsed(command, values)


def _is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and word != "--" and not _NEGATIVE_NUMBER.fullmatch(word)


def _resolve(word: str, table: dict[str, CommandType]) -> CommandType:
    """The command `word` names; a unique prefix is refused with Kafka's "did you mean" message."""
    if word in table:
        return table[word]
    candidates = sorted(name for name in table if name.startswith(word)) if word else []
    if len(candidates) == 1:
        raise ParseError(f"invalid choice: '{word}': did you mean '{candidates[0]}'?")
    if len(candidates) > 1:
        raise ParseError(f"ambiguous command: {word} could match {', '.join(candidates)}")
    choices = ", ".join(f"'{name}'" for name in table)
    raise ParseError(f"invalid choice: '{word}' (choose from {choices})")


def _help_line(indent: int, title: str, text: str) -> list[str]:
    head = " " * indent + title
    if not text:
        return [head]
    if len(head) + 2 > HELP_COLUMN:
        return [head, " " * HELP_COLUMN + text]
    return [head.ljust(HELP_COLUMN) + text]


def help_text(table: dict[str, CommandType], welcome: str) -> str:
    """`help`: the welcome line and argparse4j's help of the command parser."""
    names = "{" + ",".join(table) + "}"
    lines = [welcome, "", f"usage:  {names} ...", "", "positional arguments:", *_help_line(2, names, "")]
    for command in table.values():
        lines.extend(_help_line(4, command.name, command.description))
    return "\n".join(lines) + "\n"


def man_text(command: CommandType) -> str:
    """`man CMD`: `CMD: description`, a blank line, then argparse4j's help of that command."""
    usage = " ".join([f"usage: {command.name}", *(arg.usage() for arg in command.args)])
    lines = [f"{command.name}: {command.description}", "", usage]
    if command.args:
        lines += ["", "positional arguments:"]
        for arg in command.args:
            lines.extend(_help_line(2, arg.name, arg.help))
    if command.notes:
        lines += ["", *command.notes]
    return "\n".join(lines) + "\n"
