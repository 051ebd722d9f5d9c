"""The `cluster` benchmark suite: the chaos scenario of issue #30 (`kraftacl.harness.cluster.chaos`) on a real
three-node KRaft cluster with a serve beside each broker, run several times on one deployment, and its figures
against the targets: controller failover at most 10 s (from the kill or freeze of the active controller serve to
the first ACL change a broker acknowledged), decisions on the other brokers never interrupted (no stretch of a
plugin request timeout, 2 s, without an ALLOW), no acknowledged change lost, no wrong ALLOW.

Each run records the CPU probe and the load average before and after it; the figures are pooled over the runs
(p50 and max) and each run's own figures are kept, so the run-to-run spread is visible. Drives child processes
(three Kafka JVMs, three serves) in a temporary directory and stops them all at the end. Needs Java 17, Maven (or
the built plugin jar) and the Kafka jars of scripts/kafka-broker.sh.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from kraftacl.bench.timing import cpu_probe_us, progress
from kraftacl.harness.cluster import chaos
from kraftacl.harness.cluster.deployment import Deployment
from kraftacl.harness.cluster.workload import USERS

TARGETS = {"controller_failover_max_s": 10.0, "other_brokers_max_gap_s": 2.0, "acknowledged_lost": 0, "wrong_allows": 0}


def _machine_state() -> dict[str, Any]:
    return {"probe_us": round(cpu_probe_us(2000), 2), "loadavg_1m": round(os.getloadavg()[0], 2)}


def _pooled(values: list[float]) -> dict[str, Any]:
    return {
        "p50": round(statistics.median(values), 3) if values else None,
        "max": round(max(values), 3) if values else None,
        "min": round(min(values), 3) if values else None,
        "samples": len(values),
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures pooled over every run, and each target met or not."""
    failover = [v for r in runs for v in r["controller_failover_s"]["runs"]]
    restarts = [v for r in runs for v in r["serve_restart_to_decisions_s"]["runs"]]
    faults = sorted({name for r in runs for name in r["write_unavailable_s"]})
    unavailable = {
        name: _pooled([r["write_unavailable_s"][name] for r in runs if r["write_unavailable_s"].get(name) is not None])
        for name in faults
    }
    other_gap = max(r["decisions_max_gap_s"]["other_brokers"] for r in runs)
    totals = {key: sum(r[key] for r in runs) for key in chaos.COUNTS}
    out: dict[str, Any] = {
        "controller_failover_s": _pooled(failover),
        "controller_failover_missing": sum(r["controller_failover_missing"] for r in runs),
        "serve_restart_to_decisions_s": _pooled(restarts),
        "write_unavailable_s": unavailable,
        "log_leader_kill_write_stall_s": unavailable.get("log_leader_node_sigkill"),
        "log_leader_moved_s": _pooled([r["log_leader_moved_s"] for r in runs if r["log_leader_moved_s"] is not None]),
        "decisions_other_brokers_max_gap_s": other_gap,
        "propagation_s": _pooled([v for r in runs for v in r["propagation_s"]["runs"]]),
        "max_staleness_s": max(r["max_staleness_s"] for r in runs),
        **totals,
    }
    failover_max = out["controller_failover_s"]["max"]
    out["targets"] = TARGETS
    out["met"] = {
        "controller_failover_max_s": failover_max is not None
        and failover_max <= TARGETS["controller_failover_max_s"]
        and out["controller_failover_missing"] == 0,
        "other_brokers_max_gap_s": other_gap < TARGETS["other_brokers_max_gap_s"],
        "acknowledged_lost": totals["acknowledged_lost"] == 0,
        "wrong_allows": totals["wrong_allows"] == 0,
    }
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """Start the deployment, run the scenario (3 times; once with `quick`, faults held shorter), summarize."""
    rounds = 1 if quick else 3
    options = chaos.ChaosOptions(hold_s=6.0 if quick else 10.0, settle_s=3.0 if quick else 4.0)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kraft-acl-bench-cluster-") as tmp:
        deployment = Deployment(Path(tmp), users=USERS)
        progress("cluster: starting three KRaft nodes and a serve beside each")
        try:
            deployment.start()
            for n in range(rounds):
                progress(f"cluster: chaos run {n + 1} of {rounds}")
                before = _machine_state()
                report = chaos.run(deployment, options)
                runs.append({**report, "machine_before": before, "machine_after": _machine_state()})
        finally:
            deployment.stop()
    return {**summarize(runs), "options": vars(options), "runs": runs}
