"""A real multi-node KRaft cluster on loopback for the cluster tests and `kraft-acl bench --suite cluster`, driven
through scripts/kafka-cluster.sh (the whole cluster) and scripts/kafka-broker.sh (one node: crash, restart);
a node is frozen and thawed with SIGSTOP/SIGCONT to its process group.

Not thread-safe, except that `start` may run on one thread while another calls `wait_for_ports` (the brokers'
plugin listeners open only once the serves beside them are ready, and those need the ports first). Every JVM dies
with this process: the scripts' watchdog watches our pid, and `stop` kills what is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftacl.harness.plugin_jar import REPO_ROOT

CLUSTER_SCRIPT = REPO_ROOT / "scripts" / "kafka-cluster.sh"
BROKER_SCRIPT = REPO_ROOT / "scripts" / "kafka-broker.sh"
#: SASL/PLAIN users every sasl node knows (scripts/kafka-broker.sh): admin (a super user), alice, bob; `users` adds.
BUILT_IN_USERS = ("admin", "alice", "bob")


class KafkaScriptError(RuntimeError):
    """A scripts/kafka-*.sh command failed or timed out (a cluster or a node did not start or stop); the message
    carries the script's output."""


def parse_env(text: str) -> dict[str, str]:
    """The KEY=VALUE lines the scripts print."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.replace("_", "").isalnum() and key.isupper():
            out[key] = value
    return out


def run_script(script: Path, args: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> str:
    """Run one of the scripts; KafkaScriptError with its stderr tail when it fails or times out."""
    try:
        proc = subprocess.run(
            ["bash", str(script), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise KafkaScriptError(f"`{script.name} {' '.join(args)}` timed out after {timeout:.0f}s") from exc
    if proc.returncode != 0:
        raise KafkaScriptError(f"`{script.name} {' '.join(args)}` exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return proc.stdout


@dataclass
class ClusterNode:
    """One combined broker + controller JVM of the cluster, in `directory` (node-<id>)."""

    node_id: int
    directory: Path
    watch_env: dict[str, str] = field(default_factory=dict)

    def ports(self) -> dict[str, str]:
        """PORT (the main client listener), PORT_<NAME> per extra listener: fixed at format time."""
        return parse_env((self.directory / "ports.env").read_text())

    def bootstrap(self, listener: str | None = None) -> str:
        """127.0.0.1:<port> of the main client listener, or of an extra one."""
        ports = self.ports()
        return f"127.0.0.1:{ports['PORT' if listener is None else f'PORT_{listener}']}"

    @property
    def pid(self) -> int | None:
        """The JVM's pid (its process group) while it runs."""
        try:
            pid = int((self.directory / "broker.pid").read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        return pid

    def kill(self) -> None:
        """SIGKILL, like a crash (data and config stay)."""
        run_script(BROKER_SCRIPT, ["stop", "--kill", str(self.directory)], timeout=60)

    def start(self, timeout: float = 120.0) -> None:
        """Start again on the saved config, data and ports; returns once it has started."""
        env = {**self.watch_env, "KAFKA_START_TIMEOUT": str(int(timeout))}
        run_script(BROKER_SCRIPT, ["start", str(self.directory)], timeout=timeout + 60, env=env)

    def signal(self, sig: signal.Signals) -> None:
        """Send a signal to the JVM's process group (SIGSTOP freezes it, SIGCONT thaws it)."""
        pid = self.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, sig)


