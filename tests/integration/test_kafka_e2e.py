"""End-to-end: kraft-acl nodes on a real KRaft broker through KafkaLog.

Two nodes sharing one topic (a controller and a tailing reader), a broker crash in the middle of the
traffic, writer fencing, a node killed with SIGKILL and restarted from its snapshot, topic safety
checks, and a restart after delete-records removed offsets a node still needed.

Every wait is bounded and fails with what was last seen. The broker-restart test uses its own broker
so the session broker (`kafka_broker`) stays up for the others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.model.acls import (
    AclOperation,
    AclPermissionType,
    AuthorizationResult,
    PatternType,
    ResourceType,
    StandardAcl,
)
from kraftacl.authorizer.model.filters import AclBindingFilter
from kraftacl.authorizer.state.image import AclsImage
from kraftacl.authorizer.state.node import AclNode, StartupError
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.authorizer.state.tailer import Tailer, TailStatus
from kraftacl.metadata_log.backends.file.format import parse_frame_at
from kraftacl.metadata_log.backends.kafka_topic.log import (
    DEFAULT_TOPIC,
    KafkaLog,
    KafkaLogConfig,
    KafkaLogError,
    LogFencedError,
    LogUnavailableError,
    UnsafeTopicError,
)
from kraftacl.metadata_log.codec.avro import new_uuid
from kraftacl.metadata_log.errors import LogClosedError
from kraftacl.metadata_log.records import (
    AccessControlEntryRecord,
    MetadataRecord,
    RecordBatch,
    RemoveAccessControlEntryRecord,
)
from kraftacl.metadata_log.replayer import Replayer
from tests.integration import test_kafka_log_contract as contract
from tests.integration.conftest import _start_broker
from tests.kafka_broker import REPO_ROOT, KafkaBroker

# The timeout covers the session broker's start in the first test's setup.
pytestmark = [pytest.mark.kafka, pytest.mark.timeout(240)]

T = ResourceType.TOPIC
OP, PERM = AclOperation, AclPermissionType
ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
CONFIG = AuthorizerConfig(super_users=frozenset({"User:admin"}))
BOB = RequestContext("User:bob", "10.0.0.1")
ALICE = RequestContext("User:alice", "10.0.0.2")
CATCH_UP_S = 30.0
Ops = list[tuple[str, list[Any]]]  # ("create", [(id, acl)]) or ("delete", [id]), in append order


# ---- helpers --------------------------------------------------------------------------------------------
def config(broker: KafkaBroker, topic: str | None = None, *, timeout_s: float = 20.0, **kw: object) -> KafkaLogConfig:
    """A config for a fresh topic (or `topic`) on `broker`, with this file's timeout."""
    return dataclasses.replace(contract.kafka_config(broker, topic, **kw), timeout_s=timeout_s)


def acl(
    name: str,
    principal: str = "User:bob",
    op: AclOperation = OP.READ,
    perm: AclPermissionType = PERM.ALLOW,
    pattern: PatternType = PatternType.LITERAL,
) -> StandardAcl:
    return StandardAcl(T, name, pattern, principal, "*", op, perm)


def node(cfg: KafkaLogConfig, *, writer: bool, snapshot_dir: Path | None = None) -> AclNode:
    """A started node on `cfg`'s topic."""
    n = AclNode(KafkaLog(cfg, writer=writer), snapshot_dir, CONFIG)
    n.start()
    return n


def state(n: AclNode) -> tuple[dict[str, StandardAcl], int]:
    """What must be equal between nodes: the ACLs by id and the next offset."""
    image: AclsImage = n.image
    return dict(image.acls), image.provenance.next_offset


def wait_for(cond: Callable[[], bool], timeout: float, what: str, seen: Callable[[], object]) -> None:
    """Poll `cond` until true; fail with `what` and the last `seen()` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not reached within {timeout:.0f}s; last seen: {seen()}", pytrace=False)
        time.sleep(0.05)


def wait_caught_up(tailer: Tailer, target: int, timeout: float = CATCH_UP_S) -> TailStatus:
    """Wait until the tailer reports next_offset == target, lag 0 and no error."""

    def done() -> bool:
        s = tailer.status()
        return s.next_offset == target and s.lag == 0 and s.last_error is None

    wait_for(done, timeout, f"reader catching up to offset {target}", tailer.status)
    return tailer.status()


def create(n: AclNode, acls: Sequence[StandardAcl]) -> list[tuple[str, StandardAcl]]:
    """Create through the node's controller; every binding must be new and succeed."""
    results = n.controller.create_acls(acls)
    out = []
    for a, r in zip(acls, results, strict=True):
        assert r.error.code == 0 and r.acl_id is not None, f"create {a}: {r}"
        out.append((r.acl_id, a))
    return out


