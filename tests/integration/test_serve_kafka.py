"""serve on a Kafka-backed log (a real KRaft broker): several serve processes tail one topic, Kafka's group protocol
elects the one controller that writes, a standby takes over when it dies, and a broker outage is served through
and reported."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kraftacl.api.endpoints import ACL_IMAGE, CREATE_ACLS, DESCRIBE_ACLS, IMPORT_ACLS, METRICS_PATH, STATUS
from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLog, KafkaLogConfig
from tests.integration.conftest import _start_broker
from tests.kafka_broker import KafkaBroker
from tests.server.serve_process import ADMIN_TOKEN, ALICE_READ_ORDERS, ServeProcess, alice_reads, base_properties

ACL = ALICE_READ_ORDERS


def _kafka_props(work: Path, broker: KafkaBroker, topic: str, roles: str) -> dict[str, str]:
    props = base_properties(work, process_roles=roles)
    del props["metadata.log.dir"]
    props["metadata.log.bootstrap.servers"] = broker.bootstrap_servers
    props["metadata.log.topic"] = topic
    props["metadata.log.snapshot.dir"] = str(work / "snapshots")
    props["metadata.log.poll.interval.ms"] = "50"
    return props


def _wait(check: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _create(serve: ServeProcess, resource: str) -> tuple[int, dict[str, Any]]:
    """(status, answer) of an admin's create of ACL on `resource`."""
    answer: tuple[int, dict[str, Any]] = serve.call(
        CREATE_ACLS, ADMIN_TOKEN, {"acls": [dict(ACL, resource_name=resource)]}, listener="CLIENT"
    )
    return answer


def _written(serve: ServeProcess, resource: str, within: float) -> float:
    """Seconds until serve acknowledges a create (421 and 503 are retried), failing after `within`."""
    started = time.monotonic()
    while True:
        status, answer = _create(serve, resource)
        if status == 200:
            assert answer["results"][0]["error_code"] == 0, answer
            return time.monotonic() - started
        assert status in (421, 503), answer
        assert time.monotonic() - started < within, f"no write through {serve.url('CLIENT')}: {answer}"
        time.sleep(0.2)


def _controller(serve: ServeProcess) -> dict[str, object]:
    status: dict[str, object] = httpx.get(serve.url("CLIENT") + STATUS.path).json()["controller"]
    return status


