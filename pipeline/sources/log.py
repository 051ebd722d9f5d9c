"""Where a job's log comes from (a file-log directory or a Kafka topic), and its loading as `LogEvents`
(pipeline.sources.log_events): every record below the high-water mark decoded inside Spark tasks.

Stateless functions and immutable values; the DataFrame a load returns is cached in the job's session.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.kafka_files.files import locate
from kraftacl.pipeline.errors import PipelineError
from kraftacl.pipeline.sources.events import EVENT_DDL, SPAN_DDL, kafka_rows, span_rows
from kraftacl.pipeline.sources.log_events import LogEvents
from kraftacl.pipeline.sources.source import LogSource

__all__ = ["LogSource", "load_events"]

_NO_LIMIT = 1 << 62


def load_events(spark: SparkSession, source: LogSource) -> LogEvents:
    """Decode the whole committed log inside Spark tasks; the result is cached for the job's several passes."""
    if source.log_dir is not None and (kafka := locate(source.log_dir)) is not None:
        from kraftacl.pipeline.sources.kafka_files import load_kafka_files  # Apache Kafka's files: loaded only for them

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
