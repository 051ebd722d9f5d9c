"""The plugin's decision cache in a real broker: a remembered decision is used only while serve's change feed proves
it current. An ACL change bites on the next request after the notice, round after round under churn; with the feed
cut (serve frozen, the feed's connection dropped by a proxy, serve replaced under its URL) nothing remembered is
used; the bound on entries holds; and decisions answered from memory are in the broker's audit log as Kafka writes
them.

The broker asks one serve through `FeedProxy`; its plugin's feed heartbeat is short (200 ms + 300 ms grace) so that a
cut is seen quickly. The tests wait for the plugin's own metrics (JMX) to show a notice or a cut, never for a time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from kraftacl.api.endpoints import CHANGES
from kraftacl.harness.serve_process import ServeProcess
from tests.integration.conftest import start_or_fail
from tests.integration.plugin.broker_metrics import broker_metric, plugin_metrics
from tests.integration.plugin.clients import (
    acl,
    create,
    create_topics,
    delete,
    grant,
    produce,
    revoke,
    unique,
    visible_topics,
)
from tests.integration.plugin.conftest import PLUGIN_TOKEN, plugin_jar, plugin_props, serve_props, start_serve
from tests.integration.plugin.feed_proxy import FeedProxy
from tests.kafka_broker import KafkaBroker

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(600)]

USERS = ("nina", "otto", "pia", "quinn", "ruth", "sam")
MAX_ENTRIES = 40
TOPIC_DENIED = KafkaError.TOPIC_AUTHORIZATION_FAILED


@dataclass
class CacheSetup:
    """serve A (controller), the proxy in front of it, and a broker whose plugin asks A through the proxy."""

    serve: ServeProcess
    proxy: FeedProxy
    broker: KafkaBroker
    root: Path


def address(serve: ServeProcess) -> tuple[str, int]:
    host, port = serve.url("CONTROLLER").removeprefix("http://").rsplit(":", 1)
    return host, int(port)


@pytest.fixture(scope="module")
def cache_setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CacheSetup]:
    jar = plugin_jar()
    root = tmp_path_factory.mktemp("plugin-cache")
    serve = ServeProcess(root / "serve-a", serve_props(root / "serve-a", root / "log-a"))
    start_serve(serve)
    proxy = FeedProxy(address(serve))
    props = plugin_props([proxy.url], root / "plugin.token")
    props.update({
        "kraft.acl.cache.heartbeat.ms": "200",
        "kraft.acl.cache.heartbeat.grace.ms": "300",
        "kraft.acl.cache.max.entries": str(MAX_ENTRIES),
    })  # fmt: skip
    broker = KafkaBroker(root / "broker", authorizer=True, extra_props=props, classpath=str(jar), sasl_users=USERS)
    try:
        start_or_fail(broker)
        yield CacheSetup(serve, proxy, broker, root)
    finally:
        broker.stop()
        serve.stop()


def wait_until(check: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout:.0f}s: {what}"
        time.sleep(0.2)


def acl_offset(serve: ServeProcess) -> int:
    """The offset of serve's newest ACL change, from its change feed."""
    status, body = serve.call(CHANGES, PLUGIN_TOKEN)
    assert status == 200, body
    return int(body["acl_offset"])


def notice_arrived(setup: CacheSetup) -> None:
    """Wait until the broker's plugin has been told of every ACL change serve has applied so far."""
    offset = acl_offset(setup.serve)
    wait_until(lambda: broker_metric(setup.broker, "cache-acl-offset") >= offset, f"the notice of offset {offset}")


def usable(setup: CacheSetup) -> bool:
    return broker_metric(setup.broker, "cache-usable") == 1


def serve_decisions(serve: ServeProcess) -> float:
    """How many decisions serve has made (its kraft_acl_decisions_total, every result and rule)."""
    text = serve.metrics_text(PLUGIN_TOKEN)
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("kraft_acl_decisions_total{")
    )


def write_binding(user: str, topic: str) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, f"User:{user}", "*", AclOperation.WRITE,
                      AclPermissionType.ALLOW)  # fmt: skip


def churn(serve: ServeProcess, stop: threading.Event) -> None:
    """ACL changes of another principal, one after the other, until stopped: every one is a notice."""
    n = 0
    while not stop.is_set():
        grant(serve, acl("User:churn", "READ", f"churn-{n}"))
        revoke(serve, acl("User:churn", "READ", f"churn-{n}"))
        n += 1


def test_an_acl_change_bites_on_the_next_request_after_the_notice_under_churn(cache_setup: CacheSetup) -> None:
    broker, topic = cache_setup.broker, unique("bite")
    create_topics(broker, topic)
    binding = write_binding("nina", topic)
    # None matches any host (documented; confluent-kafka's hints say str)
    only_nina = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:nina", None,  # type: ignore[arg-type]
                                 AclOperation.WRITE, AclPermissionType.ALLOW)  # fmt: skip
    stop = threading.Event()
    churner = threading.Thread(target=churn, args=(cache_setup.serve, stop), daemon=True)
    churner.start()
    try:
        for _ in range(5):
            assert create(broker, [binding]) == [0]
            notice_arrived(cache_setup)
            assert produce(broker, "nina", topic) is None
            assert produce(broker, "nina", topic) is None  # remembered now
            assert delete(broker, only_nina) == [binding]
            notice_arrived(cache_setup)
            error = produce(broker, "nina", topic, timeout=8)
            assert error is not None and error.code() == TOPIC_DENIED, error
    finally:
        stop.set()
        churner.join(60)
    # Every change of any ACL makes every remembered decision unusable: under this churn nothing stays remembered
    # long (the invalidation is global; the hit rate of a real cluster is measured by the benchmark).
    assert plugin_metrics(broker, "cache-invalidation-total")["broker"]["cache-invalidation-total"] >= 10


