"""The state of one metadata-shell session that its commands work on: the source, the working directory, where
output goes, the exit status, and the tree at the current View with its paths and globs (Kafka's
`MetadataShellState`). `session.Shell` adds the command loop.

A ShellState belongs to one thread; each command reads the source's current View once, so a command
sees one batch boundary of the log even while a following source moves on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kraftacl.shell.parse import EXIT_ERROR
from kraftacl.shell.paths import GlobComponent, absolute
from kraftacl.shell.sources.base import AclSource, View
from kraftacl.shell.tree import Node, root

Write = Callable[[str], object]
_GLOB = re.compile(r"[*?{]")


@dataclass(frozen=True, slots=True)
class Match:
    """A node a path or glob led to, with the components of its absolute path."""

    path: list[str]
    node: Node

    @property
    def name(self) -> str:
        """Kafka's `lastPathComponent`: the last component, or `/` for the root."""
        return self.path[-1] if self.path else "/"

    @property
    def absolute(self) -> str:
        return "/" + "/".join(self.path)


class ShellState:
    """What the commands read and change of one user's session; `status` is the worst exit status so far, `done` is
    set by `exit`."""

    def __init__(
        self,
        source: AclSource,
        out: Write,
        err: Write,
        interactive: bool = False,
        screen_width: Callable[[], int | None] = lambda: None,
        history: Callable[[], list[str]] | None = None,
    ) -> None:
        self.source = source
        self.out = out
        self.err = err
        self.interactive = interactive
        self.screen_width = screen_width
        self.cwd = "/"
        self.status = 0
        self.done = False
        self.answer: dict[str, object] = {}  # the current command's answer as values, for `-o json`
        self._lines: list[str] = []
        self._history = history if history is not None else (lambda: self._lines)
        self._view = source.view()

    @property
    def view(self) -> View:
        """The state the current command runs against."""
        return self._view

    def history(self) -> list[str]:
        """Every command line of the history, oldest first."""
        return self._history()

    def print(self, text: str) -> None:
        """Write lines of output (a newline is added)."""
        self.out(text + "\n")

    def record(self, **values: object) -> None:
        """Values of the current command's answer (what `kraft-acl shell -o json` prints in place of its text)."""
        self.answer.update(values)

    def error(self, message: str, status: int = EXIT_ERROR) -> None:
        """Report an error in Kafka's words and remember the exit status."""
        self.err(message + "\n")
        self.status = max(self.status, status)

    def root(self) -> Node:
        """The tree at the current command's state."""
        return root(self._view, self.source.status)

    def visit(self, target: str) -> list[Match]:
        """Kafka's GlobVisitor: every node `target` leads to, glob components expanded in sorted order."""
        components = absolute(target, self.cwd)
        found: list[Match] = []
        _walk(self.root(), components, [], found)
        return found

    def prompt(self) -> str:
        """The interactive prompt, showing the offset the tree stands at."""
        offset = self.source.view().offset
        return f"[at offset {offset}] >> " if self.source.pinned is not None else f"[offset {offset}] >> "

    @staticmethod
    def is_glob(target: str) -> bool:
        """True when some component of `target` is a pattern."""
        return bool(_GLOB.search(target))


def _walk(node: Node, components: list[str], path: list[str], found: list[Match]) -> None:
    if len(path) == len(components):
        found.append(Match(path, node))
        return
    if not node.is_directory:
        return
    glob = GlobComponent.of(components[len(path)])
    if glob.literal is not None:
        child = node.child(glob.literal)
        if child is not None:
            _walk(child, components, [*path, glob.literal], found)
        return
    for name in node.sorted_names():
        if glob.matches(name):
            child = node.child(name)
            if child is not None:
                _walk(child, components, [*path, name], found)
