"""changes: the ACLs added and removed between two states of the log (by id, as `kraft-acl diff`), each with
the offset, batch, epoch and time of the record that made the change.

Functions of a LogEvents; the result is a DataFrame the caller writes or prints.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kraftacl.pipeline.sources.events import ACL_FIELDS

CHANGE_COLUMNS = ("change", "id", *ACL_FIELDS, "offset", "batch", "epoch", "ts")
_MADE = (("offset", "offset"), ("base", "batch"), ("epoch", "epoch"), ("ts", "ts"))  # of the record that made it


def changes(events: DataFrame, from_offset: int, to_offset: int) -> DataFrame:
    """Rows (CHANGE_COLUMNS) for every id live at exactly one of the two states (both offsets checked by the caller).

    An id live at `to_offset` only is "added" at its last add; one live at `from_offset` only is "removed"
    at its last remove, with the fields of the add that was live at `from_offset`.
    """
    event = F.struct("add", "offset", "base", "epoch", "ts", *ACL_FIELDS)
    per_id = (
        events.filter(F.col("offset") < to_offset)
        .groupBy("id")
        .agg(
            F.max_by(event, F.when(F.col("offset") < from_offset, F.col("offset"))).alias("a"),
            F.max_by(event, "offset").alias("b"),
        )
    )
    live_a = F.coalesce(F.col("a.add"), F.lit(False))
    made = [F.col(f"b.{name}").alias(alias) for name, alias in _MADE]
    added = per_id.filter(F.col("b.add") & ~live_a).select(
        F.lit("added").alias("change"), "id", *(F.col(f"b.{name}") for name in ACL_FIELDS), *made
    )
    removed = per_id.filter(live_a & ~F.col("b.add")).select(
        F.lit("removed").alias("change"), "id", *(F.col(f"a.{name}") for name in ACL_FIELDS), *made
    )
    return added.unionByName(removed)
