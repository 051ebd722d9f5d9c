"""Shared pytest configuration: where the repository and its tools are."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def kraft_acl_command() -> list[str]:
    """The installed console script, or the module form when the script is not on PATH."""
    script = Path(sys.executable).parent / "kraft-acl"
    if script.exists():
        return [str(script)]
    found = shutil.which("kraft-acl")
    return [found] if found else [sys.executable, "-c", "from shell.cli import main; main()"]


@pytest.fixture(scope="session")
def kraft_acl() -> list[str]:
    """argv prefix that runs the real `kraft-acl` command."""
    return kraft_acl_command()
