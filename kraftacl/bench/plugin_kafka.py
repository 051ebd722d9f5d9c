"""The Kafka side of the plugin benchmark: test brokers driven through scripts/kafka-broker.sh, topics and ACLs
created with confluent-kafka's AdminClient, and the timed client work (Metadata requests, produce) with the
CPU the broker and serve processes spent on it.

Not thread-safe; one benchmark drives these. Brokers run in their own process groups and are stopped by
`Broker.stop` (the script's watchdog also stops them if this process dies).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kraftacl.bench.tenant_acls import Acl
from kraftacl.harness.plugin_jar import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "kafka-broker.sh"
# Kafka's own launch defaults (kafka-server-start.sh, kafka-run-class.sh), not the test script's fast-start ones:
# C2 compiles StandardAuthorizer's loops as in production.
JVM_ENV = {"KAFKA_HEAP_OPTS": "-Xms1g -Xmx1g", "KAFKA_JIT_GC_OPTS": "-XX:+UseG1GC -XX:MaxGCPauseMillis=20"}


class BrokerError(RuntimeError):
    """A test broker did not start or stop; the message has the script's output."""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Broker:
    """One single-node KRaft broker of scripts/kafka-broker.sh (SASL/PLAIN, an authorizer) in `directory`."""

    def __init__(self, directory: Path, props: Mapping[str, str], classpath: str | None, users: Sequence[str]) -> None:
        self.directory = directory
        self.props = dict(props)
        self.classpath = classpath
        self.users = list(users)
        self.bootstrap = ""
        self.pid = 0

    def start(self, timeout: float = 300.0) -> float:
        """Start (format on first use; later starts reuse the data); seconds until it serves its listener."""
        args = ["start", "--authorizer"]
        for key, value in self.props.items():
            args += ["--prop", f"{key}={value}"]
        if self.classpath:
            args += ["--classpath", self.classpath]
        env = {
            **os.environ,
            **JVM_ENV,
            "KAFKA_START_TIMEOUT": str(int(timeout)),
            "KAFKA_WATCH_PID": str(os.getpid()),
            "KAFKA_SASL_USERS": " ".join(f"{u}:{u}-secret" for u in self.users),
        }
        started = time.perf_counter()
        out = self._script([*args, str(self.directory)], env, timeout + 60)
        seconds = time.perf_counter() - started
        values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        self.bootstrap, self.pid = values["BOOTSTRAP"], int(values["PID"])
        return seconds

    def stop(self) -> None:
        """SIGTERM and wait (SIGKILL after 60 s)."""
        self._script(["stop", str(self.directory)], {**os.environ, "KAFKA_STOP_TIMEOUT": "60"}, 120)

    def _script(self, args: list[str], env: Mapping[str, str], timeout: float) -> str:
        proc = subprocess.run(
            ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=dict(env), timeout=timeout, check=False
        )
        if proc.returncode != 0:
            raise BrokerError(f"kafka-broker.sh {args[0]} failed:\n{proc.stderr[-3000:]}")
        return proc.stdout

    def conf(self, user: str, **extra: Any) -> dict[str, Any]:
        """confluent-kafka settings for one SASL user of this broker."""
        return {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": f"{user}-secret",
            "log_level": 0,  # no librdkafka lines on stderr (a Python logger outlives a client badly)
            **extra,
        }


def create_topics(broker: Broker, names: Sequence[str], timeout: float = 120.0) -> None:
    """Create 1-partition topics as the super user, 100 per request, and wait until Metadata lists them all."""
    admin = AdminClient(broker.conf("admin"))
    for start in range(0, len(names), 100):
        futures = admin.create_topics([NewTopic(n, 1, 1) for n in names[start : start + 100]], request_timeout=120)
        for future in futures.values():
            future.result()
    deadline = time.monotonic() + timeout
    while not set(names) <= set(admin.list_topics(timeout=60).topics):
        if time.monotonic() > deadline:
            raise BrokerError(f"the broker's metadata lacks some of the {len(names)} new topics after {timeout:.0f}s")
        time.sleep(0.5)


def binding(acl: Acl) -> AclBinding:
    """serve's API form of an ACL as confluent-kafka's AclBinding."""
    return AclBinding(
        ResourceType[acl["resource_type"]],
        acl["resource_name"],
        ResourcePatternType[acl["pattern_type"]],
        acl["principal"],
        acl["host"],
        AclOperation[acl["operation"]],
        AclPermissionType[acl["permission_type"]],
    )


