"""The traffic of a chaos run on the sidecar deployment: producers and a consumer as several principals on every
broker, and ACL churn through the brokers' AdminClient, with what each recorded.

- alice has WRITE on `chaos-stable` for the whole run: her loops (one per partition, so one per leader broker)
  show whether each broker keeps deciding;
- bob consumes `chaos-stable` in a group (READ on the topic and the group);
- carol writes to `chaos-toggle` while the churn grants and revokes her WRITE there: every ALLOW she gets is
  checked against the log (`invariants`);
- the churn also creates and deletes ACLs of `User:churn`, whose acknowledgements are checked against the log.

Not thread-safe: one owner starts and stops it; the loops' records are read after `stop`.
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kraftacl.harness.cluster.churn import AclChurn
from kraftacl.harness.cluster.deployment import Deployment
from kraftacl.harness.cluster.kafka_clients import Acl, Admin, ConsumerLoop, Outcome, ProducerLoop

STABLE, TOGGLE, GROUP = "chaos-stable", "chaos-toggle", "chaos-bob"
USERS = ("alice", "bob", "carol", "churn", "stale")
TOGGLE_ACL = Acl("User:carol", "WRITE", TOGGLE)
BASE_ACLS = (
    Acl("User:alice", "WRITE", STABLE),
    Acl("User:bob", "READ", STABLE),
    Acl("User:bob", "READ", GROUP, "GROUP"),
)


@dataclass
class Workload:
    """The running loops and the churn of one chaos run."""

    deployment: Deployment
    partitions: int = 3
    stable: list[ProducerLoop] = field(default_factory=list)
    toggle: list[ProducerLoop] = field(default_factory=list)
    consumer: ConsumerLoop | None = None
    churn: AclChurn | None = None

    def prepare(self) -> None:
        """Topics (one partition per broker, replication 3) and the ACLs that never change."""
        admin = self.deployment.admin()
        admin.create_topics([STABLE, TOGGLE], self.partitions, 3)
        admin.create_acls_acknowledged(BASE_ACLS)

    def start(self) -> None:
        cluster = self.deployment.cluster
        self.stable = [ProducerLoop(cluster.client_config("alice"), STABLE, p) for p in range(self.partitions)]
        self.toggle = [ProducerLoop(cluster.client_config("carol"), TOGGLE, p) for p in range(self.partitions)]
        self.consumer = ConsumerLoop(cluster.client_config("bob"), STABLE, GROUP)
        # 5 s per attempt: librdkafka sends CreateAcls to the broker its metadata names controller, and one sent to a
        # broker that just died waits for the request timeout before the churn tries again.
        admins = [self.deployment.admin(node=n.node_id, timeout=5.0) for n in cluster.nodes]
        self.churn = AclChurn(admins, TOGGLE_ACL, "User:churn", uuid.uuid4().hex[:8])
        for loop in [*self.stable, *self.toggle, self.consumer]:
            loop.start()
        self.churn.start()

    def stop(self) -> None:
        for loop in [*self.stable, *self.toggle, *([self.consumer] if self.consumer else [])]:
            loop.stop()
        if self.churn is not None:
            self.churn.stop()

    def leaders(self) -> dict[int, int]:
        """partition of chaos-stable -> the node leading it now."""
        return Admin(self.deployment.cluster.client_config("admin")).leaders(STABLE)

    def stable_outcomes(self, partition: int) -> list[Outcome]:
        return self.stable[partition].outcomes

    def toggle_allows(self) -> list[Outcome]:
        return [o for loop in self.toggle for o in loop.outcomes if o.allowed]

    def decisions(self) -> dict[str, Any]:
        """Counts of every recorded decision: allowed, denied, and other failures (no decision)."""
        outcomes = [o for loop in [*self.stable, *self.toggle] for o in loop.outcomes]
        if self.consumer is not None:
            outcomes += self.consumer.outcomes
        failed = Counter(o.error for o in outcomes if o.error is not None)
        return {
            "allowed": sum(o.allowed for o in outcomes),
            "denied": sum(not o.allowed and o.error is None for o in outcomes),
            "failed": sum(failed.values()),
            "failed_by_error": dict(failed.most_common(5)),
            "stable_denied": sum(not o.allowed and o.error is None for loop in self.stable for o in loop.outcomes),
        }


def max_gap(outcomes: list[Outcome], start: float, end: float) -> float:
    """The longest time within [start, end] without an ALLOW among `outcomes` (a stalled or denying broker)."""
    times = sorted(o.done for o in outcomes if o.allowed and start <= o.done <= end)
    edges = [start, *times, end]
    return max(b - a for a, b in itertools.pairwise(edges))