def delete(n: AclNode, acls: Sequence[StandardAcl]) -> list[str]:
    """Delete exactly these ACLs through the controller; each must match exactly one stored ACL."""
    results = n.controller.delete_acls([AclBindingFilter.of(a) for a in acls])
    ids = []
    for a, r in zip(acls, results, strict=True):
        assert r.error.code == 0 and len(r.deleted) == 1 and r.deleted[0][1] == a, f"delete {a}: {r}"
        ids.append(r.deleted[0][0])
    return ids


def log_batches(cfg: KafkaLogConfig) -> list[RecordBatch]:
    """Every committed batch of the topic in order, through a fresh reader and the checking Replayer."""
    log = KafkaLog(dataclasses.replace(cfg, create_topic=False), writer=False)
    try:
        return list(Replayer(log).batches(log.log_start_offset()))
    finally:
        log.close()


def records_of(batches: Sequence[RecordBatch]) -> list[MetadataRecord]:
    return [r for b in batches for r in b.records]


def names_of(batches: Sequence[RecordBatch]) -> list[str]:
    """The resource names of the added ACLs, in log order."""
    return [r.resource_name for r in records_of(batches) if isinstance(r, AccessControlEntryRecord)]


def shape(batches: Sequence[RecordBatch]) -> list[tuple[int, int]]:
    """(base offset, record count) of each batch."""
    return [(b.base_offset, len(b.records)) for b in batches]


