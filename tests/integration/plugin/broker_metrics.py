"""The plugin's own metrics in a running broker (group `plugins`, one MBean per role: the broker's authorizer and,
on a combined node, the controller's), read over JMX by attaching to the broker's JVM with kafka-plugin's
JmxAttribute tool (no JMX port needed)."""

from __future__ import annotations

import subprocess

from kraftacl.harness.plugin_jar import TEST_CLASSES
from tests.kafka_broker import KafkaBroker


def plugin_metrics(broker: KafkaBroker, *names: str) -> dict[str, dict[str, float]]:
    """{role: {metric: value}} for these metric names (one JVM attach for all)."""
    assert broker.pid is not None
    out = subprocess.run(
        ["java", "-cp", str(TEST_CLASSES), "io.github.kraftacl.plugin.JmxAttribute", str(broker.pid),
         "kafka.server:type=plugins,*", ",".join(names)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    metrics: dict[str, dict[str, float]] = {}
    for line in out.splitlines():
        parts = line.split("\t")  # name, value for one attribute; name, attribute, value for several
        mbean, attribute, value = parts if len(parts) == 3 else (parts[0], names[0], parts[1])
        metrics.setdefault(mbean.rsplit("role=", 1)[-1], {})[attribute] = float(value)
    return metrics


def broker_metric(broker: KafkaBroker, name: str) -> float:
    """One metric of the broker role's authorizer (the one that decides clients' requests)."""
    return plugin_metrics(broker, name)["broker"][name]
