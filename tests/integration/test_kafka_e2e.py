"""End-to-end: kraft-acl nodes on a real KRaft broker through KafkaLog.

Two nodes sharing one topic (a controller and a tailing reader), a broker crash in the middle of the
traffic, writer fencing, a node killed with SIGKILL and restarted from its snapshot, topic safety
checks, and a restart after delete-records removed offsets a node still needed.

Every wait is bounded and fails with what was last seen. The broker-restart test uses its own broker
so the session broker (`kafka_broker`) stays up for the others.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from authorizer.config import AuthorizerConfig
from authorizer.filters import AclBindingFilter
from authorizer.image import AclsImage
from authorizer.model import (
    AclOperation,
    AclPermissionType,
    AuthorizationResult,
    PatternType,
    ResourceType,
    StandardAcl,
)
from authorizer.node import AclNode, StartupError
from authorizer.records import record_from_acl
from authorizer.standard import Action, RequestContext
from authorizer.tailer import Tailer, TailStatus
from metadata_log.backends.file_format import parse_frame_at
from metadata_log.backends.kafka import (
    DEFAULT_TOPIC,
    KafkaLog,
    KafkaLogConfig,
    KafkaLogError,
    LogFencedError,
    LogUnavailableError,
    UnsafeTopicError,
)
from metadata_log.records import MetadataRecord, RemoveAccessControlEntryRecord
from metadata_log.replayer import Replayer
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


# ---- helpers --------------------------------------------------------------------------------------------
def config(broker: KafkaBroker, topic: str | None = None, *, timeout_s: float = 20.0, **kw: object) -> KafkaLogConfig:
    """A config for a fresh topic (or `topic`) on `broker`, with this file's timeout."""
    return dataclasses.replace(contract.kafka_config(broker, topic, **kw), timeout_s=timeout_s)


def acl(name: str, principal: str = "User:bob", op: AclOperation = OP.READ, perm: AclPermissionType = PERM.ALLOW,
        pattern: PatternType = PatternType.LITERAL) -> StandardAcl:
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


def log_records(cfg: KafkaLogConfig) -> list[MetadataRecord]:
    """Every record of the topic in order, through a fresh reader and the checking Replayer."""
    log = KafkaLog(dataclasses.replace(cfg, create_topic=False), writer=False)
    try:
        return [r for b in Replayer(log).batches(log.log_start_offset()) for r in b.records]
    finally:
        log.close()


def log_batches(cfg: KafkaLogConfig) -> list[tuple[int, int, int]]:
    """(base offset, record count, epoch) of every committed batch, through a fresh reader."""
    log = KafkaLog(dataclasses.replace(cfg, create_topic=False), writer=False)
    try:
        return [(b.base_offset, len(b.records), b.epoch) for b in Replayer(log).batches(log.log_start_offset())]
    finally:
        log.close()


