"""The sidecar deployment on a real cluster, exactly as examples/cluster/ describes it (docs/deployment.md): three
KRaft nodes, each broker authorized by the kraft-acl plugin (examples/cluster/broker.properties), a `kraft-acl serve`
beside each broker (examples/cluster/serve-<n>.properties; its plugin asks it first, then the others), all on one
Kafka-backed log (replication factor 3, min.insync.replicas 2); serves 1 and 2 also hold the controller role and
Kafka's group elects the one that writes. Only what must differ on one machine is replaced: ports, the data
directories and absolute paths to the example's token files.

The brokers' plugin listeners open only once a serve is ready (KIP-801), and the serves read their log from those
same brokers: the serves and the brokers' own replication use an INTERNAL listener in early.start.listeners,
authenticated as a super user (`User:kraftacl`), so neither waits for the other.

Not thread-safe: one owner starts, faults and stops it.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kraftacl.api.endpoints import STATUS
from kraftacl.authorizer.decision.config import load_properties
from kraftacl.harness.cluster.kafka_clients import Admin
from kraftacl.harness.cluster.kafka_cluster import KafkaCluster
from kraftacl.harness.plugin_jar import REPO_ROOT, authorizer_class, ensure_built, kafka_script
from kraftacl.harness.serve_process import ServeProcess, ServeProcessError, free_port

EXAMPLES = REPO_ROOT / "examples" / "cluster"
BROKER_TOKEN = "cluster-broker-token-0123456789"  # User:broker's in examples/cluster/serve.tokens
ADMIN_TOKEN = "cluster-admin-token-0123456789"  # User:admin's
LOG_TOPIC = "kraft-acl-metadata"
LOG_USER = "kraftacl"  # the serves' Kafka principal: a super user of the brokers (its decisions cannot wait for serve)
INTERNAL = "INTERNAL"
NODES = 3


class Deployment:
    """A `KafkaCluster` of three nodes and one serve beside each broker (see the module docstring)."""

    def __init__(self, root: Path, *, users: tuple[str, ...] = (), kafka_version: str | None = None) -> None:
        self.root = root.resolve()
        self.kafka_version = kafka_version or kafka_script("version")
        self.ports = [(free_port(), free_port()) for _ in range(NODES)]  # (CONTROLLER, CLIENT) of each serve
        self.examples = [load_properties(EXAMPLES / f"serve-{n}.properties") for n in range(1, NODES + 1)]
        self.controllers = sum("controller" in props["process.roles"] for props in self.examples)
        self.root.mkdir(parents=True, exist_ok=True)
        urls = [f"http://127.0.0.1:{controller}" for controller, _ in self.ports]
        self.cluster = KafkaCluster(
            self.root / "kafka",
            nodes=NODES,
            authorizer=True,
            props=self._broker_props(),
            node_props={
                i + 1: {"kraft.acl.urls": ",".join([urls[i], *urls[:i], *urls[i + 1 :]])} for i in range(NODES)
            },
            listeners=[f"{INTERNAL}:SASL_PLAINTEXT"],
            classpath=str(ensure_built()),
            users=(*users, LOG_USER),
            kafka_version=self.kafka_version,
        )
        self.serves: list[ServeProcess] = []

    def _broker_props(self) -> dict[str, str]:
        props = load_properties(EXAMPLES / "broker.properties")
        props["authorizer.class.name"] = authorizer_class(self.kafka_version)
        props["kraft.acl.token.file"] = str(EXAMPLES / "plugin.token")
        props["kraft.acl.ready.poll.ms"] = "100"
        return props

    def serve_props(self, index: int) -> dict[str, str]:
        """examples/cluster/serve-<index + 1>.properties with this machine's ports, directories and paths."""
        controller, client = self.ports[index]
        return {
            **self.examples[index],
            "listeners": f"CONTROLLER://127.0.0.1:{controller},CLIENT://127.0.0.1:{client}",
            "auth.token.file": str(EXAMPLES / "serve.tokens"),
            "metadata.log.bootstrap.servers": self.cluster.bootstrap(INTERNAL),
            "metadata.log.snapshot.dir": str(self.root / f"serve-{index + 1}" / "snapshots"),
        }

    def start(self, timeout: float = 300.0) -> None:
        """Start the nodes, then (once their INTERNAL listeners are up) the serves; return when all are ready and a
        controller is active."""
        failure: list[BaseException] = []

        def start_cluster() -> None:
            try:
                self.cluster.start()
            except BaseException as exc:  # reported by the caller's join below
                failure.append(exc)

        starter = threading.Thread(target=start_cluster, name="cluster-start", daemon=True)
        starter.start()
        self.cluster.wait_for_ports(timeout)
        admin = Admin(self.cluster.client_config(LOG_USER, INTERNAL), timeout=5)
        self._wait(lambda: _reachable_brokers(admin) == len(self.cluster.nodes), "every broker registered", timeout)
        self.serves = [ServeProcess(self.root / f"serve-{i + 1}", self.serve_props(i)) for i in range(len(self.ports))]
        for serve in self.serves:
            serve.start(wait_ready=False, timeout=timeout)
        for serve in self.serves:
            serve.wait_ready(timeout)
        starter.join(timeout)
        if failure:
            raise failure[0]
        self._wait(lambda: self.active_controller() is not None, "an active controller", timeout)

    def _wait(self, check: Any, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} within {timeout:.0f}s\n{self.cluster.log_tail()}")
            time.sleep(0.2)

    def status(self, index: int) -> dict[str, Any] | None:
        """GET /v1/status of a serve (None when it does not answer)."""
        url = f"http://127.0.0.1:{self.ports[index][0]}{STATUS.path}"
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                status: dict[str, Any] = json.loads(answer.read())
                return status
        except urllib.error.HTTPError as exc:
            return dict(json.loads(exc.read() or b"{}"))
        except OSError:
            return None

    def active_controller(self) -> int | None:
        """The index of the serve that writes the log now (None while none does)."""
        for index in range(self.controllers):
            status = self.status(index)
            if status is not None and (status.get("controller") or {}).get("active"):
                return index
        return None

    def admin(self, user: str = "admin", node: int | None = None, timeout: float = 10.0) -> Admin:
        """An AdminClient on the brokers' client listeners (ACL changes go through their plugin)."""
        return Admin(self.cluster.client_config(user, node=node), timeout)

    def stop(self) -> None:
        """Stop every serve, then every node; a serve that did not stop in time (killed) is raised at the end."""
        late: list[ServeProcessError] = []
        for serve in self.serves:
            try:
                serve.stop(timeout=15)
            except ServeProcessError as exc:  # already killed by stop(): the others and the nodes stop first
                late.append(exc)
        self.cluster.stop()
        if late:
            raise late[0]


def _reachable_brokers(admin: Admin) -> int:
    try:
        return admin.broker_count()
    except Exception:  # not up yet
        return 0
