"""serve on a Kafka-backed log (a real KRaft broker): several serve processes tail one topic, one controller
writes, a second controller fences the first, and a broker outage is served through and reported."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kraftacl.api.endpoints import CREATE_ACLS, STATUS
from tests.integration.conftest import _start_broker
from tests.kafka_broker import KafkaBroker
from tests.server.serve_process import ADMIN_TOKEN, ServeProcess, alice_reads, base_properties

ACL = {
    "resource_type": "TOPIC",
    "resource_name": "orders",
    "pattern_type": "LITERAL",
    "principal": "User:alice",
    "host": "*",
    "operation": "READ",
    "permission_type": "ALLOW",
}


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


def test_brokers_tail_one_topic_and_a_second_controller_fences_the_first(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    topic = f"kraft-acl-serve-{uuid.uuid4().hex[:8]}"
    with (
        ServeProcess(
            tmp_path / "c1", _kafka_props(tmp_path / "c1", kafka_broker, topic, "broker,controller")
        ).start() as c1,
        ServeProcess(tmp_path / "b", _kafka_props(tmp_path / "b", kafka_broker, topic, "broker")).start() as reader,
    ):
        assert c1.call(CREATE_ACLS, ADMIN_TOKEN, {"acls": [ACL]}, listener="CLIENT")[1]["results"][0]["error_code"] == 0
        assert alice_reads(c1) == "ALLOWED"
        _wait(lambda: alice_reads(reader) == "ALLOWED", "the broker-role serve did not see the controller's ACL")
        assert reader.call(CREATE_ACLS, ADMIN_TOKEN, {"acls": [ACL]}, listener="CLIENT")[0] == 421
        with ServeProcess(
            tmp_path / "c2", _kafka_props(tmp_path / "c2", kafka_broker, topic, "broker,controller")
        ).start() as c2:
            second = dict(ACL, resource_name="payments")
            assert (
                c2.call(CREATE_ACLS, ADMIN_TOKEN, {"acls": [second]}, listener="CLIENT")[1]["results"][0]["error_code"]
                == 0
            )
            status, fenced = c1.call(CREATE_ACLS, ADMIN_TOKEN, {"acls": [dict(ACL, resource_name="late")]}, "CLIENT")
            assert status == 421, fenced
            assert fenced["error"]["code"] == "NOT_CONTROLLER" and "took over" in fenced["error"]["message"]
            _wait(lambda: alice_reads(reader, "payments") == "ALLOWED", "the reader did not follow the new controller")
            assert alice_reads(reader, "late") == "DENIED"


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
        serve.call(CREATE_ACLS, ADMIN_TOKEN, {"acls": [ACL]}, listener="CLIENT")
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
            metrics = httpx.get(serve.url("CLIENT") + "/metrics").text
            assert "kraft_acl_log_unreachable 1.0" in metrics
            refused = serve.call(CREATE_ACLS, ADMIN_TOKEN, {"acls": [dict(ACL, resource_name="x")]}, listener="CLIENT")
            assert refused[0] in (421, 503), refused
        finally:
            restartable_broker.start()
        _wait(lambda: httpx.get(status_url).json().get("last_error") is None, "serve did not recover", 90)
        status = httpx.get(status_url).json()
        assert status["lag"] == 0 and status["ready"] is True and status["following"] is True
