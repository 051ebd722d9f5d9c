"""Opening serve's metadata log (the embedded file log or the Kafka topic) from its config, and the error serve
exits with when it cannot start.

Stateless; every call opens a new backend that the caller closes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.errors import LogError
from kraftacl.server.config import ServeConfig

if TYPE_CHECKING:
    from kraftacl.metadata_log.backends.kafka_topic.client import KafkaLogConfig


class ServeError(Exception):
    """serve cannot start or had to stop; the message is one line for the operator."""


def open_backend(config: ServeConfig, write: bool | None = None) -> LogBackend:
    """The embedded file log (the controller takes its writer lock) or the Kafka topic (opened as a reader: a
    controller claims the writer role when Kafka's group elects it, `server.controller_role`); `write=False` opens
    a reader whatever the role (one more, beside the node's)."""
    lc = config.log
    writer = config.controller if write is None else write
    try:
        if lc.log_dir is not None:
            from kraftacl.metadata_log.backends.file.log import FileLog

            lc.log_dir.mkdir(parents=True, exist_ok=True)
            return FileLog(lc.log_dir, read_only=not writer)
        from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLog

        return KafkaLog(kafka_config(config))
    except LogError as exc:
        raise ServeError(f"cannot open the metadata log: {exc}") from exc
    except OSError as exc:
        raise ServeError(f"cannot open the metadata log directory {lc.log_dir}: {exc.strerror}") from exc


def kafka_config(config: ServeConfig) -> KafkaLogConfig:
    """The Kafka-backed log's client settings from serve's metadata.log.* keys."""
    from kraftacl.metadata_log.backends.kafka_topic.log import DEFAULT_TOPIC, KafkaLogConfig

    lc = config.log
    assert lc.bootstrap_servers is not None
    return KafkaLogConfig(
        lc.bootstrap_servers,
        topic=lc.topic or DEFAULT_TOPIC,
        replication_factor=lc.replication_factor,
        min_insync_replicas=lc.min_insync_replicas,
        client=dict(lc.kafka_client),
    )
