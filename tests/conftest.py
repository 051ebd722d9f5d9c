"""Shared pytest configuration: where the repository and its tools are."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from kraftacl.harness.serve_process import kraft_acl_command

# No per-example deadlines (a loaded CI machine must not turn slowness into failures), and print the
# blob that reproduces a failing example.
settings.register_profile("kraft-acl", deadline=None, print_blob=True)
settings.load_profile("kraft-acl")

REPO = Path(__file__).resolve().parent.parent
pytest_plugins = ("tests.spark_session",)  # the session-scoped `spark` fixture of the spark-marked tests


@pytest.fixture(scope="session")
def kraft_acl() -> list[str]:
    """argv prefix that runs the real `kraft-acl` command."""
    return kraft_acl_command()