def test_nothing_remembered_is_used_while_serve_is_frozen(cache_setup: CacheSetup) -> None:
    broker, serve, topic = cache_setup.broker, cache_setup.serve, unique("frozen")
    create_topics(broker, topic)
    grant(serve, acl("User:otto", "WRITE", topic))
    notice_arrived(cache_setup)
    assert produce(broker, "otto", topic) is None
    assert produce(broker, "otto", topic) is None  # remembered: ALLOWED
    assert serve.pid is not None
    serve.pause()
    try:
        wait_until(lambda: not usable(cache_setup), "the plugin sees the heartbeat late")
        error = produce(broker, "otto", topic, timeout=8)
        assert error is not None, "a remembered ALLOW was used while serve was frozen"
    finally:
        serve.resume()
    wait_until(lambda: usable(cache_setup), "the feed is back")
    wait_until(lambda: produce(broker, "otto", topic, timeout=8) is None, "decisions are serve's again")


def test_a_cut_feed_leaves_every_decision_to_serve(cache_setup: CacheSetup) -> None:
    broker, serve, proxy, topic = cache_setup.broker, cache_setup.serve, cache_setup.proxy, unique("cut")
    create_topics(broker, topic)
    grant(serve, acl("User:pia", "WRITE", topic))
    notice_arrived(cache_setup)
    assert produce(broker, "pia", topic) is None
    assert produce(broker, "pia", topic) is None  # remembered: ALLOWED
    proxy.set_drop_feed(True)
    try:
        wait_until(lambda: not usable(cache_setup), "the plugin sees the feed cut")
        revoke(serve, acl("User:pia", "WRITE", topic))  # a change the plugin cannot hear of
        before = serve_decisions(serve)
        error = produce(broker, "pia", topic, timeout=8)
        assert error is not None and error.code() == TOPIC_DENIED, error
        assert serve_decisions(serve) > before, "serve decided (the decisions' connection passes), not the memory"
    finally:
        proxy.set_drop_feed(False)
    wait_until(lambda: usable(cache_setup), "the feed is back")
    grant(serve, acl("User:pia", "WRITE", topic))
    notice_arrived(cache_setup)
    assert produce(broker, "pia", topic) is None


def test_a_serve_replaced_under_its_url_leaves_nothing_remembered(cache_setup: CacheSetup) -> None:
    """The serve at the plugin's URL restarts on another log whose offsets are far lower (a restored backup): the
    feed sees another instance and offsets going back, so the ALLOW remembered at a higher offset is never used."""
    broker, serve, proxy, topic = cache_setup.broker, cache_setup.serve, cache_setup.proxy, unique("replaced")
    create_topics(broker, topic)
    grant(serve, acl("User:quinn", "WRITE", topic))
    notice_arrived(cache_setup)
    assert produce(broker, "quinn", topic) is None
    assert produce(broker, "quinn", topic) is None  # remembered at serve A's offset
    other = ServeProcess(
        cache_setup.root / "serve-c", serve_props(cache_setup.root / "serve-c", cache_setup.root / "log-c")
    )
    start_serve(other)
    try:
        proxy.point_to(address(other))
        wait_until(lambda: not usable(cache_setup) or broker_metric(broker, "cache-acl-offset") < 0,
                   "the feed breaks")  # fmt: skip
        wait_until(lambda: usable(cache_setup), "the feed follows the new serve")
        error = produce(broker, "quinn", topic, timeout=8)
        assert error is not None and error.code() == TOPIC_DENIED, error
    finally:
        proxy.point_to(address(serve))
        other.stop()
    wait_until(lambda: usable(cache_setup), "the feed follows serve A again")
    wait_until(lambda: produce(broker, "quinn", topic, timeout=8) is None, "serve A's ACLs decide again")


def test_the_bound_on_remembered_decisions_holds(cache_setup: CacheSetup) -> None:
    broker, serve, prefix = cache_setup.broker, cache_setup.serve, unique("bound") + "-"
    topics = [f"{prefix}{i}" for i in range(3 * MAX_ENTRIES)]
    create_topics(broker, *topics)
    grant(serve, acl("User:ruth", "DESCRIBE", prefix, pattern="PREFIXED"))
    notice_arrived(cache_setup)
    for _ in range(2):
        assert set(topics) <= visible_topics(broker, "ruth")  # one Metadata request: a decision per topic
    entries = broker_metric(broker, "cache-entries")
    assert 0 < entries <= MAX_ENTRIES, entries


def test_decisions_from_memory_are_in_the_brokers_audit_log(cache_setup: CacheSetup) -> None:
    broker, serve, topic = cache_setup.broker, cache_setup.serve, unique("audit")
    create_topics(broker, topic)
    grant(serve, acl("User:sam", "DESCRIBE", topic), acl("User:sam", "WRITE", topic, permission="DENY"))
    notice_arrived(cache_setup)
    hits = broker_metric(broker, "cache-hit-total")
    for _ in range(3):
        error = produce(broker, "sam", topic, timeout=8)
        assert error is not None and error.code() == TOPIC_DENIED, error
    assert broker_metric(broker, "cache-hit-total") > hits
    rule = (f"MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName={topic}, patternType=LITERAL, "
            f"principal=User:sam, host=*, operation=WRITE, permissionType=DENY))")  # fmt: skip
    line = (f"Principal = User:sam is Denied operation = WRITE from host = 127.0.0.1 on resource = "
            f"Topic:LITERAL:{topic} for request = Produce with resourceRefCount = 1 based on rule {rule}")  # fmt: skip
    audit = (broker.log_dir / "authorizer.log").read_text(errors="replace")
    assert audit.count(line) >= 3, audit[-2000:]