def test_brokers_tail_one_topic_and_a_standby_controller_takes_over_by_itself(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    """One active controller at a time (Kafka's group elects it), standbys answer 421, the standby takes over when the
    active one dies, a controller fenced by an outside writer gets the role back, a restarted one is a standby."""
    topic = f"kraft-acl-serve-{uuid.uuid4().hex[:8]}"
    c1_props = _kafka_props(tmp_path / "c1", kafka_broker, topic, "broker,controller")
    with (
        ServeProcess(tmp_path / "c1", c1_props).start() as c1,
        ServeProcess(tmp_path / "b", _kafka_props(tmp_path / "b", kafka_broker, topic, "broker")).start() as reader,
    ):
        assert _create(c1, "orders")[1]["results"][0]["error_code"] == 0  # waits for the first election
        assert _controller(c1)["active"] is True and _controller(reader) is None
        assert alice_reads(c1) == "ALLOWED"
        _wait(lambda: alice_reads(reader) == "ALLOWED", "the broker-role serve did not see the controller's ACL")
        assert _create(reader, "orders")[0] == 421
        with ServeProcess(
            tmp_path / "c2", _kafka_props(tmp_path / "c2", kafka_broker, topic, "broker,controller")
        ).start() as c2:
            status, standby = _create(c2, "payments")
            assert status == 421 and "standby controller" in standby["error"]["message"], standby
            assert _controller(c2)["active"] is False
            c1.stop(signal.SIGKILL)
            _written(c2, "payments", within=60)  # the group's session timeout (6 s), then c2's claim
            assert _controller(c2)["active"] is True and _controller(c2)["elections"] == 1
            _wait(lambda: alice_reads(reader, "payments") == "ALLOWED", "the reader did not follow the new controller")

            config = KafkaLogConfig(kafka_broker.bootstrap_servers, topic=topic, timeout_s=30)
            with KafkaLog(config, writer=True):  # an outside writer (kraft-acl acls --bootstrap-server) fences c2
                status, fenced = _create(c2, "late")
            assert status == 421 and fenced["error"]["code"] == "NOT_CONTROLLER", fenced
            assert "took over" in fenced["error"]["message"], fenced
            _written(c2, "late", within=60)  # c2 rejoins the group, is elected again and claims the log back
            assert _controller(c2)["elections"] == 2

            c1_again = ServeProcess(tmp_path / "c1", c1_props).start()
            try:  # the sticky assignment keeps the active controller: the restarted one is a standby
                assert _create(c1_again, "restarted")[0] == 421
            finally:
                c1_again.stop()
        _wait(lambda: alice_reads(reader, "late") == "ALLOWED", "the reader did not follow the reclaimed log")


@pytest.fixture(scope="module")
def restartable_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A broker this module stops and starts."""
    broker = _start_broker(tmp_path_factory, "kafka-serve-outage")
    try:
        yield broker
    finally:
        broker.stop()


def test_serve_answers_through_a_log_outage_and_reports_it(restartable_broker: KafkaBroker, tmp_path: Path) -> None:
    topic = f"kraft-acl-outage-{uuid.uuid4().hex[:8]}"
    props = _kafka_props(tmp_path, restartable_broker, topic, "broker,controller")
    props["metadata.log.kafka.socket.timeout.ms"] = "3000"
    with ServeProcess(tmp_path, props).start() as serve:
        assert _create(serve, "orders")[0] == 200
        restartable_broker.stop(hard=True)
        try:
            status_url = serve.url("CLIENT") + STATUS.path
            _wait(lambda: httpx.get(status_url).json().get("last_error") is not None, "the outage was not reported", 60)
            response = httpx.get(status_url)
            status = response.json()  # not following: not ready (503), yet deciding with its last state
            assert response.status_code == 503 and status["ready"] is False and status["following"] is False
            assert status["diverged"] is None and status["failures"] >= 1 and status["failing_since"] is not None
            assert status["lag"] is None and status["last_applied_offset"] == 0
            assert alice_reads(serve) == "ALLOWED"  # the last consistent state is still served
            metrics = httpx.get(serve.url("CLIENT") + METRICS_PATH).text
            assert "kraft_acl_log_unreachable 1.0" in metrics
            refused = _create(serve, "x")
            assert refused[0] in (421, 503), refused
        finally:
            restartable_broker.start()
        _wait(lambda: httpx.get(status_url).json().get("last_error") is None, "serve did not recover", 90)
        status = httpx.get(status_url).json()
        assert status["lag"] == 0 and status["ready"] is True and status["following"] is True


def test_the_reader_of_a_kafka_log_answers_heavy_reads(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    """heavy.reads.process on a Kafka-backed log: the reader follows the topic with its own snapshot directory (not
    the controller's), and describe, the image and a write read back at once all come through it."""
    topic = f"kraft-acl-reader-{uuid.uuid4().hex[:8]}"
    props = _kafka_props(tmp_path, kafka_broker, topic, "broker,controller")
    props["heavy.reads.process"] = "on"
    with ServeProcess(tmp_path / "serve", props).start() as serve, serve.client(token=ADMIN_TOKEN) as admin:
        _wait(lambda: "heavy reads: reader process" in serve.output(), "the reader was announced", 60)
        for i in range(3):
            created = admin.post(CREATE_ACLS.path, json={"acls": [dict(ACL, resource_name=f"orders-{i}")]}).json()
            new_id = created["results"][0]["id"]
            described = admin.post(DESCRIBE_ACLS.path, json={"min_offset": created["offset"]}).json()
            assert new_id in {a["id"] for a in described["acls"]}
            assert new_id in {a["id"] for a in admin.get(ACL_IMAGE.path).json()["acls"]}
        metrics = serve.metrics_text(ADMIN_TOKEN)
        assert 'kraft_acl_heavy_reads_total{by="reader"} 6.0' in metrics, metrics
        assert 'kraft_acl_heavy_reads_total{by="serve"} 0.0' in metrics


def test_an_import_larger_than_a_kafka_message_is_written_and_followed(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    """40,000 ACLs (about 3 MB of records, three times the producer's 1 MB message limit) imported through a
    Kafka-backed controller serve: one transaction of several batches, followed whole by a broker-role serve."""
    topic = f"kraft-acl-bulk-{uuid.uuid4().hex[:8]}"
    count = 40_000
    acls = [dict(ACL, resource_name=f"bulk-{n}", principal=f"User:b{n % 13}") for n in range(count)]
    controller_props = _kafka_props(tmp_path / "c", kafka_broker, topic, "broker,controller")
    follower_props = _kafka_props(tmp_path / "f", kafka_broker, topic, "broker")
    with (
        ServeProcess(tmp_path / "controller", controller_props).start() as controller,
        ServeProcess(tmp_path / "follower", follower_props).start() as follower,
    ):
        status, out = controller.call(IMPORT_ACLS, ADMIN_TOKEN, {"acls": acls})
        assert status == 200, out
        assert out["added"] == count and (out["base_offset"], out["offset"]) == (0, count - 1), out

        def described(serve: ServeProcess) -> int:
            answer: dict[str, Any] = serve.call(DESCRIBE_ACLS, ADMIN_TOKEN, {}, listener="CLIENT")[1]
            return len(answer["acls"])

        _wait(lambda: described(follower) == count, "the follower applied the whole import", 60)
        assert described(controller) == count
    log = KafkaLog(KafkaLogConfig(kafka_broker.bootstrap_servers, topic=topic, create_topic=False))
    try:
        batches = list(log.read(0))
    finally:
        log.close()
    assert len(batches) >= 3, "written as several batches, each one Kafka message"
    assert [b.base_offset for b in batches] == [0, *(b.next_offset for b in batches[:-1])], "contiguous offsets"
    assert sum(len(b.records) for b in batches) == count
    assert len({b.epoch for b in batches}) == 1 and len({b.timestamp_ms for b in batches}) == 1
