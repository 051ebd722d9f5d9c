"""The faults of a chaos run, one at a time on the sidecar deployment, each measured while the workload runs: the
active controller serve killed (SIGKILL) or frozen (SIGSTOP), a broker-role serve killed or frozen, and the Kafka
node leading the log's partition killed. Each waits for ACL writes to be acknowledged again, brings the victim
back (restart or SIGCONT) and lets the cluster settle before the next.

Not thread-safe: one owner runs the faults in turn (a probe thread only sends one request to a frozen serve).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any

from kraftacl.api.endpoints import AUTHORIZE, CREATE_ACLS
from kraftacl.harness.cluster.deployment import ADMIN_TOKEN, BROKER_TOKEN, LOG_TOPIC, Deployment
from kraftacl.harness.cluster.kafka_clients import Acl, Admin
from kraftacl.harness.cluster.workload import STABLE, Workload


@dataclass
class FaultResult:
    """What one fault did: when, to what (and the broker beside it), and how long until writes and decisions came
    back."""

    name: str
    target: str
    node: int  # the broker beside the victim (1-based)
    at: float  # time.time() of the kill or freeze
    ended: float = 0.0  # when the victim was back and the cluster had settled
    write_resumed_s: float | None = None  # from the fault to the first acknowledged ACL change (None: never)
    restart_to_decisions_s: float | None = None  # a restarted serve: from its start to its first decision
    stale_write_status: int | None = None  # a frozen controller's pending ACL write, answered after SIGCONT
    stale_write: Acl | None = None
    log_leader_moved_s: float | None = None  # the log's partition had a new leader this long after the kill
    decision_gaps: dict[str, float] = field(default_factory=dict)  # node -> longest stretch without an ALLOW


def post(url: str, token: str, body: dict[str, Any], timeout: float) -> int:
    """POST JSON; the HTTP status (0 when nothing answered)."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