def kafka_frames(broker: KafkaBroker, topic: str) -> list[tuple[int, int, int]]:
    """(Kafka offset, logical base offset, record count) of every committed message, read raw."""
    consumer = Consumer(
        broker.client_config(overrides={
            "group.id": f"e2e-raw-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        })
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
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    break
                raise AssertionError(f"raw read of {topic}: {msg.error()}")
            frame = parse_frame_at(msg.value(), 0)
            assert frame is not None, f"{topic} Kafka offset {msg.offset()} is not a kraft-acl frame"
            out.append((msg.offset(), frame.base_offset, frame.record_count))
        else:
            raise AssertionError(f"raw read of {topic} did not reach the end ({high}) in 30s")
    finally:
        consumer.close()
    return out


def expected_records(ops: Sequence[tuple[str, list]]) -> list[MetadataRecord]:
    """The records a sequence of ('create', [(id, acl)]) / ('delete', [id]) calls must have appended."""
    out: list[MetadataRecord] = []
    for kind, items in ops:
        if kind == "create":
            out += [record_from_acl(i, a) for i, a in items]
        else:
            out += [RemoveAccessControlEntryRecord(i) for i in items]
    return out


PROBES = [Action(op, T, name) for name in ("orders", "payments", "audit", "logs-2024", "other") for op in (OP.READ, OP.WRITE)]


def answers(n: AclNode) -> list[tuple[AuthorizationResult, ...]]:
    return [tuple(n.authorizer.authorize(ctx, PROBES)) for ctx in (BOB, ALICE)]


def close_all(*nodes: AclNode | None) -> None:
    for n in nodes:
        if n is not None:
            try:
                n.close()
            except Exception:  # noqa: BLE001 - best-effort cleanup of a possibly fenced/unreachable node
                pass


# ---- 1. two nodes on one topic ------------------------------------------------------------------------
def test_reader_node_follows_controller_node(kafka_broker: KafkaBroker) -> None:
    cfg = config(kafka_broker)
    a = node(cfg, writer=True)
    b = node(cfg, writer=False)
    tailer = Tailer(b.loader, interval_s=0.05).start()
    try:
        assert answers(b) == [(DENIED,) * len(PROBES)] * 2, "empty log: everything denied for non-super users"

        created = create(a, [acl("orders"), acl("payments", op=OP.WRITE), acl("logs-", pattern=PatternType.PREFIXED)])
        created += create(a, [acl("orders", "User:alice", OP.ALL), acl("audit", "User:alice", OP.READ, PERM.DENY)])
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
        bob = dict(zip(PROBES, b.authorizer.authorize(BOB, PROBES), strict=True))
        assert bob[Action(OP.READ, T, "orders")] == DENIED
        assert bob[Action(OP.READ, T, "logs-2024")] == DENIED
        assert bob[Action(OP.WRITE, T, "payments")] == ALLOWED
        assert answers(b) == answers(a)

        ops = [("create", created[:3]), ("create", created[3:]), ("delete", deleted)]
        assert log_records(cfg) == expected_records(ops)
        assert [(base, count) for base, count, _ in log_batches(cfg)] == [(0, 3), (3, 2), (5, 2)]
    finally:
        tailer.stop()
        close_all(b, a)


# ---- 2. broker crash in the middle ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def own_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A broker only this module restarts (the session broker stays up)."""
    broker = _start_broker(tmp_path_factory, "kafka-e2e-restart")
    try:
        yield broker
    finally:
        broker.stop()


def test_broker_crash_reader_keeps_serving_and_everyone_converges(own_broker: KafkaBroker) -> None:
    timeout_s = 6.0
    cfg = config(own_broker, timeout_s=timeout_s)
    a = node(cfg, writer=True)
    b = node(cfg, writer=False)
    tailer = Tailer(b.loader, interval_s=0.05).start()
    c = None
    ops: list[tuple[str, list]] = []
    try:
        for i in range(4):
            ops.append(("create", create(a, [acl(f"orders-{i}"), acl(f"payments-{i}", "User:alice", OP.WRITE)])))
        ops.append(("delete", delete(a, [acl("orders-0")])))
        ops.append(("create", create(a, [acl("orders")])))
        before_crash = state(a)
        wait_caught_up(tailer, a.loader.next_offset)
        assert state(b) == before_crash
        answers_before = answers(b)

        own_broker.stop(hard=True)
        try:
            # B keeps serving its last state while its tailer reports the outage.
            def outage_seen() -> bool:
                s = tailer.status()
                return s.last_error is not None and s.lag is None

            wait_for(outage_seen, 4 * timeout_s + 10, "the tailer reporting the broker outage", tailer.status)
            assert answers(b) == answers_before
            assert state(b) == before_crash
            assert tailer.status().next_offset == before_crash[1]

            # A's write fails within its timeout and changes nothing.
            t0 = time.monotonic()
            with pytest.raises(KafkaLogError) as failed:
                a.controller.create_acls([acl("during-outage")])
            elapsed = time.monotonic() - t0
            assert elapsed < 3 * timeout_s + 5, f"create_acls took {elapsed:.1f}s to fail (timeout_s={timeout_s})"
            assert not isinstance(failed.value, LogFencedError), f"an outage is not fencing: {failed.value!r}"
            assert state(a) == before_crash
            # The append itself (not only the catch-up read before it) fails cleanly too.
            t0 = time.monotonic()
            with pytest.raises(KafkaLogError) as failed_append:
                a.backend.append([record_from_acl("outage-direct-append", acl("outage-direct"))])
            elapsed = time.monotonic() - t0
            assert elapsed < 3 * timeout_s + 5, f"append took {elapsed:.1f}s to fail (timeout_s={timeout_s})"
            assert isinstance(failed_append.value, LogUnavailableError | KafkaLogError)
            assert answers(b) == answers_before
            assert state(b) == before_crash
        finally:
            own_broker.start()

        # After the restart A writes again (the broker may need a moment to serve transactions).
        deadline = time.monotonic() + 60
        while True:
            try:
                ops.append(("create", create(a, [acl("after-restart-1"), acl("audit", "User:alice")])))
                break
            except LogUnavailableError as exc:
                assert state(a) == before_crash, "a failed append changed the controller's image"
                if time.monotonic() > deadline:
                    pytest.fail(f"the controller could not append within 60s of the broker's restart: {exc}")
                time.sleep(0.5)
        ops.append(("delete", delete(a, [acl("payments-1", "User:alice", OP.WRITE)])))
        ops.append(("create", create(a, [acl("after-restart-2")])))

        wait_caught_up(tailer, a.loader.next_offset, timeout=60)
        assert state(b) == state(a)
        c = node(cfg, writer=False)  # a fresh full replay
        assert state(c) == state(a)
        assert answers(b) == answers(c) == answers(a)
        # Exactly the successful appends, in order: nothing from the outage, no gap, no duplicate.
        records = log_records(cfg)
        assert records == expected_records(ops)
        assert not any(getattr(r, "resource_name", "").startswith("during-outage") for r in records)
        assert not any(getattr(r, "resource_name", "").startswith("outage-direct") for r in records)
    finally:
        tailer.stop()
        close_all(c, b, a)


# ---- 3. fencing ---------------------------------------------------------------------------------------
def test_second_controller_fences_the_first(kafka_broker: KafkaBroker) -> None:
    cfg = config(kafka_broker)
    first = node(cfg, writer=True)
    second = None
    try:
        ops: list[tuple[str, list]] = []
        ops.append(("create", create(first, [acl("orders"), acl("payments")])))
        ops.append(("create", create(first, [acl("audit", "User:alice")])))
        first_epoch = first.backend.epoch  # type: ignore[attr-defined]
        hwm = 3

        second = node(cfg, writer=True)  # same topic, same (default) transactional id
        assert second.backend.epoch > first_epoch  # type: ignore[attr-defined]
        assert state(second) == state(first)
        assert second.backend.high_watermark() == hwm

        with pytest.raises(LogFencedError):
            first.controller.create_acls([acl("fenced-1")])
        assert state(first)[1] == hwm, "a fenced append must not be applied"

        result = second.backend.append([record_from_acl("second-direct", acl("second-direct"))])
        assert result.base_offset == hwm, f"the new writer continued at {result.base_offset}, not the HWM {hwm}"
        ops.append(("create", [("second-direct", acl("second-direct"))]))
        ops.append(("create", create(second, [acl("second-1"), acl("second-2")])))

        # The fenced writer stays fenced, even after the new one wrote.
        with pytest.raises(LogFencedError):
            first.controller.create_acls([acl("fenced-2")])

        records = log_records(cfg)
        assert records == expected_records(ops)
        names = {getattr(r, "resource_name", None) for r in records}
        assert not names & {"fenced-1", "fenced-2"}
        batches = log_batches(cfg)
        assert [(base, count) for base, count, _ in batches] == [(0, 2), (2, 1), (3, 1), (4, 2)]
        assert {e for _, _, e in batches[:2]} == {first_epoch}
        assert {e for _, _, e in batches[2:]} == {second.backend.epoch}  # type: ignore[attr-defined]
        fresh = node(cfg, writer=False)
        try:
            assert state(fresh) == state(second)
        finally:
            fresh.close()
    finally:
        close_all(second, first)


# ---- 4. kill -9 of a node, restart from its snapshot ----------------------------------------------------
NODE_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from authorizer.config import AuthorizerConfig
    from authorizer.node import AclNode
    from metadata_log.backends.kafka import KafkaLog, KafkaLogConfig

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
        for i in range(5):
            create(controller, [acl(f"t{i}-{j}") for j in range(3)])
        ready_offset = controller.loader.next_offset
        args = {
            "bootstrap": cfg.bootstrap_servers,
            "topic": cfg.topic,
            "client": cfg.client,
            "snapshots": str(snaps),
        }
        proc = subprocess.Popen(
            [sys.executable, "-c", NODE_SCRIPT, json.dumps(args)],
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        line = ""
        while not line.startswith("READY"):
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                pytest.fail(f"node subprocess exited {proc.returncode} before READY:\n{proc.stderr.read()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail("node subprocess did not print READY within 60s")
        _, offset, name = line.split()
        assert int(offset) == ready_offset
        assert (snaps / name).is_file()

        # More ACLs while the node tails and snapshots; kill it in the middle of that.
        for i in range(5, 10):
            create(controller, [acl(f"t{i}-{j}") for j in range(3)])
            delete(controller, [acl(f"t{i - 5}-0")])
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert proc.returncode == -signal.SIGKILL
        for i in range(10, 13):
            create(controller, [acl(f"t{i}-{j}", "User:alice") for j in range(2)])
        delete(controller, [acl("t7-1")])

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
    if partitions != 1:
        return  # the log only ever uses partition 0; the override is about cleanup/retention
    log = KafkaLog(dataclasses.replace(cfg, allow_unsafe_topic=True), writer=True)
    try:
        assert log.append([record_from_acl("x1", acl("x"))]).base_offset == 0
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
        for i in range(3):
            create(controller, [acl(f"a{i}-{j}") for j in range(2)])
        stale = node(cfg, writer=False, snapshot_dir=old_snaps)
        stale_snapshot = stale.take_snapshot()
        stale_next = stale.loader.next_offset
        assert stale_next == 6
        stale.close()
        stale = None
        for i in range(3, 6):
            create(controller, [acl(f"a{i}-{j}") for j in range(2)])
        delete(controller, [acl("a0-0"), acl("a4-1")])
        controller.take_snapshot()  # a snapshot that still covers the log after the deletion

        frames = kafka_frames(kafka_broker, cfg.topic)
        assert [(base, count) for _, base, count in frames] == [(0, 2), (2, 2), (4, 2), (6, 2), (8, 2), (10, 2),
                                                                 (12, 2)]
        cut = next(k for k, base, _ in frames if base == 8)  # log start moves to logical offset 8 > 6
        _delete_records_before(kafka_broker, cfg.topic, cut)

        probe = KafkaLog(dataclasses.replace(cfg, create_topic=False), writer=False)
        try:
            assert probe.log_start_offset() == 8
            assert probe.high_watermark() == 14
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
            assert "log starts at offset 8" in text, f"{label}: {text}"
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
        # The controller keeps writing after the deletion; the restarted node follows.
        create(controller, [acl("after-delete")])
        restarted.loader.catch_up()
        assert state(restarted) == state(controller)
    finally:
        close_all(restarted, stale, controller)
