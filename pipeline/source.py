"""Where a job's log comes from (a file-log directory or a Kafka topic) and the log as a cached DataFrame of
record events, with its offsets checked the way the single-process replayer checks them.

A `LogEvents` belongs to the job (driver thread) that loaded it; its DataFrame is cached in the session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.backends.kafka_topic.message import DEFAULT_TOPIC
from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.kafka_files.files import locate
from kraftacl.pipeline.errors import PipelineError
from kraftacl.pipeline.events import EVENT_DDL, SPAN_DDL, kafka_rows, span_rows

_NO_LIMIT = 1 << 62


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


@dataclass
class LogEvents:
    """Every record below the high-water mark as a row (pipeline.events), plus the log's extent."""

    events: DataFrame
    high_watermark: int
    log_start: int
    log_id: str | None = None  # the file log's identity (FileLog.log_id); None for a Kafka topic

    def batches(self) -> DataFrame:
        """One row per batch: base, next (exclusive end), epoch, ts."""
        return self.events.groupBy("base").agg(
            (F.max("offset") + 1).alias("next"), F.first("epoch").alias("epoch"), F.first("ts").alias("ts")
        )

    def check_offset(self, option: str, offset: int) -> None:
        """Fail unless 0 <= offset <= high-water mark and `offset` falls between two batches (README "Offsets")."""
        if offset < 0:
            raise PipelineError(f"{option} {offset} is negative")
        if offset > self.high_watermark:
            raise PipelineError(
                f"{option} {offset} is beyond the high-water mark {self.high_watermark} "
                f"(the log holds offsets below {self.high_watermark})"
            )
        if offset <= self.log_start or offset == self.high_watermark:
            return
        holding = self.holding_batch(offset)
        if holding is not None:
            base, last = holding
            raise PipelineError(
                f"{option} {offset} is inside the batch at offsets {base}..{last}: its records apply together, "
                f"so no state exists between them; use {base} or {last + 1}"
            )

    def holding_batch(self, offset: int) -> tuple[int, int] | None:
        """(base, last offset) of the batch with records on both sides of `offset`, if there is one."""
        holding = self.events.filter(F.col("offset") == offset).select("base").first()
        if holding is None or holding["base"] == offset:
            return None
        base = int(holding["base"])
        return base, int(self.events.filter(F.col("base") == base).agg(F.max("offset")).first()[0])  # type: ignore[index]

    def batch_before(self, offset: int) -> tuple[int, int] | None:
        """(epoch, timestamp) of the batch that ends at `offset`, if there is one."""
        last = self.events.filter(F.col("offset") == offset - 1).select("epoch", "ts").first() if offset else None
        return None if last is None else (int(last["epoch"]), int(last["ts"]))

    def for_states(self, *offsets: int) -> LogEvents:
        """The events to compute the states at `offsets` from (a Kafka source picks its base snapshot)."""
        return self

    def cut(self, offset: int) -> int:
        """The state at `offset` is every event below this offset (another one inside a Kafka transaction)."""
        return offset

    def offset_at_time(self, ts_ms: int) -> int:
        """The state after the last batch (in offset order) stamped at or before `ts_ms`; the log start if none."""
        found = self.batches().filter(F.col("ts") <= ts_ms).agg(F.max("next")).first()
        return int(found[0]) if found is not None and found[0] is not None else self.log_start


def load_events(spark: SparkSession, source: LogSource) -> LogEvents:
    """Decode the whole committed log inside Spark tasks; the result is cached for the job's several passes."""
    if source.log_dir is not None and (kafka := locate(source.log_dir)) is not None:
        from kraftacl.pipeline.kafka_source import load_kafka_files  # it builds on LogEvents, defined here

        return load_kafka_files(spark, kafka)
    return _file_events(spark, source.log_dir) if source.log_dir is not None else _kafka_events(spark, source)


def _file_events(spark: SparkSession, log_dir: Path) -> LogEvents:
    """One task per segment span; the driver's read-only FileLog has already checked framing and offsets."""
    if not log_dir.is_dir():
        raise PipelineError(f"log directory {log_dir} does not exist")
    try:
        with FileLog(log_dir, read_only=True) as log:  # stops at the durable end; refuses a log that lost data
            hwm, start, plan, log_id = log.high_watermark(), log.log_start_offset(), log.read_plan(0), log.log_id
    except LogError as exc:
        raise PipelineError(str(exc)) from exc
    rows = [(str(s.path), s.schema.json_text, s.start, s.base_offset, s.end) for s in plan]
    spans = spark.createDataFrame(rows, SPAN_DDL).repartition(max(len(rows), 1))
    events = spans.mapInArrow(partial(span_rows, below=hwm), EVENT_DDL).persist(StorageLevel.MEMORY_AND_DISK)
    return LogEvents(events, hwm, start, log_id)


def _kafka_events(spark: SparkSession, source: LogSource) -> LogEvents:
    """Spark's Kafka source, read_committed up to the last stable offset, split into several tasks."""
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", source.bootstrap)
        .option("subscribe", source.topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("includeHeaders", "true")
        .option("kafka.isolation.level", "read_committed")
        .option("minPartitions", str(spark.sparkContext.defaultParallelism))
    )
    for key, value in source.kafka_options.items():
        reader = reader.option(f"kafka.{key}", value)
    messages = reader.load().select("value", "headers", "offset")
    events = messages.mapInArrow(partial(kafka_rows, topic=source.topic, below=_NO_LIMIT), EVENT_DDL)
    events = events.persist(StorageLevel.MEMORY_AND_DISK)  # its extent is read first, then the job's passes
    loaded = LogEvents(events, 0, 0)
    extent = events.agg(F.min("base"), F.max("offset"), F.count("offset")).first()
    if extent is None or extent[0] is None:
        return loaded
    loaded.log_start, loaded.high_watermark = int(extent[0]), int(extent[1]) + 1
    _check_contiguous(loaded, int(extent[2]), source)
    return loaded


def _check_contiguous(loaded: LogEvents, records: int, source: LogSource) -> None:
    """Batches must tile [log start, end) with no gap and no overlap, as the replayer demands.

    Every batch but the last is followed by a batch starting at its end, and the batches hold exactly
    end - start records: then following those links from the start visits every batch once, in order.
    """
    batches = loaded.batches()
    starts = batches.select(F.col("base").alias("next"))
    open_ends = batches.join(starts, "next", "left_anti").filter(F.col("next") != loaded.high_watermark)
    gap = open_ends.orderBy("next").select("base", "next").first()
    if gap is not None:
        raise PipelineError(
            f"{source.describe()}: gap: expected offset {gap['next']} after batch {gap['base']}..{gap['next'] - 1}"
        )
    if records != loaded.high_watermark - loaded.log_start:
        raise PipelineError(
            f"{source.describe()}: batches overlap: {records} records in offsets "
            f"{loaded.log_start}..{loaded.high_watermark - 1}"
        )
