"""The one SparkSession of the spark-marked tests: real PySpark in local mode (local[2], no web UI, few shuffle
partitions), with the Kafka connector jars the set-up fetched. A pytest plugin (tests/conftest.py loads it).

With ``CI=true`` a missing Java or missing connector jars fail the tests; elsewhere they skip with a loud
summary, as the Kafka tests do.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_SKIPPED: list[str] = []


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def _unavailable(reason: str) -> NoReturn:
    if _in_ci():
        pytest.fail(f"SPARK TESTS FAILED (CI=true, they never skip there): {reason}", pytrace=False)
    if reason not in _SKIPPED:
        _SKIPPED.append(reason)
        warnings.warn(f"SPARK TESTS SKIPPED: {reason}", UserWarning, stacklevel=2)
    pytest.skip(f"SPARK TESTS SKIPPED: {reason}")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """local[2] with the connector jars; stopped at the end of the run."""
    if shutil.which("java") is None:
        _unavailable("no java on PATH (PySpark 4 needs Java 17+)")
    try:
        from kraftacl.pipeline.errors import PipelineError
        from kraftacl.pipeline.session import build_session
    except ImportError as exc:
        _unavailable(f"pyspark is not installed ({exc}); run `make setup`")
    try:
        session = build_session("kraft-acl tests", "local[2]", kafka=True, conf={"spark.sql.shuffle.partitions": "2"})
    except PipelineError as exc:
        _unavailable(str(exc))
    try:
        yield session
    finally:
        session.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that use the session are spark-marked even if they forgot the marker."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    """Make skipped Spark tests impossible to miss."""
    for reason in _SKIPPED:
        terminalreporter.write_line(f"SPARK TESTS SKIPPED: {reason}", red=True, bold=True)
