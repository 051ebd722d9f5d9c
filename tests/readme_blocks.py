"""The shell examples of README.md and docs/*.md that tests/test_readme.py runs, and the checkout they run in.

A ```bash block is run when the line before its fence is a marker:

    <!-- runnable -->                 run it; it must exit 0
    <!-- runnable exit=2 -->          it must exit 2 (an example of an error)
    <!-- runnable expect="TEXT" -->   its output (stdout and stderr) must contain TEXT (repeatable)
    <!-- runnable kafka -->           run by the Kafka walkthrough test (after `make broker` in it)
    <!-- runnable keep -->            also run before every later block of the file (`source .venv/bin/activate`:
                                      the terminal the README's reader types in keeps it)
    <!-- not-runnable: WHY -->        never run (a synopsis, a command that runs in the foreground, ...)

Every ```bash block of README.md carries one of these markers (the test fails on one without), so no command
reaches the README without being run or explicitly set aside. Immutable values and stateless functions.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The demo's ports as the README writes them (serve's two listeners, the demo broker); a test run replaces each
#: with a free port, in the commands and in its copy of examples/, so it never meets a `make run` of the machine.
PORTS = {"serve_controller": 9190, "serve_client": 9191, "broker": 9092}
_MARKER = re.compile(r"^<!--\s*(runnable|not-runnable)(?P<rest>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One ```bash block: where it is, its text, and what its marker asks."""

    path: Path
    line: int  # the fence's line number (1-based)
    text: str
    runnable: bool
    kafka: bool = False
    keep: bool = False
    exit_code: int = 0
    expect: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """`README.md:42`, for messages."""
        return f"{self.path.relative_to(REPO)}:{self.line}"


class MarkerError(ValueError):
    """A ```bash block without a marker, or a marker that does not parse."""


def _block(path: Path, line: int, text: str, marker: re.Match[str] | None) -> Block:
    if marker is None:
        raise MarkerError(
            f"{path.relative_to(REPO)}:{line}: a ```bash block without a marker: put `<!-- runnable -->` (or "
            "`<!-- not-runnable: why -->`) on the line before its fence (tests/readme_blocks.py)"
        )
    if marker.group(1) == "not-runnable":
        return Block(path, line, text, runnable=False)
    kafka = keep = False
    exit_code, expect = 0, []
    for word in shlex.split(marker.group("rest")):
        key, _, value = word.partition("=")
        if word == "kafka":
            kafka = True
        elif word == "keep":
            keep = True
        elif key == "exit" and value.isdigit():
            exit_code = int(value)
        elif key == "expect" and value:
            expect.append(value)
        else:
            raise MarkerError(f"{path.relative_to(REPO)}:{line}: unknown marker word {word!r}")
    return Block(path, line, text, True, kafka, keep, exit_code, tuple(expect))


def blocks(path: Path, strict: bool) -> list[Block]:
    """The ```bash blocks of a markdown file, in order; with `strict`, every one must carry a marker."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    number = 0
    while number < len(lines):
        fence = lines[number].strip()
        if fence.startswith("```"):
            end = next((i for i in range(number + 1, len(lines)) if lines[i].strip().startswith("```")), len(lines))
            if fence in ("```bash", "```sh", "```shell"):
                previous = lines[number - 1].strip() if number else ""
                marker = _MARKER.match(previous)
                if marker is not None or strict:
                    text = "\n".join(lines[number + 1 : end]) + "\n"
                    found.append(_block(path, number + 1, text, marker))
            number = end + 1
            continue
        number += 1
    return found


def with_ports(text: str, ports: dict[str, int]) -> str:
    """`text` with the demo's ports replaced by this run's."""
    for name, port in PORTS.items():
        text = re.sub(rf"(?<![0-9]){port}(?![0-9])", str(ports[name]), text)
    return text


def checkout(root: Path, ports: dict[str, int]) -> Path:
    """A checkout to run the README in: the repository's files (symlinks, so the installed .venv, the built plugin
    and the fetched jars are used as they are), its own copy of examples/ on this run's ports, and no data/."""
    root.mkdir(parents=True, exist_ok=True)
    for entry in REPO.iterdir():
        if entry.name in ("examples", "data") or entry.name.startswith(".git"):
            continue
        os.symlink(entry, root / entry.name)
    shutil.copytree(REPO / "examples", root / "examples", symlinks=True)
    for config in (root / "examples").rglob("*.properties"):
        config.write_text(with_ports(config.read_text(encoding="utf-8"), ports), encoding="utf-8")
    return root
