"""ACL management through the broker (confluent-kafka's AdminClient -> broker -> its controller's authorizer ->
the plugin -> serve): changes land in kraft-acl's log as records, bite on the next request, describe and delete
see them, the results carry Kafka's error codes (the same as StandardAuthorizer's), and the broker's own
AclCount metric is serve's count.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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

from kraftacl.api.endpoints import ACL_COUNT, DESCRIBE_ACLS
from kraftacl.harness.serve_process import ServeProcess
from tests.integration.conftest import start_or_fail
from tests.integration.plugin.broker_metrics import plugin_metrics
from tests.integration.plugin.clients import (
    ADMIN_TOKEN,
    by_principal,
    create,
    create_topics,
    delete,
    describe,
    produce,
    unique,
)
from tests.integration.plugin.conftest import PluginSetup, plugin_jar, plugin_props, serve_props, start_serve
from tests.kafka_broker import KafkaBroker

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]

LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def log_records(setup: PluginSetup) -> list[dict[str, Any]]:
    """Every record of serve's log, through `kraft-acl log dump -o json` (JSON objects)."""
    out = subprocess.run(
        [sys.executable, "-c", "from kraftacl.main import main; main()", "log", "dump", "--log-dir", str(setup.log_dir),
         "-o", "json"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    return [rec["payload"] for line in out.splitlines() for rec in json.loads(line)["records"]]


def broker_acl_count(broker: KafkaBroker) -> dict[str, int]:
    """The broker's own acls-total-count (the plugin's Monitorable metric), per role, read over JMX."""
    return {role: int(m["acls-total-count"]) for role, m in plugin_metrics(broker, "acls-total-count").items()}


def test_acls_managed_through_the_broker_are_records_in_the_log(plugin_setup: PluginSetup) -> None:
    broker = plugin_setup.broker
    topic = unique("admin")
    create_topics(broker, topic)
    assert produce(broker, "judy", topic) is not None
    bindings = [
        AclBinding(ResourceType.TOPIC, topic, LITERAL, "User:judy", "*", AclOperation.WRITE, ALLOW),
        AclBinding(ResourceType.GROUP, topic, PREFIXED, "User:judy", "*", AclOperation.READ, ALLOW),
    ]
    assert create(broker, bindings) == [0, 0]
    added = [r["data"] for r in log_records(plugin_setup) if r["type"] == "ACCESS_CONTROL_ENTRY_RECORD"]
    judy = [r for r in added if r["principal"] == "User:judy" and r["resourceName"] == topic]
    assert [(r["resourceType"], r["patternType"], r["operation"]) for r in judy] == [(2, 3, 4), (3, 4, 3)]
    assert describe(broker, by_principal("User:judy")) == sorted(bindings, key=str)
    assert produce(broker, "judy", topic) is None  # the next request, nothing restarted

    assert delete(broker, by_principal("User:judy")) == sorted(bindings, key=str)
    removed = {r["data"]["id"] for r in log_records(plugin_setup) if r["type"] == "REMOVE_ACCESS_CONTROL_ENTRY_RECORD"}
    assert {r["id"] for r in judy} <= removed
    assert describe(broker, by_principal("User:judy")) == []
    assert produce(broker, "judy", topic) is not None


def test_the_brokers_acl_count_is_serves(plugin_setup: PluginSetup) -> None:
    broker, serve = plugin_setup.broker, plugin_setup.primary
    assert create(broker, [AclBinding(ResourceType.TOPIC, unique("count"), LITERAL, "User:kim", "*",
                                      AclOperation.READ, ALLOW)]) == [0]  # fmt: skip
    status, body = serve.call(ACL_COUNT, ADMIN_TOKEN)
    assert status == 200 and body["count"] >= 1
    assert broker_acl_count(broker) == {"broker": body["count"], "controller": body["count"]}


def test_results_and_error_codes_are_standard_authorizers(
    plugin_setup: PluginSetup, kafka_sasl_broker: KafkaBroker
) -> None:
    """The same CreateAcls / DescribeAcls / DeleteAcls calls against the plugin broker and a StandardAuthorizer one."""
    name = unique("codes")
    bindings = [
        AclBinding(ResourceType.TOPIC, name, LITERAL, "User:leo", "*", AclOperation.READ, ALLOW),
        AclBinding(ResourceType.TOPIC, name, PREFIXED, "User:leo", "10.0.0.1", AclOperation.ALL, DENY),
        AclBinding(ResourceType.BROKER, "not-the-cluster", LITERAL, "User:leo", "*", AclOperation.ALTER, ALLOW),
        AclBinding(ResourceType.GROUP, name, LITERAL, "leo-without-type", "*", AclOperation.READ, ALLOW),
        AclBinding(ResourceType.TRANSACTIONAL_ID, name, LITERAL, "User:leo", "*", AclOperation.WRITE, ALLOW),
    ]
    brokers = {"plugin": plugin_setup.broker, "standard": kafka_sasl_broker}
    codes = {k: create(b, bindings) + create(b, bindings[:1]) for k, b in brokers.items()}  # then a duplicate
    assert codes["plugin"] == codes["standard"], codes
    assert KafkaError.INVALID_REQUEST in codes["plugin"]
    listed = {k: describe(b, by_principal("User:leo")) for k, b in brokers.items()}
    assert listed["plugin"] == listed["standard"] and len(listed["plugin"]) == 3, _what_serves_hold(plugin_setup)
    # None matches any principal and any host (documented; confluent-kafka's hints say str)
    narrow = AclBindingFilter(ResourceType.TOPIC, name, ResourcePatternType.MATCH, None, None, AclOperation.ANY,  # type: ignore[arg-type]
                              AclPermissionType.ANY)  # fmt: skip
    assert describe(brokers["plugin"], narrow) == describe(brokers["standard"], narrow)
    deleted = {k: delete(b, by_principal("User:leo")) for k, b in brokers.items()}
    assert deleted["plugin"] == deleted["standard"] == listed["plugin"]


def _what_serves_hold(setup: PluginSetup) -> str:
    """For a failed comparison: what each serve holds for User:leo (asked directly), and the end of its output."""
    filter_leo = {"filter": {"principal": "User:leo"}}
    return "\n".join(
        f"{serve.url('CONTROLLER')}: {serve.call(DESCRIBE_ACLS, ADMIN_TOKEN, filter_leo)}\n{serve.output()[-1500:]}"
        for serve in setup.serves
    )


def test_describe_through_the_broker_reads_the_brokers_own_writes(tmp_path: Path) -> None:
    """A DescribeAcls right after a CreateAcls or DeleteAcls sees it, even when the serve the broker asks first has
    not applied the write yet: a broker-role serve that reads its log only when asked (metadata.log.poll.on.request,
    its polls a minute apart), the controller after it. The write is made by the broker's controller-side plugin
    instance, the describe by its broker-side one: the describe asks `consistent` (every acknowledged write)."""
    jar = plugin_jar()
    log_dir = tmp_path / "log"
    controller = ServeProcess(tmp_path / "serve-a", serve_props(tmp_path / "serve-a", log_dir))
    props = serve_props(tmp_path / "serve-b", log_dir, controller=False)
    props.update({"metadata.log.poll.on.request": "true", "metadata.log.poll.interval.ms": "60000"})
    lazy = ServeProcess(tmp_path / "serve-b", props)
    broker: KafkaBroker | None = None
    try:
        for serve in (controller, lazy):
            start_serve(serve)
        broker_props = plugin_props([lazy.url("CONTROLLER"), controller.url("CONTROLLER")], tmp_path / "plugin.token")
        broker_props["kraft.acl.cache.enabled"] = "false"
        broker = KafkaBroker(tmp_path / "broker", authorizer=True, extra_props=broker_props, classpath=str(jar))
        start_or_fail(broker)
        for n in range(5):
            binding = AclBinding(ResourceType.TOPIC, f"ryw-{n}", LITERAL, "User:ryw", "*", AclOperation.READ, ALLOW)
            assert create(broker, [binding]) == [0]
            assert describe(broker, by_principal("User:ryw")) == [binding], f"round {n}: the write was not read"
            assert delete(broker, by_principal("User:ryw")) == [binding]
            assert describe(broker, by_principal("User:ryw")) == [], f"round {n}: the delete was not read"
    finally:
        if broker is not None:
            broker.stop()
        for serve in (lazy, controller):
            serve.stop()
