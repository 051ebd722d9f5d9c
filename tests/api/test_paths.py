"""serve's paths are spelled once: in the contract's endpoint table (`kraftacl/api/endpoints.py`). Every other
Python file names an endpoint of that table, never a `"/v1/...` literal, so a path cannot drift between serve,
its clients, the benchmarks and the OpenAPI document.

Exempt: the contract package itself, serve (`server/`, whose routes read the table), and the tests of serve and of
the contract (`tests/server/`, `tests/api/`), which spell the documented wire paths on purpose to check serve
answers on them independently of the table.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXEMPT = ("kraftacl/api/", "server/", "tests/server/", "tests/api/")
V1_LITERAL = re.compile(r"""(?<![A-Za-z0-9_])[rbfRBF]{0,2}(["'])/v1/""")


def v1_literals(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every string literal that starts with /v1/."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if V1_LITERAL.search(line)]


def python_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [p for p in listed if not p.startswith(EXEMPT) and (REPO / p).is_file()]


def test_no_v1_path_outside_the_contract_and_serve() -> None:
    files = python_files()
    assert any(p.startswith("kraftacl/cli/") for p in files) and any(p.startswith("shell/") for p in files)
    found = [f"{p}:{n}: {line}" for p in files for n, line in v1_literals((REPO / p).read_text(encoding="utf-8"))]
    assert not found, "name an endpoint of kraftacl.api.endpoints instead of spelling its path:\n" + "\n".join(found)


def test_the_check_sees_every_spelling() -> None:
    text = 'a = "/v1/authorize"\nb = f\'/v1/acls/{x}\'\nc = "/metrics"\nd = url + "/v1/status"\ne = "x/v1/y"\n'
    assert [n for n, _ in v1_literals(text)] == [1, 2, 4]
