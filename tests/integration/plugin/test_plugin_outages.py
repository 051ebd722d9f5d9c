"""What the broker does when serve goes away: the second serve URL takes over; with no serve at all every
request of a non-super user is refused (fail closed), never allowed; when serve is back the same broker
process recovers, with no restart. The broker's super users are decided in the broker and keep working.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from tests.integration.plugin.clients import (
    acl,
    consume,
    create,
    create_topics,
    grant,
    produce,
    unique,
    visible_topics,
)
from tests.integration.plugin.conftest import PluginSetup, start_serve

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(420)]


def server_log(setup: PluginSetup) -> str:
    return (setup.broker.log_dir / "server.log").read_text(errors="replace")


def refused_everything(setup: PluginSetup, topic: str, group: str) -> None:
    """mia's WRITE, READ, DESCRIBE and idempotent InitProducerId are all refused; admin (super user) still works."""
    broker = setup.broker
    assert produce(broker, "mia", topic, timeout=8) is not None
    values, error = consume(broker, "mia", topic, group, timeout=10)
    assert values == [] and error is not None
    assert topic not in visible_topics(broker, "mia")
    assert produce(broker, "mia", topic, idempotent=True, timeout=8) is not None
    assert produce(broker, "admin", topic) is None


def test_failover_then_fail_closed_then_recovery(plugin_setup: PluginSetup) -> None:
    broker, (first, second) = plugin_setup.broker, plugin_setup.serves
    topic, group = unique("outage"), unique("outage-group")
    create_topics(broker, topic)
    grant(first, acl("User:mia", "ALL", topic), acl("User:mia", "READ", group, "GROUP"))
    time.sleep(0.5)  # serve B tails the log every 20 ms
    assert produce(broker, "mia", topic) is None

    first.stop()
    try:
        assert produce(broker, "mia", topic) is None, "serve B answers in A's place"
        assert consume(broker, "mia", topic, group) == ([b"value"], None)
        assert f"now asking {second.url('CONTROLLER')}" in server_log(plugin_setup)
        second.stop()
        try:
            refused_everything(plugin_setup, topic, group)
            assert "DENIED" in server_log(plugin_setup) and "fail closed" in server_log(plugin_setup)
        finally:
            start_serve(second)
    finally:
        start_serve(first)
    assert produce(broker, "mia", topic) is None, "the same broker process decides through serve again"
    assert topic in visible_topics(broker, "mia")


def test_acl_writes_need_the_controller_serve(plugin_setup: PluginSetup) -> None:
    """With A (controller role) down, B (broker role) answers 421: CreateAcls fails at once, with serve's reason.

    Not with NOT_CONTROLLER: Kafka's broker would take that for its own controller moving and resend the request
    until the client timed out."""
    broker, first = plugin_setup.broker, plugin_setup.primary
    binding = AclBinding(ResourceType.TOPIC, unique("w"), ResourcePatternType.LITERAL, "User:mia", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
    first.stop()
    try:
        started = time.monotonic()
        assert create(broker, [binding]) == [KafkaError.UNKNOWN]
        assert time.monotonic() - started < 10
    finally:
        start_serve(first)
    assert create(broker, [binding]) == [0]