class KafkaCluster:
    """`nodes` KRaft nodes on loopback (scripts/kafka-cluster.sh start DIR), one static quorum of all of them."""

    def __init__(
        self,
        directory: Path,
        *,
        nodes: int = 3,
        sasl: bool = True,
        authorizer: bool = False,
        props: Mapping[str, str] | None = None,
        node_props: Mapping[int, Mapping[str, str]] | None = None,
        listeners: Sequence[str] = (),
        classpath: str | None = None,
        users: Sequence[str] = (),
        kafka_version: str | None = None,
        start_timeout: float = 240.0,
    ) -> None:
        self.directory = directory.resolve()
        self.count = nodes
        self.sasl = sasl or authorizer
        self.authorizer = authorizer
        self.props = dict(props or {})
        self.node_props = {i: dict(p) for i, p in (node_props or {}).items()}
        self.listeners = tuple(listeners)
        self.classpath = classpath
        self.users = tuple(users)
        self.kafka_version = kafka_version
        self.start_timeout = start_timeout
        self.env: dict[str, str] = {}
        watch = {"KAFKA_WATCH_PID": str(os.getpid())}
        extra = [u for u in users if u not in BUILT_IN_USERS]
        if extra:
            watch["KAFKA_SASL_USERS"] = " ".join(f"{u}:{u}-secret" for u in extra)
        self.nodes = [ClusterNode(i, self.directory / f"node-{i}", watch) for i in range(1, nodes + 1)]

    def _args(self) -> list[str]:
        args = ["start", "--nodes", str(self.count)]
        if self.kafka_version:
            args += ["--kafka-version", self.kafka_version]
        args += ["--sasl"] if self.sasl else []
        args += ["--authorizer"] if self.authorizer else []
        for key, value in self.props.items():
            args += ["--prop", f"{key}={value}"]
        for node, props in self.node_props.items():
            args += [a for key, value in props.items() for a in ("--node-prop", f"{node}:{key}={value}")]
        for listener in self.listeners:
            args += ["--listener", listener]
        if self.classpath:
            args += ["--classpath", self.classpath]
        return [*args, str(self.directory)]

    def start(self) -> str:
        """Start every node (formatting them on first use) and wait until each has started; the bootstrap list."""
        env = {**self.nodes[0].watch_env, "KAFKA_START_TIMEOUT": str(int(self.start_timeout))}
        self.env = parse_env(run_script(CLUSTER_SCRIPT, self._args(), self.start_timeout + 120, env))
        return self.env["BOOTSTRAP"]

    def wait_for_ports(self, timeout: float = 120.0) -> None:
        """Wait until every node's ports are chosen (DIR/node-<i>/ports.env), while `start` runs elsewhere."""
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            while not (node.directory / "ports.env").is_file():
                if time.monotonic() > deadline:
                    raise KafkaScriptError(f"no {node.directory / 'ports.env'} within {timeout:.0f}s")
                time.sleep(0.1)

    def bootstrap(self, listener: str | None = None) -> str:
        """Every node's address on the main client listener (or an extra one), comma-separated."""
        return ",".join(node.bootstrap(listener) for node in self.nodes)

    def client_config(
        self, user: str = "admin", listener: str | None = None, node: int | None = None
    ) -> dict[str, Any]:
        """confluent-kafka settings for `user` on a listener of every node (or of one node)."""
        chosen = self.nodes if node is None else [self.nodes[node - 1]]
        conf: dict[str, Any] = {"bootstrap.servers": ",".join(n.bootstrap(listener) for n in chosen)}
        if self.sasl:
            password = "admin-secret" if user == "admin" else f"{user}-secret"
            conf.update(
                {
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN",
                    "sasl.username": user,
                    "sasl.password": password,
                }
            )
        return conf

    def stop(self, hard: bool = False) -> None:
        """Stop every node (SIGTERM, or SIGKILL with `hard`); data and config stay in the directory."""
        with contextlib.suppress(KafkaScriptError):
            run_script(CLUSTER_SCRIPT, ["stop", *(["--kill"] if hard else []), str(self.directory)], timeout=120)
        for node in self.nodes:  # whatever is left (a frozen JVM ignores SIGTERM)
            pid = node.pid
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)

    def log_tail(self, lines: int = 40) -> str:
        """The end of every node's server.log, for failure messages."""
        parts = []
        for node in self.nodes:
            path = node.directory / "logs" / "server.log"
            if path.is_file():
                tail = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
                parts.append(f"==> {path} <==\n" + "\n".join(tail))
        return "\n".join(parts)
