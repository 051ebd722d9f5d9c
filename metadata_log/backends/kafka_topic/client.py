"""The Kafka side of the Kafka-backed log: where the topic is and how clients reach it (`KafkaLogConfig`, with
settings tuned so a dead broker costs seconds, not minutes), Kafka's errors mapped to the log's, and the topic's
creation and safety check.

Immutable config and stateless functions; confluent-kafka is imported only in this package (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kraftacl.metadata_log.backends.kafka_topic.message import DEFAULT_TOPIC
from kraftacl.metadata_log.errors import LogError

KAFKA_LOGGER = logging.getLogger("kraft_acl.kafka")


class KafkaLogError(LogError):
    """A Kafka-side failure, with the topic and the reason."""


class LogUnavailableError(KafkaLogError):
    """The broker did not answer in time (down, unreachable, or partitioned)."""


class LogMovedError(LogUnavailableError):
    """An earlier append of unknown outcome turned out committed: nothing written, catch up and validate again."""


class LogFencedError(KafkaLogError):
    """Another writer with the same transactional id took over; no append until this one claims the role again."""


class NotWriterError(KafkaLogError):
    """An append on a KafkaLog that does not hold the writer role (a reader, or it released the role)."""


class UnsafeTopicError(KafkaLogError):
    """The topic exists with settings that would lose or reorder events."""


# What a dead or restarted broker costs every client of the log (measured in BENCHMARKS.md, "cluster"): librdkafka
# retries a lost connection after 100 ms doubling up to 10 s by default, so a broker back after a crash was seen
# seconds late; at most 1 s here. Leaders and coordinators that moved are looked up again on the first error anyway.
FAILOVER: dict[str, Any] = {
    "reconnect.backoff.max.ms": 1000,
    "retry.backoff.max.ms": 500,
}
# An open transaction holds back every read_committed reader (the last stable offset) until it ends: a writer that
# hangs mid-append (SIGSTOP, a long pause) blocks new ACLs for at most this long even with no other writer to fence
# it (Kafka's default is 60 s). An append's transaction lasts milliseconds.
TRANSACTION: dict[str, Any] = {"transaction.timeout.ms": 15000}


@dataclass(frozen=True)
class KafkaLogConfig:
    """Where the log lives and how to reach it; `client` passes security settings straight to librdkafka."""

    bootstrap_servers: str
    topic: str = DEFAULT_TOPIC
    transactional_id: str | None = None
    replication_factor: int = 1  # -1: the brokers' default.replication.factor
    min_insync_replicas: int | None = 1  # None: the brokers' min.insync.replicas
    create_topic: bool = True
    allow_unsafe_topic: bool = False
    timeout_s: float = 30.0
    client: dict[str, str] = field(default_factory=dict)

    def base(self) -> dict[str, Any]:
        """Settings shared by every client (FAILOVER first, `client` last, so it overrides); librdkafka's own log
        lines go to the `kraft_acl.kafka` logger."""
        return {"bootstrap.servers": self.bootstrap_servers, "logger": KAFKA_LOGGER, **FAILOVER, **self.client}

    def producer_settings(self, transactional_id: str) -> dict[str, Any]:
        """The writer's transactional producer: acks=all, idempotent, no batching delay."""
        return {
            **self.base(),
            "transactional.id": transactional_id,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 0,
            **TRANSACTION,
            **self.client,
        }


def kafka_error(prefix: str, exc: BaseException) -> KafkaLogError:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err = exc.args[0]
        text = f"{prefix}: {err.name()}: {err.str()}"
        if err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH):
            return LogFencedError(text + " (another writer took over this log)")
        if err.code() in (
            KafkaError._TIMED_OUT,
            KafkaError._TRANSPORT,
            KafkaError._ALL_BROKERS_DOWN,
            KafkaError._UNKNOWN_PARTITION,  # what the metadata cache says while the broker is down
            KafkaError.REQUEST_TIMED_OUT,
            KafkaError._MSG_TIMED_OUT,
        ):
            return LogUnavailableError(text)
        if err.fatal():
            return LogFencedError(text + " (fatal producer error: this writer is fenced)")
        return KafkaLogError(text)
    return KafkaLogError(f"{prefix}: {exc}")


def ensure_topic(config: KafkaLogConfig) -> None:
    """Create the topic if missing with event-log settings; refuse (or warn about) an unsafe existing one."""
    admin = AdminClient(config.base())
    wanted = {
        "cleanup.policy": "delete",
        "retention.ms": "-1",
        "retention.bytes": "-1",
        **({} if config.min_insync_replicas is None else {"min.insync.replicas": str(config.min_insync_replicas)}),
    }
    try:
        meta = admin.list_topics(topic=config.topic, timeout=config.timeout_s)
    except KafkaException as exc:
        raise kafka_error(f"cannot reach Kafka at {config.bootstrap_servers}", exc) from exc
    topic = meta.topics.get(config.topic)
    if topic is None or topic.error is not None:
        if not config.create_topic:
            raise KafkaLogError(f"topic {config.topic} does not exist and topic creation is disabled")
        new = NewTopic(config.topic, num_partitions=1, replication_factor=config.replication_factor, config=wanted)
        try:
            admin.create_topics([new], request_timeout=config.timeout_s)[config.topic].result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise kafka_error(f"cannot create topic {config.topic}", exc) from exc
        return
    problems = [] if len(topic.partitions) == 1 else [f"{len(topic.partitions)} partitions (need 1)"]
    resource = ConfigResource(ConfigResource.Type.TOPIC, config.topic)
    try:
        entries = admin.describe_configs([resource], request_timeout=config.timeout_s)[resource].result()
    except KafkaException as exc:
        raise kafka_error(f"cannot describe topic {config.topic}", exc) from exc
    policy = entries["cleanup.policy"].value
    if "compact" in (policy or ""):
        problems.append(f"cleanup.policy={policy} (compaction drops events)")
    retention = entries["retention.ms"].value
    if retention not in ("-1", None):
        problems.append(f"retention.ms={retention} (old events would be deleted; snapshots must then cover them)")
    if problems and not config.allow_unsafe_topic:
        raise UnsafeTopicError(f"topic {config.topic} is unsafe for an event log: {'; '.join(problems)}")
