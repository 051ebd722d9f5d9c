"""serve's status lines for operators and scripts, on stdout: `kraft-acl serve: <text>`, or with `-o json` one JSON
object per line (`{"event": "ready", ..., "message": <text>}`); a closed stdout never stops serve.

One `Announcer` per serve process, used from the event loop thread (and from the load thread before serve is
ready: its lines are whole `print` calls); it switches once, and for good, from
stdout to the log when stdout's reader goes away (`kraft-acl serve ... | head -1`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from typing import TextIO

log = logging.getLogger("kraft_acl.serve")
PREFIX = "kraft-acl serve: "


class Announcer:
    """Prints each status line as text or JSON; after EPIPE, logs them at INFO instead (one WARNING says so)."""

    def __init__(self, json_lines: bool = False, stream: TextIO | None = None) -> None:
        self.json_lines = json_lines
        self.stream = stream
        self.closed = False

    def say(self, event: str, text: str, **fields: object) -> None:
        """One status line: `event` names it for programs, `text` says it for people, `fields` are its values."""
        if self.closed:
            log.info(text)
            return
        line = json.dumps({"event": event, **fields, "message": text}) if self.json_lines else PREFIX + text
        stream = self.stream or sys.stdout
        try:
            print(line, file=stream, flush=True)
        except BrokenPipeError:
            self._stdout_closed(stream, text)

    def _stdout_closed(self, stream: TextIO, text: str) -> None:
        self.closed = True
        # later writes, and the interpreter's last flush at exit, go nowhere instead of failing again
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        log.warning("stdout was closed by its reader; serve goes on and writes its status lines to this log")
        log.info(text)
