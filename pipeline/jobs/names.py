"""Code columns as Kafka's enum names (`resource_type` 2 -> TOPIC, ...), for reports people read.

Pure functions building column expressions; thread-safe.
"""

from __future__ import annotations

from enum import IntEnum

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType

CODE_COLUMNS: dict[str, type[IntEnum]] = {
    "resource_type": ResourceType,
    "pattern_type": PatternType,
    "operation": AclOperation,
    "permission_type": AclPermissionType,
}


def name_of(column: str, enum: type[IntEnum]) -> Column:
    """The member name of each code (UNKNOWN for a code the enum lacks, as Kafka's fromCode)."""
    names = F.create_map(*(item for m in enum for item in (F.lit(int(m)), F.lit(m.name))))
    return F.coalesce(names[F.col(column)], F.lit("UNKNOWN"))


def with_names(df: DataFrame) -> DataFrame:
    """`df` with each code column it has (an integer column of that name) replaced by the names."""
    types = dict(df.dtypes)
    for column, enum in CODE_COLUMNS.items():
        if types.get(column) in ("int", "bigint"):
            df = df.withColumn(column, name_of(column, enum))
    return df
