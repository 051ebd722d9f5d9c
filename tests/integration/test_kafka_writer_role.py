"""The Kafka-backed log's writer role on a real broker: a claim fences every earlier writer (whose appends then never
reach the log) and can be made again after being fenced; a released role refuses appends; a writer whose earlier
append had an unknown outcome that did land refuses to write on a stale view; and Kafka's group protocol elects
exactly one of several candidates, hands the role over at once when the elected one leaves, and elects again after
a rejoin."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient

from kraftacl.metadata_log.backends.kafka_topic.election import WriterElection
from kraftacl.metadata_log.backends.kafka_topic.log import (
    KafkaLog,
    KafkaLogConfig,
    LogFencedError,
    LogMovedError,
    NotWriterError,
)
from kraftacl.metadata_log.records import RemoveAccessControlEntryRecord
from kraftacl.metadata_log.uuids import new_uuid
from tests.kafka_broker import KafkaBroker


def _config(broker: KafkaBroker) -> KafkaLogConfig:
    return KafkaLogConfig(broker.bootstrap_servers, topic=f"kraft-acl-role-{uuid.uuid4().hex[:8]}", timeout_s=20)


def _record() -> list[RemoveAccessControlEntryRecord]:
    return [RemoveAccessControlEntryRecord(new_uuid())]


def test_a_claim_fences_the_earlier_writer_and_a_fenced_writer_can_claim_again(kafka_broker: KafkaBroker) -> None:
    config = _config(kafka_broker)
    with KafkaLog(config, writer=True) as first, KafkaLog(config) as second:
        assert first.append(_record()).base_offset == 0 and first.is_writer
        with pytest.raises(NotWriterError):
            second.append(_record())  # opened as a reader: it holds no role
        assert second.claim_writer() == first.epoch + 1
        with pytest.raises(LogFencedError):
            first.append(_record())  # never reaches the log
        assert second.append(_record()).base_offset == 1
        assert first.claim_writer() == second.epoch + 1  # fenced once is not fenced for good
        assert first.append(_record()).base_offset == 2
        with pytest.raises(LogFencedError):
            second.append(_record())
        second.release_writer()
        with pytest.raises(NotWriterError):
            second.append(_record())
        epochs = [(b.base_offset, b.epoch) for b in first.read(0)]
    assert epochs == [(0, 1), (1, 2), (2, 3)]


def test_an_append_is_visible_to_every_reader_when_it_returns(kafka_broker: KafkaBroker) -> None:
    """The broker answers a transaction's commit before it writes the markers; until they land a read_committed
    reader still stops below the batch. `append` returns only once they have: a shell or a broker-role serve asked
    right after it sees the batch (CI once saw a shell command miss a batch appended just before it)."""
    config = _config(kafka_broker)
    with KafkaLog(config, writer=True) as writer, KafkaLog(config) as reader:
        for n in range(40):
            result = writer.append(_record())
            assert reader.high_watermark() == result.last_offset + 1 == n + 1
            assert [b.base_offset for b in reader.read(n)] == [n]


def test_a_writer_refuses_to_write_on_a_view_an_uncertain_append_changed(kafka_broker: KafkaBroker) -> None:
    config = _config(kafka_broker)
    with KafkaLog(config, writer=True) as log:
        landed = log.append(_record())
        # As after a commit whose answer was lost: the append may or may not have landed (it did).
        log._needs_reset, log._next = True, landed.base_offset
        with pytest.raises(LogMovedError, match="was committed"):
            log.append(_record())
        assert log.high_watermark() == 1  # nothing more was written
        assert log.append(_record()).base_offset == 1  # the caller caught up: writes go on


def test_the_group_elects_one_writer_and_hands_over_when_it_leaves(kafka_broker: KafkaBroker) -> None:
    config = _config(kafka_broker)
    KafkaLog(config).close()  # the topic the candidates subscribe to
    changes: dict[str, list[bool]] = {"a": [], "b": []}
    changed = threading.Condition()

    def on_change(name: str) -> object:
        def record(elected: bool) -> None:
            with changed:
                changes[name].append(elected)
                changed.notify_all()

        return record

    elections = {n: WriterElection(config, n, on_change(n), group_id=f"g-{config.topic}").start() for n in "ab"}  # type: ignore[arg-type]
    try:
        _until(
            lambda: (
                sum(e.elected for e in elections.values()) == 1 and all(e.status().settled for e in elections.values())
            )
        )
        active = next(n for n, e in elections.items() if e.elected)
        other = "b" if active == "a" else "a"
        assert _holders(kafka_broker, f"g-{config.topic}") == {active}  # what an operator sees describing the group
        started = time.monotonic()
        elections[active].stop()  # a clean leave: no session timeout to wait for
        _until(lambda: elections[other].elected)
        assert time.monotonic() - started < 5
        assert changes[active] == [True, False] and changes[other] == [True]
        elections[other].rejoin()  # fenced while elected: the group decides afresh, and it is the only member
        _until(lambda: elections[other].status().elections == 2)
        assert changes[other] == [True, False, True]
    finally:
        for election in elections.values():
            election.stop()


def _holders(broker: KafkaBroker, group: str) -> set[str]:
    """The client ids of the group's members assigned partition 0 (DescribeGroups, as kafka-consumer-groups.sh)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # kept: a dropped client never answers
    members = admin.describe_consumer_groups([group], request_timeout=20)[group].result(timeout=30).members
    return {m.client_id for m in members if any(tp.partition == 0 for tp in m.assignment.topic_partitions)}


def _until(check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the group did not get there in time"
        time.sleep(0.05)
