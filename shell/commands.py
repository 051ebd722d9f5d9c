"""The metadata shell's commands: Kafka's (`cat cd exit find help history ls man pwd tree`, with its messages) and
kraft-acl's (`at authorize who-can`, and `history` of ACL ids), in one table sorted by name as Kafka's is.

Handlers are stateless functions of a ShellState and a parsed command line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kraftacl.shell import acl_commands
from kraftacl.shell.parse import Arg, CommandType, Parsed, help_text, man_text
from kraftacl.shell.render import columns
from kraftacl.shell.tree import Node, Printer

if TYPE_CHECKING:
    from kraftacl.shell.state import ShellState

Handler = Callable[["ShellState", Parsed], None]
WELCOME = "Welcome to the kraft-acl metadata shell."
_NUMBER = re.compile(r"-?\d+")

_TYPES = [
    CommandType(
        "at",
        "Move the whole tree to the state at an offset.",
        (Arg("offset", "?", "The offset (every record below it applied), or latest to follow the log again."),),
    ),
    CommandType(
        "authorize",
        "Decide one request as the StandardAuthorizer would, and name the rule.",
        (
            Arg("principal", "1", "The principal, Type:name (User:alice)."),
            Arg("host", "?", "The client address (default: an address no host-specific ACL names)."),
            Arg("operation", "1", "The operation (READ, Write, DescribeConfigs, ...)."),
            Arg("resource", "1", "TYPE:name (TOPIC:orders, GROUP:app, CLUSTER)."),
        ),
    ),
    CommandType(
        "cat", "Show the contents of metadata files.", (Arg("targets", "+", "The metadata files to display."),), "paths"
    ),
    CommandType(
        "cd", "Set the current working directory.", (Arg("target", "?", "The directory to change to."),), "path"
    ),
    CommandType("exit", "Exit the metadata shell."),
    CommandType(
        "find", "Search for nodes in the directory hierarchy.", (Arg("paths", "*", "The paths to start at."),), "paths"
    ),
    CommandType("help", "Display this help message."),
    CommandType(
        "history",
        "Print command history, or when ACLs were added and removed.",
        (Arg("args", "*", "numEntriesToShow, or ACL ids and paths (globs too) to show the log history of."),),
        "paths",
    ),
    CommandType("ls", "List metadata nodes.", (Arg("targets", "*", "The metadata node paths to list."),), "paths"),
    CommandType(
        "man",
        "Show the help text for a specific command.",
        (Arg("cmd", "1", "The command to get help text for."),),
        "commands",
    ),
    CommandType("pwd", "Print the current working directory."),
    CommandType(
        "tree",
        "Show the contents of metadata nodes in a tree structure.",
        (Arg("targets", "+", "The metadata nodes to display."),),
        "paths",
    ),
    CommandType(
        "who-can",
        "List every principal and host allowed or denied an operation on a resource, and by which ACLs.",
        (Arg("operation", "1", "The operation (READ, Write, ...)."), Arg("resource", "1", "TYPE:name (TOPIC:orders).")),
    ),
]
TABLE: dict[str, CommandType] = {command.name: command for command in sorted(_TYPES, key=lambda c: c.name)}


def effective(paths: list[str]) -> list[str]:
    """Kafka's `getEffectivePaths`: the non-empty paths, or `.` when there are none."""
    return [p for p in paths if p] or ["."]


def ls(shell: ShellState, parsed: Parsed) -> None:
    files: list[str] = []
    directories: list[tuple[str, Node]] = []
    for target in effective(parsed.values["targets"]):
        matches = shell.visit(target)
        if not matches:
            shell.error(f"ls: {target}: no such file or directory.")
        for match in matches:
            if match.node.is_directory:
                directories.append((match.name, match.node))
            else:
                files.append(match.name)
    width = shell.screen_width() if shell.interactive else None
    shell.record(files=files, directories={name: node.sorted_names() for name, node in directories})
    _entries(shell, "", files, width)
    need_intro = bool(files) or len(directories) > 1
    first = not files
    for name, node in directories:
        intro = ("" if first else "\n") + f"{name}:" if need_intro else ""
        first = first and not need_intro
        _entries(shell, intro, node.sorted_names(), width)


