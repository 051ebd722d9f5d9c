"""The interactive metadata shell on prompt_toolkit: a prompt showing the offset (redrawn as a live source moves
on), history kept across sessions in a file, tab completion of commands and paths, Ctrl-C cancels
the line (or the running command), Ctrl-D leaves; output taller than the screen goes to a pager.

Runs on the caller's thread; the completer reads the same immutable Views the commands read.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import termios
import threading
from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.shortcuts import CompleteStyle

from kraftacl.shell.commands import TABLE
from kraftacl.shell.parse import EXIT_USAGE
from kraftacl.shell.paths import absolute
from kraftacl.shell.session import Shell
from kraftacl.shell.sources.base import AclSource
from kraftacl.shell.tree import root

MAX_LISTED = 1000  # more candidates than this: complete their common prefix only, list none
REFRESH_S = 0.5  # how often a live prompt checks whether the offset it shows has moved


class ShellCompleter(Completer):
    """Kafka's completion: command names first, then paths (a directory gets a trailing `/`), or command names
    after `man`."""

    def __init__(self, shell: Shell) -> None:
        self.shell = shell

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        words = text.split()
        if not words or text[-1].isspace():
            words.append("")
        if len(words) == 1:
            yield from _commands(words[0])
            return
        command = TABLE.get(words[0])
        if command is None:
            return
        if command.completes == "commands" and len(words) == 2:
            yield from _commands(words[1])
        elif command.completes == "paths" or (command.completes == "path" and len(words) == 2):
            yield from complete_path(self.shell, words[-1])


def _commands(prefix: str) -> Iterator[Completion]:
    for name in TABLE:
        if name.startswith(prefix):
            yield Completion(name, -len(prefix))


def complete_path(shell: Shell, prefix: str) -> Iterator[Completion]:
    """The children of the directory `prefix` points into whose names start with its last component."""
    components = absolute(prefix, shell.cwd)
    in_directory = prefix == "" or prefix.endswith("/")
    depth = len(components) if in_directory else len(components) - 1
    node = root(shell.source.view(), shell.source.status)
    for component in components[: max(depth, 0)]:
        child = node.child(component) if node.is_directory else None
        if child is None or not child.is_directory:
            return
        node = child
    last = components[depth] if 0 <= depth < len(components) else ""
    names = node.sorted_names()
    start, end = bisect_left(names, last), bisect_left(names, last + "\U0010ffff")
    head = prefix[: prefix.rfind("/") + 1]
    if end - start > MAX_LISTED:
        common = _common_prefix(names[start], names[end - 1])  # sorted: the first and last bound the rest
        if len(common) > len(last):
            yield Completion(head + common, -len(prefix))
        return
    for name in names[start:end]:
        child = node.child(name)
        slash = "/" if child is not None and child.is_directory else ""
        yield Completion(head + name + slash, -len(prefix), display=name + slash)


def _common_prefix(first: str, last: str) -> str:
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    return first[:size]


def history_store(path: Path | None) -> History:
    """A history file kept across sessions; in memory only when no file is given or it cannot be written."""
    if path is None:
        return InMemoryHistory()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        print(f"kraft-acl: warning: history is not kept across sessions: {exc}", file=sys.stderr)
        return InMemoryHistory()
    return FileHistory(str(path))


def run_interactive(source: AclSource, history: History) -> None:
    """Prompt, run, print, until `exit` or Ctrl-D."""
    buffer: list[str] = []
    shell = Shell(
        source,
        buffer.append,
        buffer.append,
        interactive=True,
        screen_width=lambda: shutil.get_terminal_size().columns,
        history=lambda: list(history.load_history_strings())[::-1],
    )
    session: PromptSession[str] = PromptSession(
        history=history, completer=ShellCompleter(shell), complete_style=CompleteStyle.READLINE_LIKE
    )
    print(f"[ kraft-acl metadata shell: {source.status().description} ]")
    source.follow()
    stop = threading.Event()
    if source.live:
        threading.Thread(target=_redraw_on_change, args=(session, shell, stop), daemon=True).start()
    try:
        _loop(shell, session, buffer)
    finally:
        stop.set()


def _redraw_on_change(session: PromptSession[str], shell: Shell, stop: threading.Event) -> None:
    """Redraw the prompt when the offset it shows has moved (a following source applied new records)."""
    shown = shell.prompt()
    while not stop.wait(REFRESH_S):
        prompt = shell.prompt()
        if prompt != shown and session.app.is_running:
            session.app.invalidate()  # thread-safe: schedules a redraw on the prompt's event loop
            shown = prompt


def _loop(shell: Shell, session: PromptSession[str], buffer: list[str]) -> None:
    while not shell.done:
        try:
            line = session.prompt(shell.prompt)
        except KeyboardInterrupt:
            print("^C")
            continue
        except EOFError:
            return
        try:
            words = shlex.split(line)
        except ValueError as exc:
            shell.error(f"cannot read that line: {exc}", EXIT_USAGE)
            words = []
        try:
            shell.run(words)
        except KeyboardInterrupt:
            buffer.clear()
            buffer.append("\n" if _terminal_echoes_ctrl_c() else "^C\n")
        _show("".join(buffer))
        buffer.clear()


def _terminal_echoes_ctrl_c() -> bool:
    """True when the terminal itself showed `^C` (ECHOCTL: while a command runs the line is not in raw mode)."""
    try:
        return bool(termios.tcgetattr(sys.stdin.fileno())[3] & termios.ECHOCTL)
    except (termios.error, OSError, ValueError):
        return False


def _show(text: str) -> None:
    """Print, through the pager when the text is taller than the screen."""
    pager = _pager()
    if pager is None or text.count("\n") < shutil.get_terminal_size().lines:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the pager while it runs
    try:
        with subprocess.Popen(pager, stdin=subprocess.PIPE, text=True) as process:
            assert process.stdin is not None
            try:
                process.stdin.write(text)
                process.stdin.close()
            except BrokenPipeError:
                pass  # the pager was left before it read everything
    finally:
        signal.signal(signal.SIGINT, previous)


def _pager() -> list[str] | None:
    """$PAGER (empty: none), else `less -FRX` where there is one."""
    configured = os.environ.get("PAGER")
    if configured is not None:
        return shlex.split(configured) or None
    return ["less", "-FRX"] if shutil.which("less") else None
