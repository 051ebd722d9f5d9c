"""A pseudo-terminal driver for the interactive shell tests: pexpect runs the command, pyte keeps the screen.

One Terminal per spawned process; not thread-safe.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

import pexpect
import pyte


class Terminal:
    """`kraft-acl ...` on a rows x columns terminal; assertions read `screen()` as the user would see it."""

    def __init__(self, argv: list[str], rows: int = 24, columns: int = 100, env: dict[str, str] | None = None) -> None:
        self.rows, self.columns = rows, columns
        self._screen = pyte.Screen(columns, rows)
        self._stream = pyte.ByteStream(self._screen)
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm", "LANG": "C.UTF-8"}
        base["PROMPT_TOOLKIT_NO_CPR"] = "1"  # pyte answers no cursor-position requests
        self.child: pexpect.spawn[bytes] = pexpect.spawn(
            argv[0], argv[1:], dimensions=(rows, columns), env={**base, **(env or {})}
        )

    def screen(self) -> str:
        """The visible screen, trailing blanks removed."""
        return "\n".join(line.rstrip() for line in self._screen.display).rstrip()

    def lines(self) -> list[str]:
        return self.screen().split("\n")

    def wait(self, condition: Callable[[str], bool] | str, timeout: float = 30.0) -> str:
        """Read output until the screen satisfies `condition` (a predicate, or a regex searched for); the screen."""
        test = condition if callable(condition) else (lambda text: re.search(condition, text, re.M) is not None)
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if test(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {condition!r}; the screen:\n{text}")
            try:
                self._stream.feed(self.child.read_nonblocking(65536, timeout=0.1))
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                if not test(self.screen()):
                    raise AssertionError(
                        f"the process ended before {condition!r}; the screen:\n{self.screen()}"
                    ) from None
                return self.screen()

    def wait_lines(self, *lines: str, timeout: float = 30.0) -> str:
        """Read output until the screen's last lines are exactly `lines` (trailing blanks aside); the screen."""
        return self.wait(lambda text: text.split("\n")[-len(lines) :] == list(lines), timeout)

    def settle(self, quiet: float = 0.5) -> str:
        """Read until nothing new arrives for `quiet` seconds; the screen."""
        while True:
            try:
                self._stream.feed(self.child.read_nonblocking(65536, timeout=quiet))
            except (pexpect.TIMEOUT, pexpect.EOF):
                return self.screen()

    def send(self, text: str) -> None:
        self.child.send(text)

    def exit_status(self, timeout: float = 30.0) -> int | None:
        """Wait for the process to end; its exit status."""
        self.wait(lambda _: not self.child.isalive(), timeout)
        self.child.close()
        return self.child.exitstatus

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)
