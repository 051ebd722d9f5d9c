"""The sidecar deployment on a real cluster: three KRaft nodes, each broker authorized by the kraft-acl plugin, a
`kraft-acl serve` beside each broker (its plugin asks it first, then the others), all on one Kafka-backed log
(replication factor 3, min.insync.replicas 2); the first `controllers` serves also hold the controller role and
Kafka's group elects the one that writes. docs/deployment.md describes the same topology with files under
examples/cluster/.

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

from kraftacl.harness.cluster.kafka_clients import Admin
from kraftacl.harness.cluster.kafka_cluster import KafkaCluster
from kraftacl.harness.plugin_jar import authorizer_class, ensure_built, kafka_script
from kraftacl.harness.serve_process import ServeProcess, free_port

BROKER_TOKEN = "cluster-broker-token-0123456789"
ADMIN_TOKEN = "cluster-admin-token-0123456789"
LOG_TOPIC = "kraft-acl-metadata"
LOG_USER = "kraftacl"  # the serves' Kafka principal: a super user of the brokers (its decisions cannot wait for serve)
INTERNAL = "INTERNAL"


class Deployment:
    """A `KafkaCluster` of `nodes` nodes and one serve beside each broker (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        *,
        nodes: int = 3,
        controllers: int = 2,
        users: tuple[str, ...] = (),
        kafka_version: str | None = None,
    ) -> None:
        self.root = root.resolve()
        self.controllers = controllers
        self.kafka_version = kafka_version or kafka_script("version")
        self.ports = [(free_port(), free_port()) for _ in range(nodes)]  # (CONTROLLER, CLIENT) of each serve
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "tokens").write_text(f"User:broker {BROKER_TOKEN}\nUser:admin {ADMIN_TOKEN}\n")
        (self.root / "plugin.token").write_text(BROKER_TOKEN + "\n")
        urls = [f"http://127.0.0.1:{controller}" for controller, _ in self.ports]
        self.cluster = KafkaCluster(
            self.root / "kafka",
            nodes=nodes,
            authorizer=True,
            props=self._broker_props(),
            node_props={
                i + 1: {"kraft.acl.urls": ",".join([urls[i], *urls[:i], *urls[i + 1 :]])} for i in range(nodes)
            },
            listeners=[f"{INTERNAL}:SASL_PLAINTEXT"],
            classpath=str(ensure_built()),
            users=(*users, LOG_USER),
            kafka_version=self.kafka_version,
        )
        self.serves: list[ServeProcess] = []

    def _broker_props(self) -> dict[str, str]:
        jaas = (
            'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
            f'user_admin="admin-secret" user_{LOG_USER}="{LOG_USER}-secret";'
        )
        return {
            "authorizer.class.name": authorizer_class(self.kafka_version),
            "kraft.acl.token.file": str(self.root / "plugin.token"),
            "kraft.acl.ready.poll.ms": "100",
            # An ACL write that reaches a frozen controller costs one admin timeout before the plugin skips that
            # serve (a standby is elected within the group's session timeout): keep it short.
            "kraft.acl.admin.timeout.ms": "3000",
            "super.users": f"User:admin;User:ANONYMOUS;User:{LOG_USER}",
            "early.start.listeners": f"CONTROLLER,{INTERNAL}",
            "inter.broker.listener.name": INTERNAL,
            f"listener.name.{INTERNAL.lower()}.plain.sasl.jaas.config": jaas,
        }

    def serve_props(self, index: int) -> dict[str, str]:
        """The properties of the serve beside node `index + 1` (examples/cluster/serve-*.properties, with ports)."""
        controller, client = self.ports[index]
        return {
            "node.id": str(index + 1),
            "process.roles": "broker,controller" if index < self.controllers else "broker",
            "listeners": f"CONTROLLER://127.0.0.1:{controller},CLIENT://127.0.0.1:{client}",
            "early.start.listeners": "CONTROLLER",
            "super.users": "User:admin",
            "auth.token.file": str(self.root / "tokens"),
            "broker.principals": "User:broker",
            "auth.public.endpoints": "status,metrics",
            "metadata.log.bootstrap.servers": self.cluster.bootstrap(INTERNAL),
            "metadata.log.topic": LOG_TOPIC,
            "metadata.log.replication.factor": "3",
            "metadata.log.min.insync.replicas": "2",
            "metadata.log.snapshot.dir": str(self.root / f"serve-{index + 1}" / "snapshots"),
            "metadata.log.kafka.security.protocol": "SASL_PLAINTEXT",
            "metadata.log.kafka.sasl.mechanism": "PLAIN",
            "metadata.log.kafka.sasl.username": LOG_USER,
            "metadata.log.kafka.sasl.password": f"{LOG_USER}-secret",
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
        url = f"http://127.0.0.1:{self.ports[index][0]}/v1/status"
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
        """Stop every serve, then every node."""
        for serve in self.serves:
            serve.stop(timeout=15)
        self.cluster.stop()


def _reachable_brokers(admin: Admin) -> int:
    try:
        return admin.broker_count()
    except Exception:  # not up yet
        return 0
