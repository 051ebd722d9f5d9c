"""One chaos run on the sidecar deployment (the proof of issue #30): the workload runs while each fault happens in
turn; afterwards the whole log is read back and checked (`invariants`), and the figures `kraft-acl bench --suite
cluster` prints and the chaos test asserts on are computed.

Figures (seconds unless named otherwise): `controller_failover_s` (p50 and max over the kill and the freeze of the
active controller: from the fault to the first ACL change a broker acknowledged), `serve_restart_to_decisions_s`
(a killed serve restarted under its running broker: from its start to its first decision),
`write_unavailable_s` (per fault: fault to first acknowledged change), `log_leader_kill_write_stall_s`,
`decisions_max_gap_s` (per fault and broker: the longest stretch without an ALLOW of alice's stable WRITE on the
partitions that broker leads; `other_brokers` is the max over brokers the fault was not beside),
`propagation_s` (an ACL acknowledged through a broker until every serve decides by it), and the invariants'
counts: `acknowledged_lost`, `applied_twice`, `wrong_allows`, `epoch_regressions`, `stale_writes_applied`.

Not thread-safe: one call at a time.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec

from kraftacl.api.endpoints import AUTHORIZE
from kraftacl.harness.cluster.churn import Failure
from kraftacl.harness.cluster.deployment import BROKER_TOKEN, INTERNAL, LOG_TOPIC, LOG_USER, Deployment
from kraftacl.harness.cluster.faults import FaultResult, Faults
from kraftacl.harness.cluster.invariants import Verdict, check, read_log
from kraftacl.harness.cluster.kafka_clients import Acl
from kraftacl.harness.cluster.workload import Workload, max_gap
from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLogConfig

#: The invariants' counts in a run's figures (each must be 0).
COUNTS = ("acknowledged_lost", "applied_twice", "wrong_allows", "epoch_regressions", "stale_writes_applied")


@dataclass(frozen=True)
class ChaosOptions:
    """How long each fault is held, how long the cluster settles after it, how long recovery may take at most, and
    the propagation window an ALLOW may lag the log by."""

    hold_s: float = 10.0
    settle_s: float = 4.0
    recovery_s: float = 60.0
    window_s: float = 2.0
    propagation_samples: int = 10


def propagation(deployment: Deployment, samples: int) -> list[float]:
    """Seconds from an ACL acknowledged through a broker's AdminClient until every serve decides by it.

    Each serve is asked over one keep-alive connection: a new HTTP client per question (its TLS context
    alone) cost about 20 ms, which the serves asked later in a round added to their figure.
    """
    admin = deployment.admin()
    out = []
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(serve.client("CONTROLLER", BROKER_TOKEN)) for serve in deployment.serves]
        for n in range(samples):
            acl = Acl("User:prop", "READ", f"prop-{n}-{time.time_ns()}")
            acked = admin.create_acls_acknowledged([acl])
            pending = set(range(len(clients)))
            while pending:
                for index in list(pending):
                    if _allowed(clients[index], acl):
                        pending.discard(index)
                if time.time() - acked > 30:
                    raise TimeoutError(f"{acl} not decided by serves {sorted(pending)} within 30 s")
            out.append(time.time() - acked)
    return out


def _allowed(client: httpx.Client, acl: Acl) -> bool:
    action = {"operation": acl.operation, "resource_type": acl.resource_type, "resource_name": acl.topic}
    body = {"principal": acl.principal, "client_address": "127.0.0.1", "actions": [action]}
    answer = client.post(AUTHORIZE.path, content=msgspec.json.encode(body))
    return bool(answer.status_code == 200 and msgspec.json.decode(answer.content)["results"] == ["ALLOWED"])


def run(deployment: Deployment, options: ChaosOptions) -> dict[str, Any]:
    """The whole run; the figures and every violation found."""
    workload = Workload(deployment)
    workload.prepare()
    prop = propagation(deployment, options.propagation_samples)
    faults = Faults(deployment, workload, options.hold_s, options.recovery_s, options.settle_s)
    workload.start()
    results: list[FaultResult] = []
    try:
        time.sleep(options.settle_s)
        broker_serve = len(deployment.serves) - 1  # the last serve has only the broker role
        for fault in (
            faults.kill_active_controller,
            faults.freeze_active_controller,
            lambda: faults.kill_broker_serve(broker_serve),
            lambda: faults.freeze_broker_serve(broker_serve),
            faults.kill_log_leader_node,
        ):
            leaders = workload.leaders()
            result = fault()
            result.decision_gaps = _gaps(workload, leaders, result)
            results.append(result)
    finally:
        workload.stop()
    config = KafkaLogConfig(
        deployment.cluster.bootstrap(INTERNAL),
        topic=LOG_TOPIC,
        create_topic=False,
        client=_client(deployment),
    )
    assert workload.churn is not None
    verdict = check(
        read_log(config),
        workload.churn.changes,
        workload.churn.toggle,
        workload.toggle_allows(),
        options.window_s,
        never=[r.stale_write for r in results if r.stale_write is not None],
    )
    return figures(results, verdict, workload, prop, options)


def _client(deployment: Deployment) -> dict[str, str]:
    conf = deployment.cluster.client_config(LOG_USER, INTERNAL)
    return {k: str(v) for k, v in conf.items() if k != "bootstrap.servers"}


def _gaps(workload: Workload, leaders: dict[int, int], result: FaultResult) -> dict[str, float]:
    """node -> the longest stretch without an ALLOW on the partitions it led, from the fault until it settled."""
    gaps: dict[str, float] = {}
    for partition, node in leaders.items():
        if result.name == "log_leader_node_sigkill" and node == result.node:
            continue  # that broker is down: its partitions move, which is Kafka's failover, not a decision
        gap = max_gap(workload.stable_outcomes(partition), result.at, result.ended)
        gaps[f"node-{node}"] = max(gaps.get(f"node-{node}", 0.0), round(gap, 3))
    return gaps


def _summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"p50": None, "max": None, "runs": []}
    return {
        "p50": round(statistics.median(values), 3),
        "max": round(max(values), 3),
        "runs": [round(v, 3) for v in values],
    }


def figures(
    results: list[FaultResult], verdict: Verdict, workload: Workload, prop: list[float], options: ChaosOptions
) -> dict[str, Any]:
    """The JSON object of the run (the module docstring names each figure)."""
    failover = [r.write_resumed_s for r in results if r.name.startswith("controller_")]
    restarts = [r.restart_to_decisions_s for r in results if r.restart_to_decisions_s is not None]
    by_fault = {r.name: r.decision_gaps for r in results}
    others = [g for r in results for node, g in by_fault[r.name].items() if node != f"node-{r.node}"]
    stale = [r for r in results if r.stale_write_status is not None]
    churn = workload.churn
    assert churn is not None
    return {
        "controller_failover_s": _summary([f for f in failover if f is not None]),
        "controller_failover_missing": sum(f is None for f in failover),
        "serve_restart_to_decisions_s": _summary(restarts),
        "write_unavailable_s": {r.name: _round(r.write_resumed_s) for r in results},
        "log_leader_kill_write_stall_s": next(
            (_round(r.write_resumed_s) for r in results if r.name == "log_leader_node_sigkill"), None
        ),
        "log_leader_moved_s": next(
            (_round(r.log_leader_moved_s) for r in results if r.name == "log_leader_node_sigkill"), None
        ),
        "decisions_max_gap_s": {"by_fault": by_fault, "other_brokers": round(max(others, default=0.0), 3)},
        "propagation_s": _summary(prop),
        "acknowledged_lost": len(verdict.acknowledged_lost),
        "applied_twice": len(verdict.applied_twice),
        "wrong_allows": len(verdict.wrong_allows),
        "epoch_regressions": len(verdict.epoch_regressions),
        "stale_writes_applied": len(verdict.never_logged_violations),
        "stale_write_answers": [r.stale_write_status for r in stale],
        "max_staleness_s": round(verdict.max_staleness_s, 3),
        "window_s": options.window_s,
        "acl_changes_acknowledged": len(churn.changes),
        "acl_change_attempts_failed": len(churn.failures),
        "log_batches": verdict.batches,
        "decisions": workload.decisions(),
        "faults": [
            {
                "name": r.name,
                "at": round(r.at, 3),
                "target": r.target,
                "write_resumed_s": _round(r.write_resumed_s),
                "restart_to_decisions_s": _round(r.restart_to_decisions_s),
                "held_s": round(r.ended - r.at, 1),
                **_refusals(churn.failures, r),
            }
            for r in results
        ],
        "violations": verdict.acknowledged_lost[:5]
        + verdict.applied_twice[:5]
        + verdict.wrong_allows[:5]
        + verdict.epoch_regressions[:5]
        + verdict.never_logged_violations[:5],
    }


def _refusals(failures: list[Failure], result: FaultResult) -> dict[str, Any]:
    """The ACL change attempts brokers refused during a fault: how many, and the distinct reasons (where the time
    of an unavailable write went)."""
    during = [f for f in failures if result.at <= f.at <= result.ended]
    return {"refused_attempts": len(during), "refusals": sorted({f.error for f in during})[:4]}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
