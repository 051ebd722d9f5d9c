"""ACL churn through the brokers' AdminClient: one thread grants and revokes a permission a client is exercising
(the toggle), and creates and later deletes ACLs of its own, round-robin over the brokers, recording every
acknowledged change and every failed attempt. An attempt of unknown outcome (a timeout, a broker that answered
an error) is retried until acknowledged, as a careful client does: the controller's de-duplication of identical
bindings (KIP-140) makes the retry safe, and the log check (`invariants`) proves no retry was applied twice.

Thread safety: the records are appended by the churn thread only and read after `stop`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from kraftacl.harness.cluster.kafka_clients import Acl, Admin, AdminError


@dataclass(frozen=True, slots=True)
class Change:
    """One acknowledged ACL change: what, when it was first tried, when its acknowledged attempt was sent, and when
    a broker acknowledged it."""

    op: str  # create | delete
    acl: Acl
    started: float
    acked: float
    attempts: int
    sent: float


@dataclass(frozen=True, slots=True)
class Failure:
    """One attempt a broker did not acknowledge (retried)."""

    op: str
    acl: Acl
    at: float
    error: str


class AclChurn:
    """The churn thread (see the module docstring); `toggle` is the ACL it grants and revokes in turn."""

    def __init__(
        self, admins: Sequence[Admin], toggle: Acl, own_principal: str, tag: str, interval_s: float = 0.15
    ) -> None:
        self.admins = list(admins)
        self.toggle = toggle
        self.own_principal = own_principal
        self.tag = tag  # in the names of its own ACLs: runs on one cluster never touch each other's
        self.interval_s = interval_s
        self.changes: list[Change] = []
        self.failures: list[Failure] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="acl-churn", daemon=True)
        self._turn = 0

    def start(self) -> AclChurn:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)

    def last_ack(self) -> float:
        """When the latest change was acknowledged (0 before any)."""
        return self.changes[-1].acked if self.changes else 0.0

    def first_ack_after(self, moment: float) -> float | None:
        """When the first change sent after `moment` was acknowledged (None: none yet); a change sent before it and
        answered just after says nothing about writes after `moment`."""
        later = [c.acked for c in self.changes if c.sent >= moment]
        return min(later) if later else None

    def _run(self) -> None:
        granted = False
        n = 0
        while not self._stop.is_set():
            own = Acl(self.own_principal, "READ", f"churn-{self.tag}-{n}")
            steps = [("delete" if granted else "create", self.toggle), ("create", own)]
            if n >= 3:
                steps.append(("delete", Acl(self.own_principal, "READ", f"churn-{self.tag}-{n - 3}")))
            for op, acl in steps:
                if not self._until_acked(op, acl):
                    return
                self._stop.wait(self.interval_s)
            granted = not granted
            n += 1

    def _until_acked(self, op: str, acl: Acl) -> bool:
        """Send the change until a broker acknowledges it; False when stopped first."""
        started = time.time()
        attempts = 0
        while not self._stop.is_set():
            attempts += 1
            sent = time.time()
            admin = self.admins[self._turn % len(self.admins)]
            self._turn += 1
            try:
                if op == "create":
                    admin.create_acls([acl])
                else:
                    admin.delete_acls([acl])
            except AdminError as exc:
                self.failures.append(Failure(op, acl, time.time(), str(exc)))
                self._stop.wait(0.1)
                continue
            self.changes.append(Change(op, acl, started, time.time(), attempts, sent))
            return True
        return False
