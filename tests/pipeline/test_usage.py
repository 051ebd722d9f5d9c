"""usage against counts worked out in Python, on a decision log the library itself writes: StandardAuthorizer.explain
over random requests, one JSON line per decision in serve's format, rotated by size as RotatingFileHandler does.
"""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.model.acls import PatternType, ResourceType
from kraftacl.authorizer.model.operations import SUPPORTED_OPERATIONS
from kraftacl.pipeline.errors import PipelineError
from kraftacl.pipeline.jobs.fold import state_at
from kraftacl.pipeline.jobs.names import with_names
from kraftacl.pipeline.jobs.usage import decision_files, read_decisions, usage
from kraftacl.pipeline.sources.log import LogSource, load_events
from tests.pipeline.logs import NAMES, PRINCIPALS, random_log
from tests.pipeline.replay import replayed_node

pytestmark = pytest.mark.spark
T0 = 1_795_594_549_948


def _write_decisions(node: Any, path: Path, count: int) -> list[dict[str, Any]]:
    """`count` decisions of random requests, logged as serve logs them; returns them in order."""
    rng = random.Random(5)
    by_acl = {acl: acl_id for acl_id, acl in node.image.acls.items()}
    logger = logging.getLogger(f"test-decisions-{path}")
    logger.propagate = False
    handler = RotatingFileHandler(path, maxBytes=6000, backupCount=100)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    out = []
    try:
        for n in range(count):
            rtype = rng.choice([ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID])
            op = rng.choice(SUPPORTED_OPERATIONS[rtype])
            principal = rng.choice([p for p in PRINCIPALS if p != "User:*"])
            host = rng.choice(["10.0.0.1", "10.0.0.2", "192.0.2.7"])
            name = rng.choice(NAMES[:-1]) + rng.choice(["", "", "-x", "-y"])
            decision = node.authorizer.explain(RequestContext(principal, host), Action(op, rtype, name))
            line = {
                "time": "-",
                "ts_ms": T0 + n,
                "principal": principal,
                "host": host,
                "listener": "CLIENT",
                "request": "Produce",
                "operation": op.name,
                "resource_type": rtype.name,
                "resource_name": name,
                "result": decision.result.name,
                "rule": decision.rule.kind,
                "acl_id": by_acl[decision.rule.acl] if decision.rule.acl is not None else None,
                "offset": node.image.provenance.next_offset,
            }
            logger.info(json.dumps(line))
            out.append(line)
    finally:
        handler.close()
        logger.removeHandler(handler)
    return out


def test_usage_reports_equal_counts_worked_out_in_python(spark: SparkSession, tmp_path: Path) -> None:
    generated = random_log(tmp_path / "meta", seed=41, batches=40)
    node = replayed_node(generated.directory, generated.high_watermark)
    try:
        written = _write_decisions(node, tmp_path / "decisions.log", 1500)
        live = dict(node.image.acls.items())
    finally:
        node.close()
    files = decision_files(tmp_path / "decisions.log")
    assert len(files) > 3, "the log rotated"
    start, end = T0 + 200, T0 + 1300
    period = [d for d in written if start <= d["ts_ms"] < end]
    acls = state_at(load_events(spark, LogSource(log_dir=generated.directory)), generated.high_watermark)
    found = usage(read_decisions(spark, files, start, end), acls.drop("offset"), top=5, few=2)

    hits = Counter(d["acl_id"] for d in period if d["acl_id"])
    denied = Counter(d["acl_id"] for d in period if d["acl_id"] and d["result"] == "DENIED")
    got = {r["id"]: (r["hits"], r["denied"]) for r in found.hits.collect()}
    assert got == {acl_id: (n, denied[acl_id]) for acl_id, n in hits.items()}
    assert {r["id"] for r in found.unused.collect()} == live.keys() - hits.keys()

    triples = Counter(
        (d["principal"], d["resource_type"], d["resource_name"], d["operation"])
        for d in period
        if d["result"] == "DENIED"
    )
    expected_top = sorted(triples.items(), key=lambda item: (-item[1], item[0]))[:5]
    got_top = [((r[0], r[1], r[2], r[3]), r["denied"]) for r in found.top_denied.collect()]
    assert got_top == expected_top
    # The reports as written: code columns named, the decision log's names left as they are.
    assert [tuple(r) for r in with_names(found.top_denied).collect()] == [tuple(r) for r in found.top_denied.collect()]
    named = {r["resource_type"] for r in with_names(found.unused).collect()}
    assert named <= {"TOPIC", "GROUP", "TRANSACTIONAL_ID", "CLUSTER"} and named

    names: dict[str, set[str]] = {}
    for d in period:
        if d["acl_id"]:
            names.setdefault(d["acl_id"], set()).add(d["resource_name"])
    broad = {
        acl_id: " ".join(sorted(hit))
        for acl_id, hit in names.items()
        if (live[acl_id].pattern_type != PatternType.LITERAL or live[acl_id].resource_name == "*") and len(hit) <= 2
    }
    assert {r["id"]: r["names_hit"] for r in found.broad.collect()} == broad
    assert broad, "the generated decisions include broad ACLs"


def test_a_line_that_is_not_a_decision_is_refused_naming_its_file(spark: SparkSession, tmp_path: Path) -> None:
    good = {"ts_ms": 1, "principal": "User:a", "operation": "READ", "resource_type": "TOPIC"}
    (tmp_path / "d.log").write_text(
        json.dumps({**good, "resource_name": "t", "result": "DENIED", "rule": "DefaultDeny"}) + "\n"
    )
    (tmp_path / "d.log.1").write_text(json.dumps(good) + "\n")
    with pytest.raises(
        PipelineError, match=r"decision log /\S+/d\.log\.1: a decision has no resource_name, result, rule$"
    ):
        read_decisions(spark, decision_files(tmp_path / "d.log"), None, None)
    (tmp_path / "d.log.1").write_text("not json\n")
    with pytest.raises(PipelineError, match=r"decision log /\S+/d\.log\.1: a line is not a JSON object: not json$"):
        read_decisions(spark, decision_files(tmp_path / "d.log"), None, None)
    with pytest.raises(PipelineError, match="does not exist"):
        decision_files(tmp_path / "missing.log")
