"""Where a job's log is: a file-log directory or a Kafka topic. A plain value, without Spark, so that the driver's
command line (its help, its errors) works where PySpark is not installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kraftacl.metadata_log.backends.kafka_topic.message import DEFAULT_TOPIC


@dataclass(frozen=True)
class LogSource:
    """Exactly one of `log_dir` (the embedded file log, or Apache Kafka's own KRaft metadata files) and
    `bootstrap` (a Kafka topic, read with Spark's source)."""

    log_dir: Path | None = None
    bootstrap: str | None = None
    topic: str = DEFAULT_TOPIC
    kafka_options: dict[str, str] = field(default_factory=dict)  # Java consumer settings, e.g. security.protocol

    def describe(self) -> str:
        """Where the log is, for messages."""
        return str(self.log_dir) if self.log_dir is not None else f"topic {self.topic} on {self.bootstrap}"
