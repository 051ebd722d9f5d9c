"""The Kafka clients the cluster scenario drives through real brokers (confluent-kafka): an admin for topics, leaders
and ACLs (CreateAcls / DeleteAcls go through a broker's authorizer, the kraft-acl plugin), and producer and consumer
loops that record every decision a broker made for them (a delivered record is an ALLOW of WRITE, a
TOPIC_AUTHORIZATION_FAILED a DENY).

Thread safety: an `Admin` may be shared (confluent-kafka's AdminClient is thread-safe); each loop owns its client and
one thread, and appends to its own list of `Outcome`s (read after `stop`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

DENIED_CODES = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED}
# librdkafka's own lines (every refused connection to a killed broker) go to this logger, not to stderr.
CLIENT_LOG: dict[str, Any] = {"logger": logging.getLogger("kraftacl.harness.kafka")}


class AdminError(RuntimeError):
    """A broker refused or did not answer an admin call (its outcome may be unknown); the message is Kafka's."""


@dataclass(frozen=True, slots=True)
class Acl:
    """One LITERAL topic ACL, allow, from any host (what the scenario grants and revokes)."""

    principal: str
    operation: str  # READ, WRITE, ...
    topic: str
    resource_type: str = "TOPIC"

    def binding(self) -> AclBinding:
        return AclBinding(*self._fields())

    def filter(self) -> AclBindingFilter:
        """The filter matching exactly this ACL."""
        return AclBindingFilter(*self._fields())

    def _fields(self) -> tuple[Any, ...]:
        resource = ResourceType[self.resource_type]
        operation = AclOperation[self.operation]
        return (
            resource,
            self.topic,
            ResourcePatternType.LITERAL,
            self.principal,
            "*",
            operation,
            AclPermissionType.ALLOW,
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """One client request a broker decided: when it was sent and answered, on which partition, and how."""

    sent: float  # time.time()
    done: float
    partition: int
    allowed: bool  # delivered / fetched (False: an authorization error)
    error: str | None = None  # any other failure (a leader moving, a timeout): neither allow nor deny


class Admin:
    """An AdminClient on some brokers: topics, partition leaders and ACLs (each call bounded by `timeout`)."""

    def __init__(self, conf: dict[str, Any], timeout: float = 10.0) -> None:
        # librdkafka sends CreateAcls and DeleteAcls to the broker the metadata names controller: look again
        # every second, so a dead one is not waited for until the request times out.
        self.client = AdminClient(
            {"topic.metadata.refresh.interval.ms": 1000, "reconnect.backoff.max.ms": 1000, **CLIENT_LOG, **conf}
        )
        self.timeout = timeout

    def broker_count(self) -> int:
        return len(self.client.list_topics(timeout=self.timeout).brokers)

    def create_topics(self, names: Sequence[str], partitions: int, replication: int) -> None:
        futures = self.client.create_topics(
            [NewTopic(n, partitions, replication) for n in names], request_timeout=self.timeout
        )
        for future in futures.values():
            try:
                future.result()
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise

    def leaders(self, topic: str) -> dict[int, int]:
        """partition -> leader node id (-1 while none)."""
        meta = self.client.list_topics(topic=topic, timeout=self.timeout).topics[topic]
        return {p: int(m.leader) for p, m in meta.partitions.items()}

    def in_sync(self, topic: str) -> dict[int, list[int]]:
        meta = self.client.list_topics(topic=topic, timeout=self.timeout).topics[topic]
        return {p: list(m.isrs) for p, m in meta.partitions.items()}

    def create_acls(self, acls: Sequence[Acl]) -> None:
        """CreateAcls through a broker; AdminError when it is refused or times out (outcome unknown)."""
        try:
            futures = self.client.create_acls([a.binding() for a in acls], request_timeout=self.timeout)
            for future in futures.values():
                future.result()
        except KafkaException as exc:
            raise AdminError(str(exc.args[0])) from exc

    def create_acls_acknowledged(self, acls: Sequence[Acl], within_s: float = 60.0) -> float:
        """CreateAcls, sent again after a refusal or timeout (safe: identical bindings are de-duplicated) until a broker
        acknowledges it; when it was acknowledged (time.time()). AdminError with the last refusal after `within_s`."""
        deadline = time.monotonic() + within_s
        while True:
            try:
                self.create_acls(acls)
                return time.time()
            except AdminError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def delete_acls(self, acls: Sequence[Acl]) -> int:
        """DeleteAcls through a broker; how many ACLs the filters matched (AdminError as for create)."""
        try:
            futures = self.client.delete_acls([a.filter() for a in acls], request_timeout=self.timeout)
            return sum(len(future.result()) for future in futures.values())
        except KafkaException as exc:
            raise AdminError(str(exc.args[0])) from exc


class ClientLoop:
    """A thread that keeps asking brokers something and records each decision."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.outcomes: list[Outcome] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> ClientLoop:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        raise NotImplementedError


class ProducerLoop(ClientLoop):
    """Produce one record at a time to one partition of `topic` (its leader decides), about every `interval_s`: one
    loop per partition, so a broker that answers late holds up only its own partition's loop."""

    def __init__(self, conf: dict[str, Any], topic: str, partition: int, interval_s: float = 0.05) -> None:
        super().__init__(f"produce-{conf.get('sasl.username', '')}-{topic}-{partition}")
        self.topic = topic
        self.partition = partition
        self.interval_s = interval_s
        self.producer = Producer(
            {
                **CLIENT_LOG,
                **conf,
                "acks": 1,
                "enable.idempotence": False,
                "linger.ms": 0,
                "message.timeout.ms": 5000,
                "request.timeout.ms": 4000,
                "topic.metadata.refresh.interval.ms": 1000,  # an ACL granted later is seen within a second
                "reconnect.backoff.max.ms": 1000,
            }
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            sent = time.time()
            try:
                self.producer.produce(
                    self.topic, b"x", partition=self.partition, on_delivery=self._delivered(sent, self.partition)
                )
            except KafkaException as exc:  # refused at once: the client remembers the broker's last DENY
                denied = exc.args[0].code() in DENIED_CODES
                self.outcomes.append(Outcome(sent, time.time(), self.partition, False, None if denied else str(exc)))
            except BufferError as exc:
                self.outcomes.append(Outcome(sent, time.time(), self.partition, False, str(exc)))
            self.producer.flush(6)
            self._stop.wait(self.interval_s)
        self.producer.flush(6)

    def _delivered(self, sent: float, partition: int) -> Any:
        def on_delivery(err: KafkaError | None, msg: Any) -> None:
            done = time.time()
            if err is None:
                self.outcomes.append(Outcome(sent, done, partition, True))
            elif err.code() in DENIED_CODES:
                self.outcomes.append(Outcome(sent, done, partition, False))
            else:
                self.outcomes.append(Outcome(sent, done, partition, False, err.name()))

        return on_delivery


class ConsumerLoop(ClientLoop):
    """Consume `topic` in a group; every fetch answer (records or none) within a poll is recorded as allowed."""

    def __init__(self, conf: dict[str, Any], topic: str, group: str) -> None:
        super().__init__(f"consume-{conf.get('sasl.username', '')}-{topic}")
        self.consumer = Consumer(
            {
                **CLIENT_LOG,
                **conf,
                "group.id": group,
                "auto.offset.reset": "latest",
                "enable.auto.commit": True,
                "session.timeout.ms": 10000,
                "topic.metadata.refresh.interval.ms": 1000,
                "reconnect.backoff.max.ms": 1000,
            }
        )
        self.topic = topic

    def _run(self) -> None:
        self.consumer.subscribe([self.topic])
        while not self._stop.is_set():
            sent = time.time()
            msg = self.consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            partition = msg.partition()
            partition = -1 if partition is None else int(partition)
            if err is None:
                self.outcomes.append(Outcome(sent, time.time(), partition, True))
            elif err.code() in DENIED_CODES:
                self.outcomes.append(Outcome(sent, time.time(), partition, False))
            elif err.code() != KafkaError._PARTITION_EOF:
                self.outcomes.append(Outcome(sent, time.time(), partition, False, err.name()))
        self.consumer.close()
