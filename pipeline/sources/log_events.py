"""A job's log as a cached DataFrame of record events (`LogEvents`), with its extent and the offset checks the
single-process replayer makes.

A `LogEvents` belongs to the job (driver thread) that loaded it; its DataFrame is cached in the session.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kraftacl.pipeline.errors import PipelineError


@dataclass
class LogEvents:
    """Every record below the high-water mark as a row (pipeline.sources.events), plus the log's extent."""

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