class Faults:
    """Runs each fault against `deployment` while `workload` runs."""

    def __init__(self, deployment: Deployment, workload: Workload, hold_s: float, recovery_s: float, settle_s: float):
        self.d = deployment
        self.workload = workload
        self.hold_s = hold_s
        self.recovery_s = recovery_s
        self.settle_s = settle_s

    def _write_resumed(self, at: float) -> float | None:
        assert self.workload.churn is not None
        deadline = time.time() + self.recovery_s
        while time.time() < deadline:
            acked = self.workload.churn.first_ack_after(at)
            if acked is not None:
                return acked - at
            time.sleep(0.05)
        return None

    def _settle(self, result: FaultResult) -> FaultResult:
        time.sleep(self.settle_s)
        result.ended = time.time()
        return result

    def _decides(self, index: int) -> bool:
        url = self.d.serves[index].url("CONTROLLER") + AUTHORIZE.path
        action = {"operation": "WRITE", "resource_type": "TOPIC", "resource_name": STABLE}
        body = {"principal": "User:alice", "client_address": "127.0.0.1", "actions": [action]}
        return post(url, BROKER_TOKEN, body, timeout=2) == 200

    def _restart(self, index: int) -> float:
        """Start a killed serve again; seconds from the start to its first decision."""
        started = time.time()
        self.d.serves[index].start(wait_ready=False, timeout=self.recovery_s)
        while not self._decides(index):
            if time.time() - started > self.recovery_s:
                raise TimeoutError(f"serve {index + 1} decided nothing within {self.recovery_s}s of its restart")
            time.sleep(0.02)
        return time.time() - started

    def _signal(self, index: int, sig: signal.Signals) -> None:
        pid = self.d.serves[index].pid
        assert pid is not None, f"serve {index + 1} is not running"
        os.killpg(pid, sig)

    def _active(self) -> int:
        deadline = time.time() + self.recovery_s
        while (active := self.d.active_controller()) is None:
            if time.time() > deadline:
                raise TimeoutError(f"no active controller within {self.recovery_s}s")
            time.sleep(0.1)
        return active

    def kill_active_controller(self) -> FaultResult:
        index = self._active()
        result = FaultResult("controller_sigkill", f"serve-{index + 1} (active controller)", index + 1, time.time())
        self.d.serves[index].kill()
        result.write_resumed_s = self._write_resumed(result.at)
        result.restart_to_decisions_s = self._restart(index)
        return self._settle(result)

    def freeze_active_controller(self) -> FaultResult:
        index = self._active()
        stale = Acl("User:stale", "WRITE", f"stale-{uuid.uuid4().hex[:8]}")
        result = FaultResult("controller_sigstop", f"serve-{index + 1} (active controller)", index + 1, time.time())
        result.stale_write = stale
        self._signal(index, signal.SIGSTOP)
        probe = threading.Thread(target=self._stale_write, args=(index, stale, result), daemon=True)
        probe.start()  # a write that reaches the frozen controller: answered only after SIGCONT, and never applied
        result.write_resumed_s = self._write_resumed(result.at)
        time.sleep(max(0.0, result.at + self.hold_s - time.time()))
        self._signal(index, signal.SIGCONT)
        probe.join(self.recovery_s)
        return self._settle(result)

    def _stale_write(self, index: int, acl: Acl, result: FaultResult) -> None:
        body = {"acls": [{**_acl_json(acl)}]}
        url = self.d.serves[index].url("CONTROLLER") + CREATE_ACLS.path
        result.stale_write_status = post(url, ADMIN_TOKEN, body, timeout=self.hold_s + self.recovery_s)

    def kill_broker_serve(self, index: int) -> FaultResult:
        result = FaultResult("broker_serve_sigkill", f"serve-{index + 1} (broker role)", index + 1, time.time())
        self.d.serves[index].kill()
        result.write_resumed_s = self._write_resumed(result.at)
        time.sleep(max(0.0, result.at + self.hold_s / 2 - time.time()))  # its broker decides through the others
        result.restart_to_decisions_s = self._restart(index)
        return self._settle(result)

    def freeze_broker_serve(self, index: int) -> FaultResult:
        result = FaultResult("broker_serve_sigstop", f"serve-{index + 1} (broker role)", index + 1, time.time())
        self._signal(index, signal.SIGSTOP)
        result.write_resumed_s = self._write_resumed(result.at)
        time.sleep(max(0.0, result.at + self.hold_s - time.time()))
        self._signal(index, signal.SIGCONT)
        return self._settle(result)

    def kill_log_leader_node(self) -> FaultResult:
        admin = Admin(self.d.cluster.client_config("admin"), timeout=5)
        leader = admin.leaders(LOG_TOPIC)[0]
        node = self.d.cluster.nodes[leader - 1]
        result = FaultResult("log_leader_node_sigkill", f"node-{leader} (leads {LOG_TOPIC})", leader, time.time())
        node.kill()
        watch = threading.Thread(target=self._leader_moved, args=(admin, leader, result), daemon=True)
        watch.start()  # where the stall goes: Kafka's own failover (a new leader) against kraft-acl's recovery
        result.write_resumed_s = self._write_resumed(result.at)
        watch.join(self.recovery_s)
        node.start(timeout=self.recovery_s * 2)
        deadline = time.time() + self.recovery_s * 2
        while len(_isr(admin)) < len(self.d.cluster.nodes) and time.time() < deadline:
            time.sleep(0.5)  # back in sync: the next fault may take any other node
        return self._settle(result)

    def _leader_moved(self, admin: Admin, old: int, result: FaultResult) -> None:
        deadline = time.time() + self.recovery_s
        while time.time() < deadline:
            try:
                leader = admin.leaders(LOG_TOPIC)[0]
            except Exception:  # metadata not available while the cluster fails over
                leader = -1
            if leader not in (-1, old):
                result.log_leader_moved_s = time.time() - result.at
                return
            time.sleep(0.05)


def _isr(admin: Admin) -> list[int]:
    try:
        return admin.in_sync(LOG_TOPIC)[0]
    except Exception:  # metadata not available yet
        return []


def _acl_json(acl: Acl) -> dict[str, str]:
    return {
        "resource_type": acl.resource_type,
        "resource_name": acl.topic,
        "pattern_type": "LITERAL",
        "principal": acl.principal,
        "host": "*",
        "operation": acl.operation,
        "permission_type": "ALLOW",
    }
