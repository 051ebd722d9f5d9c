"""Fixtures for the kafka-marked integration tests: real KRaft brokers started from Maven Central jars.

With ``CI=true`` a missing Java/Maven or a broker that does not start fails the tests; on a developer
machine without Java 17+ or Maven they are skipped, with a loud summary at the end of the run. A broker
that fails to start is always a failure.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import NoReturn

import pytest

from tests.kafka_broker import KafkaBroker, KafkaBrokerError, fetch_jars, java_problem, maven_problem

KAFKA_FIXTURES = frozenset({"kafka_broker", "kafka_sasl_broker", "kafka_snapshotting_broker", "sidecar_cluster"})
# Kafka writes a metadata snapshot at most this often once records arrive (the NoOp records the controller
# appends every 500 ms count), and after any 1 byte of records: tests see their ACLs in a .checkpoint soon.
SNAPSHOT_EVERY = {
    "metadata.log.max.snapshot.interval.ms": "1000",
    "metadata.log.max.record.bytes.between.snapshots": "1",
}
_SKIP_REASONS: list[str] = []


def in_ci() -> bool:
    """True when the run is CI (``CI=true``): Kafka tests must then run, never skip."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def _unavailable(reason: str) -> NoReturn:
    if in_ci():
        pytest.fail(f"KAFKA TESTS FAILED (CI=true, they never skip there): {reason}", pytrace=False)
    if reason not in _SKIP_REASONS:
        _SKIP_REASONS.append(reason)
        warnings.warn(f"KAFKA TESTS SKIPPED: {reason}", UserWarning, stacklevel=2)
    pytest.skip(f"KAFKA TESTS SKIPPED: {reason}")


def require_kafka() -> None:
    """Java 17+ and the Kafka jars (fetched now if Maven is there); else a failure in CI, a loud skip elsewhere."""
    for problem in (java_problem(), maven_problem()):
        if problem is not None:
            _unavailable(problem)
    try:
        fetch_jars()
    except KafkaBrokerError as exc:
        pytest.fail(f"KAFKA BROKER JARS COULD NOT BE FETCHED: {exc}", pytrace=False)


def _start_broker(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    *,
    authorizer: bool = False,
    extra_props: dict[str, str] | None = None,
) -> KafkaBroker:
    require_kafka()
    broker = KafkaBroker(tmp_path_factory.mktemp(name), authorizer=authorizer, extra_props=extra_props)
    start_or_fail(broker)
    return broker


def start_or_fail(broker: KafkaBroker) -> None:
    """Start the broker; a broker that does not start is a failure, with its log tail."""
    try:
        broker.start()
    except KafkaBrokerError as exc:
        tail = broker.log_tail()
        broker.stop()
        pytest.fail(f"KAFKA BROKER DID NOT START: {exc}\n{tail}", pytrace=False)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """One PLAINTEXT single-node KRaft broker for the whole session (stopped at the end)."""
    broker = _start_broker(tmp_path_factory, "kafka")
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A SASL/PLAIN broker with StandardAuthorizer (super user admin; alice and bob have no ACLs)."""
    broker = _start_broker(tmp_path_factory, "kafka-sasl", authorizer=True)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_snapshotting_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A SASL/PLAIN broker with StandardAuthorizer that snapshots its metadata every second (SNAPSHOT_EVERY);
    its KRaft files are under `data_dir / "data"`."""
    broker = _start_broker(tmp_path_factory, "kafka-snapshots", authorizer=True, extra_props=SNAPSHOT_EVERY)
    try:
        yield broker
    finally:
        broker.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that use a broker fixture are kafka-marked even if they forgot the marker."""
    for item in items:
        if KAFKA_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.kafka)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    """Make skipped Kafka tests impossible to miss."""
    if not _SKIP_REASONS:
        return
    terminalreporter.section("KAFKA TESTS SKIPPED", sep="!", red=True, bold=True)
    for reason in _SKIP_REASONS:
        terminalreporter.write_line(f"KAFKA TESTS SKIPPED: {reason}", red=True, bold=True)
    terminalreporter.write_line(
        "Install Java 17+ and Maven to run them; with CI=true this is a failure, not a skip.", red=True
    )