def kafka_frames(broker: KafkaBroker, topic: str) -> list[tuple[int, int, int]]:
    """(Kafka offset, logical base offset, record count) of every committed message, read raw."""
    consumer = Consumer(
        broker.client_config(
            overrides={
                "group.id": f"e2e-raw-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            }
        )
    )
    out: list[tuple[int, int, int]] = []
    try:
        tp = TopicPartition(topic, 0)
        low, high = consumer.get_watermark_offsets(tp, timeout=20)
        consumer.assign([TopicPartition(topic, 0, low)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    break
                raise AssertionError(f"raw read of {topic}: {err}")
            value, offset = msg.value(), msg.offset()
            assert value is not None and offset is not None
            frame = parse_frame_at(value, 0)
            assert frame is not None, f"{topic} Kafka offset {offset} is not a kraft-acl frame"
            out.append((offset, frame.base_offset, frame.record_count))
        else:
            raise AssertionError(f"raw read of {topic} did not reach the end ({high}) in 30s")
    finally:
        consumer.close()
    return out


def expected_records(ops: Ops) -> list[MetadataRecord]:
    """The records a sequence of ('create', [(id, acl)]) / ('delete', [id]) calls must have appended."""
    out: list[MetadataRecord] = []
    for kind, items in ops:
        if kind == "create":
            out += [record_from_acl(i, a) for i, a in items]
        else:
            out += [RemoveAccessControlEntryRecord(i) for i in items]
    return out


PROBE_NAMES = ("orders", "payments", "audit", "logs-2024", "other")
PROBES = [Action(op, T, name) for name in PROBE_NAMES for op in (OP.READ, OP.WRITE)]


def answers(n: AclNode) -> list[tuple[AuthorizationResult, ...]]:
    return [tuple(n.authorizer.authorize(ctx, PROBES)) for ctx in (BOB, ALICE)]


def close_all(*nodes: AclNode | None) -> None:
    for n in nodes:
        if n is not None:
            with contextlib.suppress(Exception):  # best-effort cleanup of a possibly fenced/unreachable node
                n.close()


# ---- 1. two nodes on one topic ------------------------------------------------------------------------
def test_reader_node_follows_controller_node(kafka_broker: KafkaBroker) -> None:
    cfg = config(kafka_broker)
    a = node(cfg, writer=True)
    b = node(cfg, writer=False)
    tailer = Tailer(b.loader, interval_s=0.05).start()
    try:
        assert answers(b) == [(DENIED,) * len(PROBES)] * 2, "empty log: everything denied for non-super users"

        created = create(
            a,
            [
                acl("orders"),
                acl("payments", op=OP.WRITE),
                acl("logs-", pattern=PatternType.PREFIXED),
                acl("orders", "User:alice", OP.ALL),
                acl("audit", "User:alice", OP.READ, PERM.DENY),
            ],
        )
        assert a.loader.next_offset == 5
        wait_caught_up(tailer, a.loader.next_offset)
        assert state(b) == state(a)
        assert dict(b.image.acls) == dict(created)
        assert b.image.provenance == a.image.provenance
        bob = dict(zip(PROBES, b.authorizer.authorize(BOB, PROBES), strict=True))
        assert bob[Action(OP.READ, T, "orders")] == ALLOWED
        assert bob[Action(OP.WRITE, T, "orders")] == DENIED
        assert bob[Action(OP.WRITE, T, "payments")] == ALLOWED
        assert bob[Action(OP.READ, T, "logs-2024")] == ALLOWED
        assert bob[Action(OP.READ, T, "other")] == DENIED
        alice = dict(zip(PROBES, b.authorizer.authorize(ALICE, PROBES), strict=True))
        assert alice[Action(OP.WRITE, T, "orders")] == ALLOWED
        assert alice[Action(OP.READ, T, "audit")] == DENIED
        assert answers(b) == answers(a)

        deleted = delete(a, [acl("orders"), acl("logs-", pattern=PatternType.PREFIXED)])
        assert deleted == [created[0][0], created[2][0]]
        wait_caught_up(tailer, 7)
        assert state(b) == state(a)
        assert set(b.image.acls) == {i for i, _ in created} - set(deleted)
        bob = dict(zip(PROBES, b.authorizer.authorize(BOB, PROBES), strict=True))
        assert bob[Action(OP.READ, T, "orders")] == DENIED
        assert bob[Action(OP.READ, T, "logs-2024")] == DENIED
        assert bob[Action(OP.WRITE, T, "payments")] == ALLOWED
        assert answers(b) == answers(a)

        batches = log_batches(cfg)
        assert records_of(batches) == expected_records([("create", created), ("delete", deleted)])
        assert shape(batches) == [(0, 5), (5, 2)]
    finally:
        tailer.stop()
        close_all(b, a)


# ---- 2. broker crash in the middle ---------------------------------------------------------------------
OUTAGE_TIMEOUT_S = 5.0


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A broker only this module restarts (the session broker stays up)."""
    broker = _start_broker(tmp_path_factory, "kafka-e2e-restart")
    try:
        yield broker
    finally:
        broker.stop()


def _start_again(broker: KafkaBroker) -> None:
    """Restart the stopped broker; a broker that cannot come back fails the test loudly."""
    if not broker.is_running():
        broker.start()


def test_broker_crash_reader_keeps_serving_and_everyone_converges(own_broker: KafkaBroker) -> None:
    cfg = config(own_broker, timeout_s=OUTAGE_TIMEOUT_S)
    a = node(cfg, writer=True)
    b = node(cfg, writer=False)
    tailer = Tailer(b.loader, interval_s=0.05).start()
    a2 = c = None
    ops: Ops = []
    try:
        first = [acl(f"orders-{i}") for i in range(3)] + [acl("payments", "User:alice")]
        first += [acl("audit", "User:alice", OP.WRITE), acl("logs-", pattern=PatternType.PREFIXED)]
        ops.append(("create", create(a, first)))
        ops.append(("delete", delete(a, [acl("orders-0")])))
        before_crash = state(a)
        assert before_crash[1] == 7
        wait_caught_up(tailer, 7)
        assert state(b) == before_crash
        answers_before = answers(b)

        own_broker.stop(hard=True)
        try:
            # B keeps serving its last state while its tailer reports the outage (lag unknown).
            def outage_seen() -> bool:
                s = tailer.status()
                return s.last_error is not None and s.lag is None

            wait_for(outage_seen, 4 * OUTAGE_TIMEOUT_S + 10, "the tailer reporting the broker outage", tailer.status)
            assert tailer.status().next_offset == 7
            assert answers(b) == answers_before
            assert state(b) == before_crash

            # A's append fails within its timeout and changes nothing.
            t0 = time.monotonic()
            with pytest.raises(KafkaLogError) as failed_append:
                a.backend.append([record_from_acl(new_uuid(), acl("outage-direct"))])
            elapsed = time.monotonic() - t0
            assert elapsed < 3 * OUTAGE_TIMEOUT_S + 5, f"append took {elapsed:.1f}s (timeout_s={OUTAGE_TIMEOUT_S})"
            assert not isinstance(failed_append.value, LogFencedError), f"not fencing: {failed_append.value!r}"
            # So does a whole CreateAcls request, and the controller's image is untouched.
            t0 = time.monotonic()
            with pytest.raises(KafkaLogError):
                a.controller.create_acls([acl("during-outage")])
            elapsed = time.monotonic() - t0
            assert elapsed < 3 * OUTAGE_TIMEOUT_S + 5, f"create_acls took {elapsed:.1f}s to fail"
            assert state(a) == before_crash
            assert answers(b) == answers_before
            assert state(b) == before_crash
        finally:
            _start_again(own_broker)

        # The controller process is restarted on the same transactional id (the old producer is wedged
        # after the outage, see test_same_writer_appends_again_after_broker_restart) and keeps writing.
        a.close()
        a2 = node(dataclasses.replace(cfg, timeout_s=30.0), writer=True)
        assert state(a2) == before_crash, "the failed outage appends must not be in the log"
        ops.append(("create", create(a2, [acl("after-restart-1"), acl("orders", "User:alice", OP.ALL)])))

        wait_caught_up(tailer, a2.loader.next_offset, timeout=60)
        assert state(b) == state(a2)
        c = node(cfg, writer=False)  # a fresh full replay
        assert state(c) == state(a2) == state(b)
        assert answers(b) == answers(c) == answers(a2)
        # Exactly the successful appends, in order: nothing from the outage, no gap, no duplicate.
        batches = log_batches(cfg)
        assert records_of(batches) == expected_records(ops)
        assert shape(batches) == [(0, 6), (6, 1), (7, 2)]
    finally:
        tailer.stop()
        _start_again(own_broker)
        close_all(c, a2, b, a)


def test_same_writer_appends_again_after_broker_restart(own_broker: KafkaBroker) -> None:
    cfg = config(own_broker, timeout_s=OUTAGE_TIMEOUT_S)
    log = KafkaLog(cfg, writer=True)
    try:
        assert log.append([record_from_acl(new_uuid(), acl("before"))]).base_offset == 0
        own_broker.stop(hard=True)
        try:
            with pytest.raises(LogUnavailableError):
                log.append([record_from_acl(new_uuid(), acl("during"))])
        finally:
            _start_again(own_broker)
        deadline = time.monotonic() + 60
        while True:
            try:
                result = log.append([record_from_acl(new_uuid(), acl("after"))])
                break
            except LogUnavailableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        assert result.base_offset == 1
        # A committed transaction reaches read_committed readers once its coordinator has written the commit
        # markers, which it does after answering the commit: right after a broker restart that can take a moment.
        deadline = time.monotonic() + 30
        while (names := names_of(log_batches(cfg))) != ["before", "after"] and time.monotonic() < deadline:
            time.sleep(0.5)
        assert names == ["before", "after"]
    finally:
        _start_again(own_broker)
        log.close()


# ---- 3. fencing ---------------------------------------------------------------------------------------
def test_second_controller_fences_the_first(kafka_broker: KafkaBroker) -> None:
    cfg = config(kafka_broker)
    first = node(cfg, writer=True)
    second = fresh = None
    try:
        ops: Ops = [("create", create(first, [acl("orders"), acl("payments"), acl("audit", "User:alice")]))]
        first_epoch = first.backend.epoch  # type: ignore[attr-defined]
        hwm = 3

        second = node(cfg, writer=True)  # same topic, same (default) transactional id
        assert second.backend.epoch > first_epoch  # type: ignore[attr-defined]
        assert state(second) == state(first)
        assert second.backend.high_watermark() == hwm

        with pytest.raises(LogFencedError):
            first.controller.create_acls([acl("fenced-1"), acl("fenced-2")])
        assert state(first)[1] == hwm, "a fenced append must not be applied"
        assert not any(a.resource_name.startswith("fenced") for a in first.image.acls.values())

        direct_id = new_uuid()
        result = second.backend.append([record_from_acl(direct_id, acl("second-direct"))])
        assert result.base_offset == hwm, f"the new writer continued at {result.base_offset}, not the HWM {hwm}"
        ops.append(("create", [(direct_id, acl("second-direct"))]))
        ops.append(("create", create(second, [acl("second-1"), acl("second-2")])))

        batches = log_batches(cfg)
        assert records_of(batches) == expected_records(ops)
        assert shape(batches) == [(0, 3), (3, 1), (4, 2)]
        assert [b.epoch for b in batches] == [first_epoch] + [second.backend.epoch] * 2  # type: ignore[attr-defined]
        fresh = node(cfg, writer=False)
        assert state(fresh) == state(second)
        assert not any(a.resource_name.startswith("fenced") for a in fresh.image.acls.values())
    finally:
        close_all(fresh, second, first)


def test_fenced_writer_stays_fenced(kafka_broker: KafkaBroker) -> None:
    cfg = config(kafka_broker)
    first = KafkaLog(cfg, writer=True)
    second = None
    try:
        first.append([record_from_acl(new_uuid(), acl("a"))])
        second = KafkaLog(cfg, writer=True)
        errors = []
        for name in ("fenced-1", "fenced-2", "fenced-3"):
            try:
                first.append([record_from_acl(new_uuid(), acl(name))])
            except KafkaLogError as exc:
                errors.append(exc)
            else:
                pytest.fail(f"the fenced writer appended {name}")
        assert second.append([record_from_acl(new_uuid(), acl("b"))]).base_offset == 1
        assert names_of(log_batches(cfg)) == ["a", "b"]
        assert all(isinstance(e, LogFencedError) for e in errors), [f"{type(e).__name__}: {e}" for e in errors]
    finally:
        for log in (second, first):
            if log is not None:
                log.close()


# ---- 4. kill -9 of a node, restart from its snapshot ----------------------------------------------------
NODE_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from kraftacl.authorizer.decision.config import AuthorizerConfig
    from kraftacl.authorizer.state.node import AclNode
    from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLog, KafkaLogConfig

    args = json.loads(sys.argv[1])
    cfg = KafkaLogConfig(args["bootstrap"], topic=args["topic"], timeout_s=20.0, client=args["client"])
    node = AclNode(KafkaLog(cfg, writer=False), Path(args["snapshots"]),
                   AuthorizerConfig(super_users=frozenset({"User:admin"})))
    node.start()
    path = node.take_snapshot()
    print("READY", node.loader.next_offset, path.name, flush=True)
    while True:  # keep tailing and snapshotting until killed
        if node.loader.catch_up():
            node.take_snapshot()
            print("SNAPSHOT", node.loader.next_offset, flush=True)
        time.sleep(0.02)
    """
)


def test_node_killed_with_sigkill_restarts_from_its_snapshot(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    cfg = config(kafka_broker)
    snaps = tmp_path / "snapshots"
    controller = node(cfg, writer=True)
    proc = None
    restarted = fresh = None
    try:
        create(controller, [acl(f"t{i}-{j}") for i in range(5) for j in range(3)])
        ready_offset = controller.loader.next_offset
        args = {
            "bootstrap": cfg.bootstrap_servers,
            "topic": cfg.topic,
            "client": cfg.client,
            "snapshots": str(snaps),
        }
        stderr_path = tmp_path / "node.stderr"
        with stderr_path.open("w") as stderr:  # a file, so librdkafka's log lines can never block the child
            proc = subprocess.Popen(
                [sys.executable, "-c", NODE_SCRIPT, json.dumps(args)],
                cwd=REPO_ROOT,
                env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        line = ""
        while not line.startswith("READY"):
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                tail = stderr_path.read_text(errors="replace")[-3000:]
                pytest.fail(f"node subprocess exited {proc.returncode} before READY:\n{tail}")
            if time.monotonic() > deadline:
                pytest.fail("node subprocess did not print READY within 60s")
        _, offset, name = line.split()
        assert int(offset) == ready_offset
        assert (snaps / name).is_file()

        # More ACLs while the node tails and snapshots; kill it in the middle of that.
        create(controller, [acl(f"t{i}-{j}") for i in range(5, 8) for j in range(3)])
        delete(controller, [acl("t0-0"), acl("t1-0"), acl("t6-2")])
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert proc.returncode == -signal.SIGKILL
        create(controller, [acl(f"t{i}-{j}", "User:alice") for i in range(10, 12) for j in range(2)])

        restarted = AclNode(KafkaLog(cfg, writer=False), snaps, CONFIG)
        restarted.start()
        assert restarted.loaded_snapshot is not None, "the restarted node did not load its snapshot"
        snap_end = int(restarted.loaded_snapshot.name.split("-")[0])
        assert ready_offset <= snap_end < controller.loader.next_offset, (
            f"snapshot {restarted.loaded_snapshot.name} should cover the READY offset {ready_offset} and leave "
            f"a tail below {controller.loader.next_offset}"
        )
        fresh = node(cfg, writer=False)
        assert fresh.loaded_snapshot is None
        assert state(restarted) == state(fresh) == state(controller)
        assert restarted.image.provenance == fresh.image.provenance
        assert answers(restarted) == answers(fresh)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        close_all(fresh, restarted, controller)


# ---- 5. topic safety ----------------------------------------------------------------------------------
def _create_topic(broker: KafkaBroker, topic: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient(broker.client_config())
    new = NewTopic(topic, num_partitions=partitions, replication_factor=1, config=configs)
    admin.create_topics([new], request_timeout=20)[topic].result(timeout=30)


def test_cluster_metadata_topic_is_never_used(kafka_broker: KafkaBroker) -> None:
    assert DEFAULT_TOPIC != "__cluster_metadata"
    assert KafkaLogConfig(kafka_broker.bootstrap_servers).topic == DEFAULT_TOPIC
    cfg = config(kafka_broker, topic="__cluster_metadata", timeout_s=15.0)
    t0 = time.monotonic()
    with pytest.raises(KafkaLogError) as exc:
        KafkaLog(cfg, writer=True)
    assert time.monotonic() - t0 < 30
    assert not isinstance(exc.value, LogUnavailableError), f"should be refused, not time out: {exc.value!r}"
    assert "__cluster_metadata" in str(exc.value)


@pytest.mark.parametrize(
    ("partitions", "configs", "problem"),
    [
        (1, {"cleanup.policy": "compact"}, "cleanup.policy=compact"),
        (1, {"cleanup.policy": "compact,delete", "retention.ms": "-1"}, "cleanup.policy=compact,delete"),
        (1, {"cleanup.policy": "delete", "retention.ms": "3600000"}, "retention.ms=3600000"),
        (3, {"cleanup.policy": "delete", "retention.ms": "-1"}, "3 partitions"),
    ],
    ids=["compact", "compact-delete", "finite-retention", "three-partitions"],
)
def test_unsafe_existing_topic_is_refused_unless_allowed(
    kafka_broker: KafkaBroker, partitions: int, configs: dict[str, str], problem: str
) -> None:
    cfg = config(kafka_broker)
    _create_topic(kafka_broker, cfg.topic, partitions, **configs)
    for writer in (True, False):
        with pytest.raises(UnsafeTopicError, match=problem.replace(".", r"\.")) as exc:
            KafkaLog(cfg, writer=writer)
        assert cfg.topic in str(exc.value)
    # The override opens it (as the writer too: transactions initialised, tail read).
    log = KafkaLog(dataclasses.replace(cfg, allow_unsafe_topic=True), writer=True)
    try:
        assert log.high_watermark() == 0
        if "compact" not in configs["cleanup.policy"]:  # compacted: see the xfail test below
            assert log.append([record_from_acl(new_uuid(), acl("x"))]).base_offset == 0
            assert log.high_watermark() == 1
    finally:
        log.close()


def test_safe_topic_is_created_with_event_log_settings(kafka_broker: KafkaBroker) -> None:
    from confluent_kafka.admin import ConfigResource

    cfg = config(kafka_broker)
    KafkaLog(cfg, writer=True).close()
    admin = AdminClient(kafka_broker.client_config())
    meta = admin.list_topics(topic=cfg.topic, timeout=20)
    assert len(meta.topics[cfg.topic].partitions) == 1
    resource = ConfigResource(ConfigResource.Type.TOPIC, cfg.topic)
    entries = admin.describe_configs([resource], request_timeout=20)[resource].result(timeout=30)
    assert entries["cleanup.policy"].value == "delete"
    assert entries["retention.ms"].value == "-1"
    # Opening it again (now existing) is accepted.
    KafkaLog(cfg, writer=False).close()


# ---- 6. the log lost offsets a node's snapshot needs ------------------------------------------------------
def _delete_records_before(broker: KafkaBroker, topic: str, kafka_offset: int) -> None:
    admin = AdminClient(broker.client_config())
    if not hasattr(admin, "delete_records"):
        pytest.skip("the installed confluent-kafka has no AdminClient.delete_records")
    futures = admin.delete_records([TopicPartition(topic, 0, kafka_offset)], request_timeout=20)
    for fut in futures.values():
        fut.result(timeout=30)


def test_restart_after_delete_records_removed_needed_offsets(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    if not hasattr(AdminClient, "delete_records"):
        pytest.skip("the installed confluent-kafka has no AdminClient.delete_records")
    cfg = config(kafka_broker)
    old_snaps, new_snaps = tmp_path / "old", tmp_path / "new"
    controller = node(cfg, writer=True, snapshot_dir=new_snaps)
    stale = restarted = None
    try:
        create(controller, [acl(f"a{i}-{j}") for i in range(3) for j in range(2)])
        stale = node(cfg, writer=False, snapshot_dir=old_snaps)
        stale_snapshot = stale.take_snapshot()
        stale_next = stale.loader.next_offset
        assert stale_next == 6
        stale.close()
        stale = None
        create(controller, [acl(f"a{i}-{j}") for i in range(3, 5) for j in range(2)])
        delete(controller, [acl("a0-0"), acl("a4-1")])
        controller.take_snapshot()  # a snapshot that still covers the log after the deletion

        frames = kafka_frames(kafka_broker, cfg.topic)
        assert [(base, count) for _, base, count in frames] == [(0, 6), (6, 4), (10, 2)]
        cut = next(k for k, base, _ in frames if base == 10)  # log start moves to logical offset 10 > 6
        _delete_records_before(kafka_broker, cfg.topic, cut)

        probe = KafkaLog(dataclasses.replace(cfg, create_topic=False), writer=False)
        try:
            assert probe.log_start_offset() == 10
            assert probe.high_watermark() == 12
        finally:
            probe.close()

        for snaps, label in ((old_snaps, "stale snapshot"), (None, "no snapshot")):
            n = AclNode(KafkaLog(cfg, writer=False), snaps, CONFIG)
            try:
                with pytest.raises(StartupError) as exc:
                    n.start()
            finally:
                n.close()
            text = str(exc.value)
            needed = stale_next if snaps is not None else 0
            assert "log starts at offset 10" in text, f"{label}: {text}"
            assert f"needs offsets from {needed}" in text, f"{label}: {text}"
            assert "retention deleted them" in text, f"{label}: {text}"
            assert not n.authorizer.ready, f"{label}: a node that failed start-up must not serve"
        assert stale_snapshot.is_file()

        # A snapshot at or after the new log start is enough.
        restarted = AclNode(KafkaLog(cfg, writer=False), new_snaps, CONFIG)
        restarted.start()
        assert restarted.loaded_snapshot is not None
        assert state(restarted) == state(controller)
        assert answers(restarted) == answers(controller)
    finally:
        close_all(restarted, stale, controller)


# ---- regressions for bugs found on the way (fixed) --------------------------------------------------------
def test_log_emptied_by_delete_records_never_reuses_offsets(kafka_broker: KafkaBroker) -> None:
    cfg = config(kafka_broker)
    first = KafkaLog(cfg, writer=True)
    try:
        first.append([record_from_acl(new_uuid(), acl("x0"))])
        first.append([record_from_acl(new_uuid(), acl("x1"))])
        assert first.high_watermark() == 2
    finally:
        first.close()
    consumer = Consumer(kafka_broker.client_config(overrides={"group.id": f"e2e-{uuid.uuid4()}"}))
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(cfg.topic, 0), timeout=20)
    finally:
        consumer.close()
    _delete_records_before(kafka_broker, cfg.topic, high)  # every message, commit markers included
    try:
        second = KafkaLog(cfg, writer=True)
    except KafkaLogError:
        return  # refusing to guess the logical end is fine
    try:
        base = second.append([record_from_acl(new_uuid(), acl("y"))]).base_offset
        assert base >= 2, f"the new writer reused logical offset {base} (offsets 0..1 were already written)"
    finally:
        second.close()


def test_compacted_topic_accepted_with_allow_unsafe_topic_can_be_written(kafka_broker: KafkaBroker) -> None:
    cfg = config(kafka_broker, allow_unsafe_topic=True)
    _create_topic(kafka_broker, cfg.topic, 1, **{"cleanup.policy": "compact"})
    log = KafkaLog(cfg, writer=True)
    try:
        assert log.append([record_from_acl(new_uuid(), acl("x"))]).base_offset == 0
        assert log.high_watermark() == 1
    finally:
        log.close()


# ---- latency ------------------------------------------------------------------------------------------
LATENCY_S = 3.0


def test_reader_sees_a_new_batch_quickly(kafka_broker: KafkaBroker) -> None:
    """Latency guard: a tailing reader applies a committed 1-record batch within a few seconds.

    (Measured ~0.5 s per batch, the consumer's fetch wait; before commit e4b217f it was ~4-5 s.)
    """
    cfg = config(kafka_broker)
    writer = KafkaLog(cfg, writer=True)
    reader = node(cfg, writer=False)
    try:
        for n in range(1, 4):
            writer.append([record_from_acl(new_uuid(), acl(f"x{n}"))])
            t0 = time.monotonic()
            while reader.loader.next_offset < n:
                reader.loader.catch_up()
                assert time.monotonic() - t0 < LATENCY_S, f"the reader took over {LATENCY_S}s to see batch {n}"
            elapsed = time.monotonic() - t0
            assert reader.loader.next_offset == n
            assert elapsed < LATENCY_S, f"the reader took {elapsed:.2f}s to apply batch {n}"
    finally:
        close_all(reader)
        writer.close()


def test_wait_for_append_wakes_on_a_commit_and_otherwise_waits_its_timeout(kafka_broker: KafkaBroker) -> None:
    """KafkaLog's long poll: at once when the log holds more than the caller applied, the whole timeout when
    nothing is committed, woken by another process's commit well before a long timeout, and ended by its interrupt
    (a caller that must read the log's end now)."""
    cfg = config(kafka_broker)
    writer = KafkaLog(cfg, writer=True)
    reader = KafkaLog(cfg)
    try:
        writer.append([record_from_acl(new_uuid(), acl("w1"))])
        started = time.monotonic()
        assert reader.wait_for_append(0, 30.0) and reader.high_watermark() == 1
        assert reader.wait_for_append(0, 30.0), "the end read (1) is past the caller's 0: no wait"
        assert time.monotonic() - started < 15, "neither call waited for its 30 s timeout"
        started = time.monotonic()
        assert reader.wait_for_append(1, 0.5)
        assert time.monotonic() - started >= 0.45, "nothing was committed: the wait lasted its timeout"
        later = threading.Timer(0.3, lambda: writer.append([record_from_acl(new_uuid(), acl("w2"))]))
        later.start()
        started = time.monotonic()
        assert reader.wait_for_append(1, 30.0)
        waited = time.monotonic() - started
        later.join()
        assert waited < 15, f"the commit did not end a 30 s wait ({waited:.1f} s)"
        assert reader.high_watermark() == 2
        poke = threading.Event()  # a caller that must read the end now (serve's min_offset, `consistent`)
        poker = threading.Timer(0.3, poke.set)
        poker.start()
        started = time.monotonic()
        assert reader.wait_for_append(2, 30.0, poke)
        waited = time.monotonic() - started
        poker.join()
        assert waited < 15, f"the interrupt did not end a 30 s wait ({waited:.1f} s)"
        assert reader.high_watermark() == 2, "nothing was committed: only the interrupt ended the wait"
    finally:
        reader.close()
        writer.close()
    with pytest.raises(LogClosedError):
        reader.wait_for_append(2, 0.1)


def test_a_kafka_follower_applies_each_commit_without_waiting_for_its_interval(kafka_broker: KafkaBroker) -> None:
    """A broker-role node's tailer long-polls the topic: with an hour-long interval it still applies every commit
    (about a round trip after it, `bench --suite cluster`'s propagation), and stops promptly."""
    cfg = config(kafka_broker)
    a = node(cfg, writer=True)
    b = node(cfg, writer=False)
    tailer = Tailer(b.loader, interval_s=3600).start()
    try:
        for n in range(1, 4):
            create(a, [acl(f"p{n}")])
            wait_caught_up(tailer, n)
            assert state(b) == state(a)
    finally:
        tailer.stop(timeout=10)
        close_all(b, a)
    assert tailer._thread is not None and not tailer._thread.is_alive(), "stop ends a tailer in a long poll"


def test_an_append_larger_than_a_message_is_one_transaction_of_contiguous_batches(kafka_broker: KafkaBroker) -> None:
    """With the producer's message.max.bytes at 100 kB, an append of 5,000 records (about 300 kB) is written as
    several messages of one transaction (the producer refuses a larger one), at contiguous logical offsets, read
    back exactly, and a following node applies every record; the next append goes on after them."""
    cfg = config(kafka_broker)
    cfg = dataclasses.replace(cfg, client={**cfg.client, "message.max.bytes": "100000"})
    writer = KafkaLog(cfg, writer=True)
    assert writer.frame_limit == 100_000 - 16_384
    records = [record_from_acl(new_uuid(), acl(f"bulk-{n}", f"User:b{n % 7}")) for n in range(5_000)]
    try:
        appended = writer.append(records)
        assert (appended.base_offset, appended.last_offset) == (0, 4_999)
        assert writer.append([record_from_acl(new_uuid(), acl("after"))]).base_offset == 5_000
        assert writer.high_watermark() == 5_001
    finally:
        writer.close()
    batches = log_batches(cfg)
    assert records_of(batches) == [*records, *records_of(batches)[-1:]]
    assert len(batches) >= 3 and shape(batches)[-1] == (5_000, 1), "the 5,000 records in two parts or more"
    frames = kafka_frames(kafka_broker, cfg.topic)
    assert [(base, count) for _, base, count in frames] == shape(batches), "one batch per Kafka message"
    reader = node(cfg, writer=False)
    try:
        assert reader.loader.next_offset == 5_001 and len(reader.image.acls) == 5_001
    finally:
        close_all(reader)
