"""The one real three-node KRaft cluster the cluster tests share (scripts/kafka-cluster.sh through
kraftacl/harness/cluster): the kraft-acl plugin on every broker, a `kraft-acl serve` beside each (two with the
controller role), all on one Kafka-backed log with replication factor 3 and min.insync.replicas 2.

Started once per session (about half a minute) and stopped at the end; with CI=true a missing Java or Maven fails
the tests, elsewhere they skip loudly, like every Kafka test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kraftacl.harness.cluster.deployment import Deployment
from kraftacl.harness.cluster.kafka_cluster import KafkaScriptError
from kraftacl.harness.cluster.workload import USERS
from kraftacl.harness.plugin_jar import PluginBuildError
from kraftacl.harness.serve_process import ServeProcessError
from tests.integration.conftest import require_kafka


@pytest.fixture(scope="session")
def sidecar_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """Three KRaft nodes, the plugin on each broker, a serve beside each (serves 1 and 2: controller role)."""
    require_kafka()
    root = tmp_path_factory.mktemp("cluster")
    try:
        cluster = Deployment(root, users=USERS)
    except PluginBuildError as exc:
        pytest.fail(f"KAFKA PLUGIN COULD NOT BE BUILT: {exc}", pytrace=False)
    try:
        cluster.start()
    except (KafkaScriptError, ServeProcessError, TimeoutError) as exc:
        cluster.stop()
        pytest.fail(f"THE CLUSTER DID NOT START: {exc}\n{cluster.cluster.log_tail()}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()