def _entries(shell: ShellState, intro: str, names: Sequence[str], width: int | None) -> None:
    """Kafka's printEntries: nothing at all (not even the intro) for an empty list."""
    if not names:
        return
    if intro:
        shell.print(intro)
    shell.print("\n".join(columns(names, width)))


def cat(shell: ShellState, parsed: Parsed) -> None:
    for target in parsed.values["targets"]:
        matches = shell.visit(target)
        if not matches:
            shell.error(f"cat: {target}: No such file or directory.")
        for match in matches:
            if match.node.is_directory:
                shell.error(f"cat: {target}: Is a directory")
            else:
                match.node.print(Printer(shell.out))


def cd(shell: ShellState, parsed: Parsed) -> None:
    target = parsed.one("target") or "/"
    matches = shell.visit(target)
    if not matches:
        shell.error(f"cd: {target}: no such directory.")
    for match in matches:
        if match.node.is_directory:
            shell.cwd = match.absolute
        else:
            shell.error(f"cd: {target}: not a directory.")


def find(shell: ShellState, parsed: Parsed) -> None:
    for path in effective(parsed.values["paths"]):
        matches = shell.visit(path)
        if not matches:
            shell.error(f"find: {path}: no such file or directory.")
        for match in matches:
            lines: list[str] = []
            _find(lines, match.absolute if shell.is_glob(path) else path, match.node)
            shell.print("\n".join(lines))
            found = shell.answer.get("paths")
            shell.record(paths=[*(found if isinstance(found, list) else []), *lines])


def _find(lines: list[str], path: str, node: Node) -> None:
    lines.append(path)
    if node.is_directory:
        for name in node.sorted_names():
            child = node.child(name)
            if child is not None:
                _find(lines, path + name if path == "/" else f"{path}/{name}", child)


def tree(shell: ShellState, parsed: Parsed) -> None:
    for target in parsed.values["targets"]:
        matches = shell.visit(target)
        if not matches:
            shell.error(f"tree: {target}: No such file or directory.")
        for match in matches:
            match.node.print(Printer(shell.out))


def history(shell: ShellState, parsed: Parsed) -> None:
    """`history [N]`: Kafka's command history (`% 5d  line`); `history ID|PATH ...`: ACL history."""
    words = parsed.values["args"]
    if len(words) > 1 or (words and not _NUMBER.fullmatch(words[0])):
        acl_commands.acl_history(shell, words)
        return
    lines = shell.history()
    show = len(lines) if not words else min(max(int(words[0]), 0), len(lines))
    for number in range(len(lines) - show, len(lines)):
        shell.print(f"{number: 5d}  {lines[number]}")


def man(shell: ShellState, parsed: Parsed) -> None:
    name = parsed.one("cmd") or ""
    command = TABLE.get(name)
    if command is None:
        shell.error(f"man: unknown command {name}. Type help to get a list of commands.")
    else:
        shell.out(man_text(command))


def handlers() -> dict[str, Handler]:
    """The handler of each command name."""

    def exit_(shell: ShellState, parsed: Parsed) -> None:
        shell.done = True

    def help_(shell: ShellState, parsed: Parsed) -> None:
        shell.out(help_text(TABLE, WELCOME))

    def pwd(shell: ShellState, parsed: Parsed) -> None:
        shell.print(shell.cwd)
        shell.record(cwd=shell.cwd)

    return {
        "at": acl_commands.at,
        "authorize": acl_commands.authorize,
        "cat": cat,
        "cd": cd,
        "exit": exit_,
        "find": find,
        "help": help_,
        "history": history,
        "ls": ls,
        "man": man,
        "pwd": pwd,
        "tree": tree,
        "who-can": acl_commands.who_can,
    }
