"""fold: the ACL state at an offset, computed from every record below it (removes after their adds, by offset),
checked as the single-process replay checks it, and written as a kraft-acl snapshot file.

Functions of a LogEvents and an offset; the snapshot is written by the driver through the snapshot
library (`snapshots.format`), to a temporary name, fsynced, then renamed: a reader never sees half a file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kraftacl.authorizer.state.records import acl_from_record
from kraftacl.metadata_log.records import AccessControlEntryRecord
from kraftacl.pipeline.errors import PipelineError
from kraftacl.pipeline.sources.events import ACL_FIELDS
from kraftacl.pipeline.sources.log_events import LogEvents
from kraftacl.snapshots.columns import AclColumns
from kraftacl.snapshots.format import CHUNK_RECORDS, SnapshotHeader, fsync_dir, write_snapshot_chunks

# The order a node writes a snapshot in (AclsImage.chunks: grouped by type, pattern, principal), then by offset.
SNAPSHOT_ORDER = ("resource_type", "pattern_type", "principal", "offset")


def live_acls(events: DataFrame, offset: int) -> DataFrame:
    """id, the ACL fields and the offset of its add, for every ACL live at `offset` (its last event below is an add)."""
    last = (
        events.filter(F.col("offset") < offset)
        .groupBy("id")
        .agg(F.max_by(F.struct("add", "offset", *ACL_FIELDS), "offset").alias("e"))
    )
    return last.filter(F.col("e.add")).select("id", "e.offset", *(f"e.{name}" for name in ACL_FIELDS))


def check_replayable(events: DataFrame, offset: int) -> None:
    """Raise what the single-process replay would: an add of a live id, a remove of an absent one, the lowest first."""
    by_id = Window.partitionBy("id").orderBy("offset")
    flagged = (
        events.filter(F.col("offset") < offset)
        .withColumn("prev", F.lag("add").over(by_id))
        .filter((F.col("prev").isNull() & ~F.col("add")) | (F.col("prev") == F.col("add")))
    )
    bad = flagged.orderBy("offset").select("offset", "id", "add").first()
    if bad is None:
        return
    if bad["add"]:
        raise PipelineError(
            f"offset {bad['offset']}: AccessControlEntryRecord adds ACL {bad['id']}, which already exists"
        )
    raise PipelineError(
        f"offset {bad['offset']}: RemoveAccessControlEntryRecord names ACL {bad['id']}, which does not exist"
    )


def check_distinct(acls: DataFrame) -> None:
    """Two live ACLs with the same content are refused, as the authorizer's index refuses them."""
    dup = acls.groupBy(*ACL_FIELDS).agg(F.count("id").alias("n"), F.min("id").alias("id")).filter("n > 1").first()
    if dup is not None:
        acl = acl_from_record(AccessControlEntryRecord(dup["id"], *(dup[name] for name in ACL_FIELDS)))
        raise PipelineError(f"cannot add {acl}: an ACL with the same content already exists")


def state_at(log: LogEvents, offset: int, option: str = "--to-offset") -> DataFrame:
    """The checked ACL state at `offset` (a batch boundary of the log)."""
    log.check_offset(option, offset)
    view = log.for_states(offset)
    cut = view.cut(offset)
    check_replayable(view.events, cut)
    acls = live_acls(view.events, cut)
    check_distinct(acls)
    return acls


@dataclass(frozen=True)
class FoldResult:
    """What fold wrote: the file, its header and its record count."""

    path: Path
    header: SnapshotHeader
    acls: int


def fold(log: LogEvents, offset: int, out: Path) -> FoldResult:
    """Write the state at `offset` as a snapshot file `out` (end offset, the epoch and time of the last batch)."""
    acls = state_at(log, offset)
    header = _header(log.for_states(offset), offset)
    ordered = acls.orderBy(*SNAPSHOT_ORDER).select("id", *ACL_FIELDS)
    part = out.with_name(f"{out.name}.{os.getpid()}.part")
    try:
        with part.open("wb") as fh:
            count = write_snapshot_chunks(fh, header, _chunks(ordered))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(part, out)
        fsync_dir(out.parent)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return FoldResult(out, header, count)


def _header(log: LogEvents, offset: int) -> SnapshotHeader:
    """As a node's snapshot: the log's identity, epoch and timestamp of the batch below `offset` (epoch 0 and
    now, before any), so that the log accepts it (snapshots.binding)."""
    last = log.batch_before(offset)
    if last is None:
        return SnapshotHeader(offset, 0, int(time.time() * 1000), log_id=log.log_id)
    return SnapshotHeader(offset, max(last[0], 0), last[1], log_id=log.log_id)


def _chunks(ordered: DataFrame) -> Iterator[AclColumns]:
    """The sorted state brought to the driver one partition at a time (the next one fetched while this one is
    written), so the driver holds a partition, never the whole state."""
    rows = ordered.toLocalIterator(prefetchPartitions=True)
    while chunk := list(islice(rows, CHUNK_RECORDS)):
        yield AclColumns(*(list(column) for column in zip(*chunk, strict=True)))