def create_acls(broker: Broker, acls: Sequence[Acl], batch: int = 1000) -> None:
    """CreateAcls through the broker, `batch` bindings per request; every entry must succeed."""
    admin = AdminClient(broker.conf("admin"))
    for start in range(0, len(acls), batch):
        futures = admin.create_acls([binding(a) for a in acls[start : start + batch]], request_timeout=300)
        for future in futures.values():
            future.result()


def metadata_requests(broker: Broker, user: str, count: int, serve_pid: int | None) -> dict[str, Any]:
    """`count` Metadata requests for all topics as `user`, after 20 unmeasured ones: latency and CPU per request.

    The processes' CPU over the timed loop, less what they burn idle (measured for 2 s just before), divided
    by `count`.
    """
    admin = AdminClient(broker.conf(user))
    visible = 0
    for _ in range(20):
        visible = len(admin.list_topics(timeout=120).topics)
    idle = idle_rates(broker.pid, serve_pid)
    cpu = cpu_now(broker.pid, serve_pid)
    started = time.perf_counter()
    samples = []
    for _ in range(count):
        t0 = time.perf_counter_ns()
        admin.list_topics(timeout=120)
        samples.append(time.perf_counter_ns() - t0)
    seconds = time.perf_counter() - started
    used = [
        after - before - rate * seconds
        for before, after, rate in zip(cpu, cpu_now(broker.pid, serve_pid), idle, strict=True)
    ]
    samples.sort()
    out = {
        "requests": count,
        "topics_visible": visible,
        "p50_ms": round(samples[count // 2] / 1e6, 3),
        "p99_ms": round(samples[min(count - 1, count * 99 // 100)] / 1e6, 3),
        "broker_cpu_ms_per_request": round(used[0] / count * 1000, 3),
    }
    if serve_pid is not None:
        out["serve_cpu_ms_per_request"] = round(used[1] / count * 1000, 3)
    return out


def produce(broker: Broker, user: str, topic: str, records: int, serve_pid: int | None) -> dict[str, Any]:
    """`records` 100-byte records with ordinary batching (linger.ms 5, acks all): rate and CPU per record."""
    producer = Producer(broker.conf(user, **{"linger.ms": 5, "queue.buffering.max.messages": 1_000_000}))
    value = b"x" * 100
    for _ in range(1000):  # warm-up: connection, metadata, producer id
        producer.produce(topic, value)
    producer.flush(60)
    cpu = cpu_now(broker.pid, serve_pid)
    errors: list[str] = []
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, on_delivery=lambda e, m: errors.append(str(e)) if e else None)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(300) or errors:
        raise KafkaException(f"produce as {user} to {topic} failed: {errors[:1] or 'records left unsent'}")
    seconds = time.perf_counter() - started
    used = [after - before for before, after in zip(cpu, cpu_now(broker.pid, serve_pid), strict=True)]
    out = {
        "records": records,
        "records_per_s": round(records / seconds),
        "broker_cpu_us_per_record": round(used[0] / records * 1e6, 2),
    }
    if serve_pid is not None:
        out["serve_cpu_us_per_record"] = round(used[1] / records * 1e6, 3)
    return out


def produce_for(conf: dict[str, Any], topic: str, warm_s: float, seconds: float) -> int:
    """One producer (in its own process: `plugin_load`), linger.ms=0 and acks=1: warm up, then produce 100-byte
    records for `seconds`; the records delivered then."""
    delivered = [0]
    counting = [False]

    def done(err: object, _msg: object) -> None:
        if err is None and counting[0]:
            delivered[0] += 1

    producer = Producer({**conf, "linger.ms": 0, "acks": 1, "queue.buffering.max.messages": 200_000})
    value = b"x" * 100
    for deadline, count in ((time.monotonic() + warm_s, False), (time.monotonic() + warm_s + seconds, True)):
        counting[0] = count
        while time.monotonic() < deadline:
            try:
                producer.produce(topic, value, on_delivery=done)
            except BufferError:
                producer.poll(0.001)
            producer.poll(0)
        producer.flush(60)
    return delivered[0]


def cpu_now(broker_pid: int, serve_pid: int | None) -> list[float]:
    """CPU seconds so far of the broker and serve (0 without serve)."""
    return [cpu_seconds(broker_pid), cpu_seconds(serve_pid) if serve_pid else 0.0]


def idle_rates(broker_pid: int, serve_pid: int | None, seconds: float = 2.0) -> list[float]:
    """CPU seconds per second the broker and serve use while nothing is asked of them."""
    before = cpu_now(broker_pid, serve_pid)
    time.sleep(seconds)
    return [(after - b) / seconds for b, after in zip(before, cpu_now(broker_pid, serve_pid), strict=True)]
