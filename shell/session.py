"""One metadata-shell session: its state (`state.ShellState`) plus the command loop that runs parsed command lines
against one View each, printing each answer as text or (`run_json`) as one JSON object.

A Shell belongs to one thread; each command reads the source's current View once, so a command
sees one batch boundary of the log even while a following source moves on.
"""

from __future__ import annotations

import json

from kraftacl.shell.commands import TABLE, Handler, handlers
from kraftacl.shell.parse import EXIT_USAGE, ParseError, parse
from kraftacl.shell.state import ShellState


class Shell(ShellState):
    """Runs commands for one user; `status` is the worst exit status so far, `done` is set by `exit`."""

    _handlers: dict[str, Handler] = handlers()  # stateless functions of a shell and a parsed line

    def run_line(self, line: str, words: list[str]) -> None:
        """Run one command line (kept in the session's history unless an interactive history keeps it)."""
        self._lines.append(line)
        self.run(words)

    def run(self, words: list[str]) -> None:
        """Parse and run one command against the source's current state."""
        if not self.interactive:
            self.source.poll()  # a script sees every record written before each of its commands
        self._view = self.source.view()
        try:
            parsed = parse(words, TABLE)
        except ParseError as exc:
            self.error(str(exc), EXIT_USAGE)
            return
        if parsed is not None:
            self._handlers[parsed.command.name](self, parsed)

    def run_json(self, line: str, words: list[str]) -> None:
        """Run one command line and print its answer as one JSON object on one line: the command, its exit
        status, the values it recorded (`record`), else its text output as lines, and its error lines."""
        out, err = self.out, self.err
        said: list[str] = []
        errors: list[str] = []
        before = self.status
        self.status, self.answer = 0, {}
        self.out, self.err = said.append, errors.append
        try:
            self.run_line(line, words)
        finally:
            self.out, self.err = out, err
        status = self.status
        self.status = max(before, status)
        answer: dict[str, object] = {"command": line, "status": status}
        if self.answer:
            answer.update(self.answer)
        else:
            answer["output"] = "".join(said).splitlines()
        if errors:
            answer["errors"] = "".join(errors).splitlines()
        self.out(json.dumps(answer) + "\n")
