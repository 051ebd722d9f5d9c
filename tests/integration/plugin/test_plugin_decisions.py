"""A stock Kafka 4.3.1 broker authorized by kraft-acl serve through the plugin: real producers and consumers are
allowed or denied exactly as the ACLs in serve's log say, and an ACL change bites on the next request.

Each test has its own user, topics and groups, so the tests do not depend on each other's ACLs.
"""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import KafkaError

from tests.integration.plugin.broker_metrics import broker_metric
from tests.integration.plugin.clients import (
    ADMIN_TOKEN,
    acl,
    consume,
    create_topics,
    grant,
    produce,
    unique,
    visible_topics,
)
from tests.integration.plugin.conftest import PluginSetup

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]

TOPIC_DENIED = KafkaError.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = KafkaError.GROUP_AUTHORIZATION_FAILED


def code(error: KafkaError | None) -> int | None:
    return None if error is None else error.code()


def granted(setup: PluginSetup, *acls: dict[str, str]) -> None:
    """Create ACLs through serve, then wait until the broker's plugin has been told of them: a decision it remembered
    before them (alice's DENY) is used until the notice, which takes milliseconds, but on a loaded host alice's next
    request came 30 ms after the write and was denied from memory."""
    offset = grant(setup.primary, *acls)
    deadline = time.monotonic() + 60
    while broker_metric(setup.broker, "cache-acl-offset") < offset:
        assert time.monotonic() < deadline, f"the broker's plugin was not told of offset {offset} within 60 s"
        time.sleep(0.05)


def test_topic_write_group_and_topic_read(plugin_setup: PluginSetup) -> None:
    broker = plugin_setup.broker
    topic, group = unique("rw"), unique("rw-group")
    create_topics(broker, topic)
    assert code(produce(broker, "alice", topic)) == TOPIC_DENIED
    granted(plugin_setup, acl("User:alice", "WRITE", topic))
    assert produce(broker, "alice", topic) is None

    values, error = consume(broker, "alice", topic, group)
    assert (values, code(error)) == ([], GROUP_DENIED)
    granted(plugin_setup, acl("User:alice", "READ", group, "GROUP"))
    values, error = consume(broker, "alice", topic, group)
    assert (values, code(error)) == ([], TOPIC_DENIED)  # WRITE implies DESCRIBE, not READ
    granted(plugin_setup, acl("User:alice", "READ", topic))
    values, error = consume(broker, "alice", topic, group)
    assert (values, error) == ([b"value"], None)
    assert code(produce(broker, "bob", topic)) == TOPIC_DENIED


def test_describe_decides_which_topics_metadata_shows(plugin_setup: PluginSetup) -> None:
    broker = plugin_setup.broker
    seen, hidden = unique("desc-seen"), unique("desc-hidden")
    create_topics(broker, seen, hidden)
    assert not {seen, hidden} & visible_topics(broker, "carol")
    granted(plugin_setup, acl("User:carol", "DESCRIBE", seen))
    topics = visible_topics(broker, "carol")
    assert seen in topics and hidden not in topics
    assert {seen, hidden} <= visible_topics(broker, "admin")  # a super user sees everything


def test_idempotent_producer_needs_write_somewhere(plugin_setup: PluginSetup) -> None:
    """InitProducerId: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic (authorizeByResourceType)."""
    broker = plugin_setup.broker
    topic = unique("idem")
    create_topics(broker, topic)
    granted(plugin_setup, acl("User:dave", "DESCRIBE", topic))
    assert code(produce(broker, "dave", topic, idempotent=True)) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    granted(plugin_setup, acl("User:dave", "WRITE", topic))
    assert produce(broker, "dave", topic, idempotent=True) is None


def test_transactional_producer_needs_its_transactional_id(plugin_setup: PluginSetup) -> None:
    broker = plugin_setup.broker
    topic, txn = unique("txn"), unique("erin-txn")
    create_topics(broker, topic)
    granted(plugin_setup, acl("User:erin", "WRITE", topic))
    error = produce(broker, "erin", topic, transactional_id=txn)
    assert code(error) == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, error
    granted(plugin_setup, acl("User:erin", "WRITE", txn, "TRANSACTIONAL_ID"))
    assert produce(broker, "erin", topic, transactional_id=txn) is None


def test_topic_auto_creation_needs_create(plugin_setup: PluginSetup) -> None:
    broker = plugin_setup.broker
    prefix = unique("auto") + "."
    granted(plugin_setup, acl("User:frank", "WRITE", prefix, pattern="PREFIXED"))
    assert produce(broker, "frank", prefix + "denied", timeout=8) is not None
    assert prefix + "denied" not in visible_topics(broker, "admin")
    granted(plugin_setup, acl("User:frank", "CREATE", prefix, pattern="PREFIXED"))
    assert produce(broker, "frank", prefix + "created") is None
    assert prefix + "created" in visible_topics(broker, "admin")


def test_prefixed_and_wildcard_acls(plugin_setup: PluginSetup) -> None:
    broker = plugin_setup.broker
    prefix = unique("pre")
    inside, outside = f"{prefix}.a", unique("elsewhere")
    create_topics(broker, inside, outside)
    granted(plugin_setup, acl("User:gina", "WRITE", prefix + ".", pattern="PREFIXED"))
    assert produce(broker, "gina", inside) is None
    assert code(produce(broker, "gina", outside)) == TOPIC_DENIED
    assert not {inside, outside} & visible_topics(broker, "hank")
    granted(plugin_setup, acl("User:hank", "DESCRIBE", "*"))
    assert {inside, outside} <= visible_topics(broker, "hank")


def test_deny_wins_over_allow(plugin_setup: PluginSetup) -> None:
    broker = plugin_setup.broker
    prefix = unique("deny")
    allowed, denied = f"{prefix}.ok", f"{prefix}.no"
    create_topics(broker, allowed, denied)
    granted(plugin_setup, acl("User:ivan", "WRITE", prefix + ".", pattern="PREFIXED"))
    assert produce(broker, "ivan", denied) is None
    granted(plugin_setup, acl("User:*", "WRITE", denied, permission="DENY"))
    assert code(produce(broker, "ivan", denied)) == TOPIC_DENIED
    assert produce(broker, "ivan", allowed) is None


def test_super_user_is_allowed_whatever_the_acls(plugin_setup: PluginSetup) -> None:
    broker = plugin_setup.broker
    topic, group = unique("super"), unique("super-group")
    create_topics(broker, topic)
    granted(
        plugin_setup,
        acl("User:*", "ALL", topic, permission="DENY"),
        acl("User:*", "ALL", group, "GROUP", "LITERAL", "DENY"),
    )
    assert produce(broker, "admin", topic) is None
    assert consume(broker, "admin", topic, group) == ([b"value"], None)


def test_decisions_travel_as_frames(plugin_setup: PluginSetup) -> None:
    """The plugin's default transport: its decision connections were upgraded to decision frames (serve counted
    the 101s), and the decisions they carried were answered (counted under the authorize endpoint)."""
    broker, serve = plugin_setup.broker, plugin_setup.primary
    topic = unique("framed")
    create_topics(broker, topic)
    granted(plugin_setup, acl("User:alice", "WRITE", topic))
    assert produce(broker, "alice", topic) is None
    text = serve.metrics_text(ADMIN_TOKEN, "CONTROLLER")
    upgrades = re.search(r'^kraft_acl_http_requests_total\{endpoint="frames",status="101"\} (\S+)$', text, re.M)
    assert upgrades is not None and float(upgrades.group(1)) >= 1, text
