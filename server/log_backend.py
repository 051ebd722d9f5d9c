"""Opening serve's metadata log (the embedded file log or the Kafka topic) from its config, and the error serve
exits with when it cannot start.

A broker-role serve never creates its embedded log's directory (its controller does): until the directory exists
it reads through `AwaitedLog`, which refuses every call with one clear error, so the node is not ready and exposes
no state the log never had (KIP-801: with allow.everyone.if.no.acl.found=true an empty "ready" state would allow
everyone). Stateless otherwise; every call opens a new backend that the caller closes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kraftacl.metadata_log.backend import AppendResult, LogBackend
from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.records import MetadataRecord, RecordBatch
from kraftacl.server.config import ServeConfig

if TYPE_CHECKING:
    from kraftacl.metadata_log.backends.kafka_topic.client import KafkaLogConfig


class ServeError(Exception):
    """serve cannot start or had to stop; the message is one line for the operator."""


class LogDirectoryMissingError(LogError):
    """A broker-role serve's metadata.log.dir does not exist (yet)."""


def open_backend(config: ServeConfig, write: bool | None = None) -> LogBackend:
    """The embedded file log (the controller takes its writer lock) or the Kafka topic (opened as a reader: a
    controller claims the writer role when Kafka's group elects it, `server.controller_role`); `write=False` opens
    a reader whatever the role (one more, beside the node's)."""
    lc = config.log
    writer = config.controller if write is None else write
    try:
        if lc.log_dir is not None:
            from kraftacl.metadata_log.backends.file.log import FileLog

            if writer:
                lc.log_dir.mkdir(parents=True, exist_ok=True)
            elif write is None and not lc.log_dir.is_dir():
                return AwaitedLog(lc.log_dir)
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


class AwaitedLog(LogBackend):
    """A read-only file log whose directory does not exist yet: every call raises LogDirectoryMissingError until
    the directory appears, then the log is opened and every call goes to it. Thread-safe."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._inner: LogBackend | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _log(self) -> LogBackend:
        with self._lock:
            if self._inner is None:
                if self._closed or not self.directory.is_dir():
                    raise LogDirectoryMissingError(
                        f"metadata.log.dir {self.directory} does not exist; a broker-role serve reads the log its "
                        "controller writes and never creates it (waiting for it)"
                    )
                from kraftacl.metadata_log.backends.file.log import FileLog

                self._inner = FileLog(self.directory, read_only=True)
            return self._inner

    def append(self, records: Sequence[MetadataRecord], *, timestamp_ms: int | None = None) -> AppendResult:
        return self._log().append(records, timestamp_ms=timestamp_ms)

    def read(self, from_offset: int = 0) -> Iterator[RecordBatch]:
        return self._log().read(from_offset)

    def high_watermark(self) -> int:
        return self._log().high_watermark()

    def log_start_offset(self) -> int:
        return self._log().log_start_offset()

    @property
    def log_id(self) -> str | None:
        return self._log().log_id

    @property
    def legacy(self) -> bool:
        return self._log().legacy

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._inner is not None:
                self._inner.close()
