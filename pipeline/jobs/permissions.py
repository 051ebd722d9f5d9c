"""permissions: who can do what on which resource, for a whole catalog of resources and list of principals, by
joining each resource to its candidate ACL patterns (literal name, `*`, every prefix) and each candidate to the
principals it names (or every principal, for `User:*`), never by pairing every principal with every resource.

Functions of DataFrames; the decisions themselves are made per (principal, resource) in `pipeline.jobs.decide`.

The prefix join needs only the prefix lengths some PREFIXED ACL of that type has. Worked example:
PREFIXED ACLs `ord` and `orders-` on TOPIC give lengths {3, 7}; the resource `orders-eu` is joined on
`ord` and `orders-` (2 probes), not on its 9 prefixes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.model.acls import WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, PatternType, ResourceType
from kraftacl.authorizer.model.operations import SUPPORTED_OPERATIONS
from kraftacl.pipeline.jobs.decide import APPLYING_COLUMNS, ROW_DDL, decide_rows
from kraftacl.pipeline.jobs.names import name_of

LITERAL = int(PatternType.LITERAL)


@dataclass(frozen=True)
class Report:
    """The report's rows (pipeline.jobs.decide ROW_DDL) and, per resource, whether any ACL covers it and the default."""

    rows: DataFrame
    resources: DataFrame


def default_resources(acls: DataFrame) -> DataFrame:
    """Every literal name an ACL names (not `*`), with its type: the catalog when none is given."""
    literal = acls.filter((F.col("pattern_type") == LITERAL) & (F.col("resource_name") != WILDCARD_RESOURCE))
    return literal.select("resource_type", "resource_name").distinct()


def default_principals(acls: DataFrame, named: Iterable[str]) -> list[str]:
    """Every principal an ACL names that a request can carry (`Type:name`, not `User:*`), plus the named ones."""
    found = [r[0] for r in acls.select("principal").distinct().collect()]
    usable = {p for p in found if ":" in p and p != WILDCARD_PRINCIPAL}
    return sorted(usable | set(named))


def candidates(acls: DataFrame, resources: DataFrame) -> DataFrame:
    """(resource_type, resource_name) of each catalog resource joined with every ACL that is a candidate for it."""
    acl = acls.select(
        "id",
        F.col("resource_type").alias("acl_type"),
        F.col("resource_name").alias("acl_name"),
        "pattern_type",
        F.col("principal").alias("acl_principal"),
        "host",
        "operation",
        "permission_type",
    )
    same_type = F.col("resource_type") == F.col("acl_type")
    literal = F.col("pattern_type") == LITERAL
    exact = acl.filter(literal & (F.col("acl_name") != WILDCARD_RESOURCE))
    by_name = resources.join(exact, same_type & (F.col("resource_name") == F.col("acl_name")))
    star = acl.filter(literal & (F.col("acl_name") == WILDCARD_RESOURCE))
    by_star = resources.join(F.broadcast(star), same_type)
    prefixed = acl.filter(~literal)  # PREFIXED, and hand-made patterns that act as PREFIXED (spec §5.2)
    lengths = prefixed.select(F.col("acl_type").alias("resource_type"), F.length("acl_name").alias("length"))
    probes = resources.join(F.broadcast(lengths.distinct()), "resource_type")
    probes = probes.filter(F.col("length") <= F.length("resource_name"))
    probes = probes.withColumn("prefix", F.expr("substring(resource_name, 1, length)")).drop("length")
    by_prefix = probes.join(prefixed, same_type & (F.col("prefix") == F.col("acl_name"))).drop("prefix")
    return by_name.unionByName(by_star).unionByName(by_prefix).drop("acl_type")


def applying(cands: DataFrame, principals: DataFrame) -> DataFrame:
    """Each candidate joined to the requesters it names: its own principal, or all of them for `User:*`."""
    named = cands.filter(F.col("acl_principal") != WILDCARD_PRINCIPAL)
    by_principal = named.join(principals, named.acl_principal == principals.principal)
    everyone = cands.filter(F.col("acl_principal") == WILDCARD_PRINCIPAL).crossJoin(principals)
    return by_principal.unionByName(everyone).select(*APPLYING_COLUMNS)


