"""The pipeline's Kafka source against the real broker: a Kafka-backed log written by `kraft-acl acls
--bootstrap-server` (and a few bigger batches from the same writer class), read by Spark's Kafka source
(the connector jars the set-up fetched) and decoded by the library inside Spark tasks.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kraftacl.authorizer.state.node import AclNode
from kraftacl.authorizer.state.records import acl_from_record
from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLog, KafkaLogConfig
from kraftacl.pipeline.jobs.changes import changes
from kraftacl.pipeline.jobs.fold import fold
from kraftacl.pipeline.sources.log import LogSource, load_events
from kraftacl.snapshots.format import SnapshotReader
from tests.kafka_broker import KafkaBroker
from tests.pipeline.logs import random_log

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def _acls(kraft_acl: list[str], *args: str) -> None:
    done = subprocess.run([*kraft_acl, "acls", *args], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_fold_and_changes_read_the_topic_written_by_kraft_acl_acls(
    kafka_broker: KafkaBroker, kraft_acl: list[str], spark: SparkSession, tmp_path: Path
) -> None:
    topic = f"pipeline-{uuid.uuid4().hex[:8]}"
    where = ["--bootstrap-server", kafka_broker.bootstrap_servers, "--metadata-topic", topic]
    _acls(kraft_acl, *where, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
    _acls(kraft_acl, *where, "--add", "--deny-principal", "User:bob", "--operation", "All", "--topic", "orders")
    config = KafkaLogConfig(kafka_broker.bootstrap_servers, topic=topic)
    generated = random_log(tmp_path / "source", seed=51, batches=12)
    with KafkaLog(config, writer=True) as writer:  # the file log's batches, appended as the controller would
        for _, _, ts, records in generated.batches:
            writer.append(records, timestamp_ms=ts)
    _acls(
        kraft_acl,
        *where,
        "--remove",
        "--topic",
        "orders",
        "--deny-principal",
        "User:bob",
        "--operation",
        "All",
        "--force",
    )

    events = load_events(spark, LogSource(bootstrap=kafka_broker.bootstrap_servers, topic=topic))
    with KafkaLog(KafkaLogConfig(kafka_broker.bootstrap_servers, topic=topic, create_topic=False)) as reader:
        hwm = reader.high_watermark()
        assert (events.log_start, events.high_watermark) == (0, hwm)
        for offset in (2, 2 + generated.high_watermark, hwm):
            folded = fold(events, offset, tmp_path / f"{offset}.checkpoint")
            node = AclNode(reader)
            node.start(to_offset=offset)
            got = {r.id: acl_from_record(r) for r in SnapshotReader(folded.path).records()}
            assert got == dict(node.image.acls.items()), f"offset {offset}"
    removed = changes(events.events, 2 + generated.high_watermark, hwm).collect()
    assert [(r["change"], r["principal"], r["offset"]) for r in removed] == [("removed", "User:bob", hwm - 1)]
