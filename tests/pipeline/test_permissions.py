"""The permissions report against StandardAuthorizer, decision for decision, on randomized logs in real PySpark.

For every principal, catalog resource, supported operation and client host: the report's row for that host
(or, without one, its `*` row) must be `explain`'s result, rule and ACL; with no row, `explain` must give the
default rule and the default result the report states for that resource.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.model.acls import ResourceType
from kraftacl.authorizer.model.operations import SUPPORTED_OPERATIONS
from kraftacl.pipeline.jobs.fold import state_at
from kraftacl.pipeline.jobs.permissions import default_principals, default_resources, report
from kraftacl.pipeline.sources.log import LogSource, load_events
from tests.pipeline.logs import NAMES, PRINCIPALS, GeneratedLog, random_log
from tests.pipeline.replay import replayed_node

pytestmark = pytest.mark.spark

CATALOG_NAMES = [*NAMES, "orders-eu-1", "ordinary", "pay", "payments-x", "zzz", "x*"]  # "pay" twice: counted once
HOSTS = ["10.0.0.1", "10.0.0.2", "192.0.2.7"]  # the ACLs' specific hosts and one no ACL names
REQUESTERS = [p for p in PRINCIPALS if p != "User:*"] + ["User:nobody", "User:*"]


def _catalog() -> list[tuple[int, str]]:
    # The generated logs have no DELEGATION_TOKEN or USER ACLs: those resources take the configured default.
    out = [
        (int(ResourceType.CLUSTER), "kafka-cluster"),
        (int(ResourceType.DELEGATION_TOKEN), "t1"),
        (int(ResourceType.USER), "alice"),
    ]
    for rtype in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID):
        out += [(int(rtype), name) for name in CATALOG_NAMES]
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedLog:
    return random_log(tmp_path_factory.mktemp("permissions") / "meta", seed=31, batches=50)


@pytest.fixture(scope="module")
def acls(spark: SparkSession, generated: GeneratedLog) -> DataFrame:
    """The state at the high-water mark, computed once for every test here."""
    return state_at(load_events(spark, LogSource(log_dir=generated.directory)), generated.high_watermark).cache()


@pytest.mark.parametrize(("allow_everyone", "supers"), [(False, frozenset()), (True, frozenset({"User:u1"}))])
def test_every_row_is_the_authorizers_decision_and_every_missing_one_the_default(
    spark: SparkSession, generated: GeneratedLog, acls: DataFrame, allow_everyone: bool, supers: frozenset[str]
) -> None:
    config = AuthorizerConfig(super_users=supers, allow_everyone_if_no_acl_found=allow_everyone)
    catalog = _catalog()
    resources = spark.createDataFrame(catalog, "resource_type int, resource_name string")
    built = report(spark, acls, resources, REQUESTERS, config)
    listed = built.rows.collect()
    rows = {(r["principal"], r["host"], r["resource_type"], r["resource_name"], r["operation"]): r for r in listed}
    assert len(rows) == len(listed), "one row per principal, host, resource and operation"
    defaults = {(r["resource_type"], r["resource_name"]): r["default_result"] for r in built.resources.collect()}
    node = replayed_node(generated.directory, generated.high_watermark, config)
    try:
        checked = _compare(node.authorizer, catalog, rows, defaults)
    finally:
        node.close()
    assert checked["MatchingAcl"] > 100 and checked["DefaultDeny"] > 100, checked
    if allow_everyone:
        assert checked["DefaultAllow"] > 0 and checked["SuperUser"] > 0, checked


def _compare(
    authorizer: Any, catalog: list[tuple[int, str]], rows: dict[Any, Any], defaults: dict[Any, str]
) -> dict[str, int]:
    checked = {"MatchingAcl": 0, "DefaultDeny": 0, "DefaultAllow": 0, "SuperUser": 0}
    for principal in REQUESTERS:
        for code, name in catalog:
            rtype = ResourceType(code)
            for op in SUPPORTED_OPERATIONS[rtype]:
                for host in HOSTS:
                    decision = authorizer.explain(RequestContext(principal, host), Action(op, rtype, name))
                    key = (principal, host, rtype.name, name, op.name)
                    row = rows.get(key) or rows.get((principal, "*", rtype.name, name, op.name))
                    where = f"{key}: {decision}"
                    checked[decision.rule.kind] += 1
                    if row is None:
                        assert decision.rule.kind in ("DefaultDeny", "DefaultAllow"), where
                        assert decision.result.name == defaults[(rtype.name, name)], where
                        continue
                    assert (row["result"], row["rule"]) == (decision.result.name, decision.rule.kind), where
                    assert row["acl"] == (str(decision.rule.acl) if decision.rule.acl is not None else None), where
    return checked


def test_the_default_catalog_and_principals_are_what_the_acls_name(generated: GeneratedLog, acls: DataFrame) -> None:
    node = replayed_node(generated.directory, generated.high_watermark)
    try:
        live = list(node.image.acls.values())
    finally:
        node.close()
    literal = {(int(a.resource_type), a.resource_name) for a in live if a.pattern_type == 3 and a.resource_name != "*"}
    assert {(r[0], r[1]) for r in default_resources(acls).collect()} == literal
    named = {a.principal for a in live if a.principal != "User:*"}
    assert default_principals(acls, ["User:extra"]) == sorted(named | {"User:extra"})