def _operations(spark: SparkSession) -> DataFrame:
    """(resource_type code, operation name) for every operation each type supports (spec §13)."""
    rows = [(int(t), op.name) for t, ops in SUPPORTED_OPERATIONS.items() for op in ops]
    return spark.createDataFrame(rows, "resource_type int, operation string")


def _super_user_rows(spark: SparkSession, resources: DataFrame, supers: list[str]) -> DataFrame:
    """Every supported operation on every resource ALLOWED to each super user (spec §5.1), from any host."""
    su = spark.createDataFrame([(p,) for p in supers], "principal string")
    everything = resources.join(_operations(spark), "resource_type").crossJoin(su)
    return everything.select(
        "principal",
        F.lit("*").alias("host"),
        name_of("resource_type", ResourceType).alias("resource_type"),
        "resource_name",
        "operation",
        F.lit("ALLOWED").alias("result"),
        F.lit("SuperUser").alias("rule"),
        F.lit(None).cast("string").alias("acl_id"),
        F.lit(None).cast("string").alias("acl"),
    )


def report(
    spark: SparkSession, acls: DataFrame, resources: DataFrame, principals: list[str], config: AuthorizerConfig
) -> Report:
    """The permissions report of `principals` over `resources` (codes: resource_type int, resource_name; a resource
    listed twice counts once)."""
    resources = resources.select("resource_type", "resource_name").distinct()
    supers = sorted(set(principals) & config.super_users)
    plain = spark.createDataFrame([(p,) for p in principals if p not in config.super_users], "principal string")
    cands = candidates(acls, resources)
    grouped = applying(cands, plain).repartition("principal", "resource_type", "resource_name")
    rows = grouped.sortWithinPartitions("principal", "resource_type", "resource_name").mapInArrow(decide_rows, ROW_DDL)
    if supers:
        rows = rows.unionByName(_super_user_rows(spark, resources, supers))
    covered = cands.select("resource_type", "resource_name").distinct().withColumn("has_acls", F.lit(True))
    allow_everyone = config.allow_everyone_if_no_acl_found
    summary = (
        resources.join(covered, ["resource_type", "resource_name"], "left")
        .select(
            name_of("resource_type", ResourceType).alias("resource_type"),
            "resource_name",
            F.coalesce("has_acls", F.lit(False)).alias("has_acls"),
        )
        .withColumn(
            "default_result",
            F.when(F.lit(allow_everyone) & ~F.col("has_acls"), "ALLOWED").otherwise("DENIED"),
        )
    )
    return Report(rows, summary)


def principal_summary(rows: DataFrame) -> DataFrame:
    """Per principal: how many resources it may READ, WRITE and ALTER (from some host)."""
    allowed = rows.filter(F.col("result") == "ALLOWED")
    counts = [
        F.countDistinct(F.when(F.col("operation") == op, F.struct("resource_type", "resource_name"))).alias(op.lower())
        for op in ("READ", "WRITE", "ALTER")
    ]
    return allowed.groupBy("principal").agg(*counts).orderBy("principal")


def resource_summary(rows: DataFrame) -> DataFrame:
    """Per resource: which principals may READ, WRITE and ALTER it (from some host), as sorted lists."""
    allowed = rows.filter(F.col("result") == "ALLOWED")
    who = [
        F.array_sort(F.collect_set(F.when(F.col("operation") == op, F.col("principal")))).alias(op.lower())
        for op in ("READ", "WRITE", "ALTER")
    ]
    grouped = allowed.groupBy("resource_type", "resource_name").agg(*who)
    return grouped.select(
        "resource_type",
        "resource_name",
        *(F.array_join(op.lower(), " ").alias(op.lower()) for op in ("READ", "WRITE", "ALTER")),
    ).orderBy("resource_type", "resource_name")
