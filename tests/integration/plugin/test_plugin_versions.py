"""The plugin on every supported Kafka release: for each, a real broker of that release (jars from Maven Central)
with the plugin as its authorizer starts with an early-start listener, allows and denies produce, allows and denies
an idempotent producer (InitProducerId asks authorizeByResourceType), and manages ACLs through the broker
(CreateAcls, DescribeAcls, DeleteAcls), each change biting on the next request. The broker's log shows no
plugin failure. The rest of the plugin suite runs on the default release (scripts/kafka/pom.xml).

Each release gets its own serve and broker, so one release's failure leaves the others' results clean.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from kraftacl.harness.plugin_jar import REPO_ROOT, authorizer_class
from kraftacl.harness.serve_process import ServeProcess
from tests.integration.conftest import start_or_fail
from tests.integration.plugin.clients import (
    acl,
    by_principal,
    create,
    create_topics,
    delete,
    describe,
    grant,
    produce,
    unique,
)
from tests.integration.plugin.conftest import plugin_jar, plugin_props, serve_props, start_serve
from tests.integration.plugin.test_plugin_admin import broker_acl_count
from tests.kafka_broker import KafkaBroker, KafkaBrokerError, fetch_jars

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(420)]

#: The Kafka releases the plugin supports (the newest patch of every 4.x minor release), one place for all.
SUPPORTED_KAFKA_VERSIONS = tuple(
    line.strip()
    for line in (REPO_ROOT / "scripts" / "kafka" / "supported-versions.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
)
#: What a broker logs when the plugin reaches for a class its release does not have (the failures of issue #27).
PLUGIN_FAILURES = ("NoClassDefFoundError", "ClassNotFoundException", "NoSuchMethodError", "AbstractMethodError")

TOPIC_DENIED = KafkaError.TOPIC_AUTHORIZATION_FAILED


def code(error: KafkaError | None) -> int | None:
    return None if error is None else error.code()


@pytest.fixture(params=SUPPORTED_KAFKA_VERSIONS)
def release(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, KafkaBroker, ServeProcess]]:
    """One serve (controller role) and one broker of the release asking it, with an EARLY early-start listener."""
    version: str = request.param
    jar = plugin_jar()
    try:
        fetch_jars(kafka_version=version)
    except KafkaBrokerError as exc:
        pytest.fail(f"KAFKA {version} JARS COULD NOT BE FETCHED: {exc}", pytrace=False)
    serve = ServeProcess(tmp_path / "serve", serve_props(tmp_path / "serve", tmp_path / "log"))
    start_serve(serve)
    props = plugin_props([serve.url("CONTROLLER")], tmp_path / "plugin.token")
    props["authorizer.class.name"] = authorizer_class(version)
    props["early.start.listeners"] = "CONTROLLER,EARLY"
    broker = KafkaBroker(
        tmp_path / "broker",
        authorizer=True,
        extra_props=props,
        classpath=str(jar),
        listeners=["EARLY:SASL_PLAINTEXT"],
        sasl_users=["carol"],
        kafka_version=version,
    )
    try:
        start_or_fail(broker)
        yield version, broker, serve
    finally:
        broker.stop()
        serve.stop()


def test_plugin_works_on_the_release(release: tuple[str, KafkaBroker, ServeProcess]) -> None:
    version, broker, serve = release
    topic, other = unique("compat"), unique("compat-admin")
    # Start-up: the early-start listener serves the super user; every listener is open once serve was ready.
    create_topics(broker, topic, other, listener="EARLY")
    assert produce(broker, "admin", topic, listener="EARLY") is None

    # Produce: denied, then allowed once serve has the ACL.
    assert code(produce(broker, "alice", topic)) == TOPIC_DENIED
    grant(serve, acl("User:alice", "WRITE", topic))
    assert produce(broker, "alice", topic) is None

    # Idempotent producers: InitProducerId is authorizeByResourceType (WRITE on any topic), then the produce. bob
    # may DESCRIBE the topic, so that the denial is InitProducerId's and not the Metadata request's.
    grant(serve, acl("User:bob", "DESCRIBE", topic))
    assert code(produce(broker, "bob", topic, idempotent=True)) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert produce(broker, "alice", topic, idempotent=True) is None

    # ACLs through the broker: CreateAcls, DescribeAcls, DeleteAcls, each biting on the next request.
    binding = AclBinding(
        ResourceType.TOPIC, other, ResourcePatternType.LITERAL, "User:carol", "*", AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )  # fmt: skip
    assert code(produce(broker, "carol", other)) == TOPIC_DENIED
    assert create(broker, [binding]) == [0]
    assert describe(broker, by_principal("User:carol")) == [binding]
    assert produce(broker, "carol", other) is None
    assert delete(broker, by_principal("User:carol")) == [binding]
    assert describe(broker, by_principal("User:carol")) == []
    assert code(produce(broker, "carol", other)) == TOPIC_DENIED

    # Metrics: in the broker's plugin metrics where the release offers them (4.1+), none on 4.0.
    if version.startswith("4.0."):
        assert "offers plugin metrics" not in broker.log_tail(lines=100_000)
    else:
        assert set(broker_acl_count(broker).values()) == {2}  # alice's WRITE and bob's DESCRIBE

    logs = broker.log_tail(lines=100_000)
    assert f"Kafka version: {version}" in logs, "the broker runs the release under test"
    failures = [line for line in logs.splitlines() if any(f in line for f in PLUGIN_FAILURES)]
    assert not failures, f"Kafka {version} logged plugin failures:\n" + "\n".join(failures[:20])
