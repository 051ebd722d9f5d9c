"""What the broker does when serve goes away: the second serve URL takes over; with no serve at all every
request of a non-super user is refused (fail closed), never allowed; when serve is back the same broker
process recovers, with no restart. The broker's super users are decided in the broker and keep working.

A frozen serve (SIGSTOP) costs one timeout: the plugin skips it (a circuit breaker) and asks the next URL until a
background probe finds it answering, then asks the first (local) serve again; with every serve frozen, requests are
denied without reaching them.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

from kraftacl.harness.serve_process import ServeProcess
from tests.integration.plugin.broker_metrics import broker_metric
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
from tests.integration.plugin.conftest import PLUGIN_TOKEN, PluginSetup, start_serve

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
        seen = len(server_log(plugin_setup))
        start_serve(first)
    # The circuit breaker lets calls reach a restarted serve once its probe (every 500 ms) got an answer.
    wait_for_log(plugin_setup, f"serve {first.url('CONTROLLER')} answers again", since=seen)
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


def decisions_of(serve: ServeProcess) -> float:
    """How many decisions this serve has made (kraft_acl_decisions_total, every result and rule)."""
    text = serve.metrics_text(PLUGIN_TOKEN)
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("kraft_acl_decisions_total{")
    )


def wait_for_no_memory(setup: PluginSetup) -> None:
    """Wait until the broker's plugin no longer uses remembered decisions (its feed's heartbeat is late)."""
    deadline = time.monotonic() + 60
    while broker_metric(setup.broker, "cache-usable") != 0:
        assert time.monotonic() < deadline, "the plugin kept its remembered decisions usable"
        time.sleep(0.2)


def wait_for_notice(setup: PluginSetup, offset: int) -> None:
    """Wait until the broker's plugin knows of the ACL change at `offset` (its change feed reported it, or it uses
    no remembered decision): a request after it is asked of serve, not answered from memory."""
    deadline = time.monotonic() + 60
    while broker_metric(setup.broker, "cache-usable") != 0 and broker_metric(setup.broker, "cache-acl-offset") < offset:
        assert time.monotonic() < deadline, f"the plugin never learnt of the ACL change at offset {offset}"
        time.sleep(0.05)


def wait_for_log(setup: PluginSetup, text: str, timeout: float = 60.0, since: int = 0) -> None:
    """Wait until the broker logs `text` (at or after character `since` of its log)."""
    deadline = time.monotonic() + timeout
    while text not in server_log(setup)[since:]:
        assert time.monotonic() < deadline, f"the broker never logged {text!r}"
        time.sleep(0.2)


def test_a_frozen_serve_is_skipped_and_the_local_one_asked_again_once_it_answers(plugin_setup: PluginSetup) -> None:
    broker, (first, second) = plugin_setup.broker, plugin_setup.serves
    topic = unique("frozen")
    create_topics(broker, topic)
    grant(first, acl("User:nora", "WRITE", topic))
    time.sleep(0.5)  # serve B tails the log every 20 ms
    assert produce(broker, "nora", topic) is None
    answered_by_b = decisions_of(second)
    paused_at = len(server_log(plugin_setup))
    first.pause()
    try:
        wait_for_no_memory(plugin_setup)
        assert produce(broker, "nora", topic) is None, "serve B answers once A has timed out"
        assert produce(broker, "nora", topic) is None
        wait_for_log(plugin_setup, f"stopped asking serve {first.url('CONTROLLER')}", since=paused_at)
        assert decisions_of(second) > answered_by_b
    finally:
        seen = len(server_log(plugin_setup))
        first.resume()
    wait_for_log(plugin_setup, f"serve {first.url('CONTROLLER')} answers again", since=seen)
    before = decisions_of(first)
    offset = grant(first, acl("User:nora", "READ", topic))  # a change: the next decisions are asked, not remembered
    wait_for_notice(plugin_setup, offset)
    assert produce(broker, "nora", topic) is None
    assert decisions_of(first) > before, "the broker asks its first (local) serve again"


def test_with_every_serve_frozen_requests_are_denied_without_reaching_them(plugin_setup: PluginSetup) -> None:
    broker, serves = plugin_setup.broker, plugin_setup.serves
    topic = unique("all-frozen")
    create_topics(broker, topic)
    grant(serves[0], acl("User:oscar", "ALL", topic))
    time.sleep(0.5)
    assert produce(broker, "oscar", topic) is None
    before = [decisions_of(s) for s in serves]
    paused_at = len(server_log(plugin_setup))
    for s in serves:
        s.pause()
    try:
        wait_for_no_memory(plugin_setup)
        attempts = 0
        for _ in range(4):
            assert produce(broker, "oscar", topic, timeout=5) is not None  # denied, never allowed from memory
            attempts += 1
        assert topic not in visible_topics(broker, "oscar")
        assert produce(broker, "admin", topic) is None  # super users are decided in the broker
        assert "no other serve is healthy" in server_log(plugin_setup)[paused_at:]
    finally:
        resumed_at = len(server_log(plugin_setup))
        for s in serves:
            s.resume()
    reached = sum(decisions_of(s) - b for s, b in zip(serves, before, strict=True))
    assert reached <= 8, f"{reached} decisions reached the frozen serves over {attempts} produce attempts"
    wait_for_log(plugin_setup, "answers again", since=resumed_at)
    deadline = time.monotonic() + 60
    while produce(broker, "oscar", topic, timeout=8) is not None:
        assert time.monotonic() < deadline, "decisions did not come back"
