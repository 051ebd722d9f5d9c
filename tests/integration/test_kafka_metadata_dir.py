"""A real broker's own KRaft metadata directory read by kraft-acl: after ACLs are created, deleted and created
again through confluent-kafka's AdminClient and the broker has snapshotted them, the ACL set kraft-acl reads
(log, snapshot, both) equals the broker's describe_acls, its decisions equal the broker's answers to real
clients (KIP-430 authorized operations), and `import --from-cluster` / `--from-kafka-dir` check out equal."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kraftacl.authorizer.decision.standard import RequestContext
from kraftacl.authorizer.history.metadata_source import SourceFormat, authorizer_for, read_state
from kraftacl.authorizer.model.acls import AclOperation as Op
from kraftacl.authorizer.model.acls import ResourceType as Rt
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.metadata_log.kafka_cluster import binding_codes
from kraftacl.metadata_log.kafka_files.files import PARTITION_DIR, locate
from kraftacl.metadata_log.kafka_files.reader import log_batches, read_snapshot
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from tests.kafka_broker import KafkaBroker, copy_live_dir

pytestmark = pytest.mark.kafka
T = TypeVar("T")
# In an AclBindingFilter None matches any name, principal or host (documented; confluent-kafka's hints say str).
ANY_FILTER = AclBindingFilter(
    ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY  # type: ignore[arg-type]
)  # fmt: skip


def _binding(
    rt: ResourceType, name: str, pt: ResourcePatternType, who: str, host: str, op: AclOperation, pm: AclPermissionType
) -> AclBinding:
    return AclBinding(rt, name, pt, who, host, op, pm)


ALLOW, DENY, LIT, PRE = (
    AclPermissionType.ALLOW,
    AclPermissionType.DENY,
    ResourcePatternType.LITERAL,
    ResourcePatternType.PREFIXED,
)
ALICE_READ = _binding(ResourceType.TOPIC, "orders", LIT, "User:alice", "*", AclOperation.READ, ALLOW)
ALICE_PAY = _binding(ResourceType.TOPIC, "pay", PRE, "User:alice", "*", AclOperation.WRITE, ALLOW)
BOB_DENY = _binding(ResourceType.TOPIC, "orders", LIT, "User:bob", "*", AclOperation.ALL, DENY)
BOB_GROUP = _binding(ResourceType.GROUP, "g-", PRE, "User:bob", "10.0.0.1", AclOperation.READ, DENY)
ALICE_CLUSTER = _binding(ResourceType.BROKER, "kafka-cluster", LIT, "User:alice", "*", AclOperation.DESCRIBE, ALLOW)
ANYONE_TX = _binding(ResourceType.TRANSACTIONAL_ID, "tx", LIT, "User:*", "*", AclOperation.WRITE, ALLOW)
BOB_ORDERS = _binding(ResourceType.TOPIC, "orders", LIT, "User:bob", "*", AclOperation.DESCRIBE, ALLOW)


def _acl_codes(acl: StandardAcl) -> tuple[int, ...]:
    return tuple(int(v) if not isinstance(v, str) else v for v in acl)  # type: ignore[misc]


def _eventually(what: str, probe: Callable[[], T | None], timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def cluster(kafka_snapshotting_broker: KafkaBroker) -> dict[str, Any]:
    """The ACL history (create, delete, create again) applied; returns the broker's final ACL set."""
    broker = kafka_snapshotting_broker
    admin = AdminClient(broker.client_config("admin"))
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "payments")]).values():
        future.result()
    for batch in ([ALICE_READ, ALICE_PAY, BOB_DENY, BOB_GROUP, ALICE_CLUSTER], [ANYONE_TX, BOB_ORDERS]):
        for future in admin.create_acls(batch).values():
            future.result()
    # None matches any principal or host (see ANY_FILTER for the type: ignore)
    gone = [
        AclBindingFilter(ResourceType.TOPIC, "orders", LIT, "User:bob", None, AclOperation.ALL, DENY),  # type: ignore[arg-type]
        AclBindingFilter(
            ResourceType.BROKER, "kafka-cluster", LIT, None, None, AclOperation.ANY, AclPermissionType.ANY  # type: ignore[arg-type]
        ),
    ]  # fmt: skip
    for future in admin.delete_acls(gone).values():
        future.result()
    for future in admin.create_acls([ALICE_CLUSTER]).values():  # the same ACL again: a new id in the log
        future.result()
    expected = {binding_codes(b) for b in (ALICE_READ, ALICE_PAY, BOB_GROUP, ALICE_CLUSTER, ANYONE_TX, BOB_ORDERS)}
    _eventually(
        "describe_acls",
        lambda: True if {binding_codes(b) for b in admin.describe_acls(ANY_FILTER).result()} == expected else None,
    )
    return {"broker": broker, "expected": expected, "data": broker.data_dir / "data"}


def test_the_acls_read_from_log_and_snapshot_equal_describe_acls(cluster: dict[str, Any], tmp_path: Path) -> None:
    data, expected = cluster["data"], cluster["expected"]

    def snapshotted() -> Any:
        files = locate(data)
        assert files is not None
        newest = read_snapshot(files.snapshots[-1])
        return newest if {_acl_codes(acl) for acl in _acls(newest.acl_records())} == expected else None

    newest = _eventually("a snapshot holding every ACL", snapshotted)
    state = read_state(data)
    assert state.format is SourceFormat.KAFKA_LOG and state.snapshot is not None
    assert {_acl_codes(a) for a in state.image.acls.values()} == expected
    # the log alone, replayed from offset 0 with its transactions (no snapshot) gives the same set
    log_only = tmp_path / PARTITION_DIR
    log_only.mkdir()
    for segment in (data / PARTITION_DIR).glob("*.log"):
        shutil.copy(segment, log_only / segment.name)
    from_log = read_state(tmp_path, state.high_watermark)
    assert from_log.snapshot is None
    assert {_acl_codes(a) for a in from_log.image.acls.values()} == expected
    assert newest.file.end_offset <= state.high_watermark


def _acls(records: Any) -> list[StandardAcl]:
    from kraftacl.authorizer.state.records import acl_from_record

    return [acl_from_record(r) for r in records]


def _broker_ops(broker: KafkaBroker, user: str, kind: str, name: str) -> set[int] | None:
    """The broker's KIP-430 answer to `user` through a real client (None: not authorized to describe)."""
    admin = AdminClient(broker.client_config(user))
    try:
        if kind == "cluster":
            ops = admin.describe_cluster(include_authorized_operations=True).result().authorized_operations
        else:
            [future] = admin.describe_topics(TopicCollection([name]), include_authorized_operations=True).values()
            ops = future.result().authorized_operations
    except KafkaException:
        return None
    return {op.value for op in ops or []}


@pytest.mark.parametrize("user", ["alice", "bob"])
def test_decisions_agree_with_the_broker(cluster: dict[str, Any], user: str) -> None:
    broker, state = cluster["broker"], read_state(cluster["data"])
    authorizer = authorizer_for(state)
    ctx = RequestContext.of(f"User:{user}", "127.0.0.1")
    for kind, rtype, name in (
        ("topic", Rt.TOPIC, "orders"),
        ("topic", Rt.TOPIC, "payments"),
        ("cluster", Rt.CLUSTER, "kafka-cluster"),
    ):
        ours = authorizer.authorized_operations(ctx, rtype, name)
        ours_set = {code for code in range(32) if ours >> code & 1}
        theirs = _broker_ops(broker, user, kind, name)
        if theirs is None:  # the broker refused the describe: we must not allow DESCRIBE either
            assert Op.DESCRIBE not in ours_set, (user, name, ours_set)
        else:
            assert ours_set == theirs, (user, name)


def test_import_from_the_cluster_and_from_its_directory_check_out(
    cluster: dict[str, Any], kraft_acl: list[str], tmp_path: Path
) -> None:
    broker = cluster["broker"]
    config = tmp_path / "admin.properties"
    conf = broker.client_config("admin")
    config.write_text("".join(f"{k}={v}\n" for k, v in conf.items() if k != "bootstrap.servers"))

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*kraft_acl, *map(str, args)], capture_output=True, text=True, timeout=180, check=False)

    from_cluster = run(
        "import",
        "--from-cluster",
        "--bootstrap-server",
        broker.bootstrap_servers,
        "--command-config",
        config,
        "--log-dir",
        tmp_path / "a",
        "--check",
        "--output",
        "json",
    )
    assert from_cluster.returncode == 0, from_cluster.stderr
    report = json.loads(from_cluster.stdout)
    assert report["added"] == len(cluster["expected"]) and report["check"]["equal"]
    from_dir = run("import", "--from-kafka-dir", cluster["data"], "--log-dir", tmp_path / "b", "--check")
    assert from_dir.returncode == 0, from_dir.stdout + from_dir.stderr
    exports = [run("export", "--log-dir", where).stdout for where in (tmp_path / "a", tmp_path / "b", cluster["data"])]
    assert exports[0] == exports[1] == exports[2] and len(json.loads(exports[0])) == len(cluster["expected"])
    dump = run("log", "dump", "--log-dir", cluster["data"])
    assert dump.returncode == 0 and "reading Apache Kafka KRaft metadata log" in dump.stderr
    assert '"type":"REMOVE_ACCESS_CONTROL_ENTRY_RECORD"' in dump.stdout


def test_import_into_a_kafka_backed_log(kafka_broker: KafkaBroker, kraft_acl: list[str], tmp_path: Path) -> None:
    source = tmp_path / "acls.json"
    rows = [
        {
            "resource_type": "TOPIC",
            "resource_name": f"t{n}",
            "pattern_type": "LITERAL",
            "principal": f"User:u{n % 7}",
            "host": "*",
            "operation": "READ",
            "permission_type": "ALLOW",
        }
        for n in range(500)
    ]
    source.write_text(json.dumps(rows))
    where = ["--bootstrap-server", kafka_broker.bootstrap_servers, "--metadata-topic", f"import-{time.time_ns()}"]
    args = [*kraft_acl, "import", "--from-json", str(source), *where, "--check", "--output", "json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["added"], report["offsets"], report["check"]["equal"]) == (500, [0, 499], True)
    exported = subprocess.run([*kraft_acl, "export", *where], capture_output=True, text=True, timeout=180, check=False)
    assert sorted(json.loads(exported.stdout), key=lambda a: a["resource_name"]) == sorted(
        rows, key=lambda a: a["resource_name"]
    )


def test_the_shell_on_the_brokers_directory(cluster: dict[str, Any], kraft_acl: list[str]) -> None:
    data = cluster["data"]

    def shell(*words: str) -> str:
        done = subprocess.run([*kraft_acl, "shell", "--log-dir", str(data), *words], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert shell("ls", "/acl/by-principal") == "User:*\nUser:alice\nUser:bob\n"
    state = read_state(data)
    listed = shell("tree", "/image/acls").splitlines()[1::2]
    assert {line.strip() for line in listed} == {str(acl) for acl in state.image.acls.values()}
    assert {_acl_codes(acl) for acl in state.image.acls.values()} == cluster["expected"]
    assert int(shell("cat", "/provenance/offset")) >= state.image.provenance.next_offset  # the broker keeps appending
    assert shell("cat", "/provenance/source").startswith(f"Apache Kafka KRaft metadata log {data}")
    assert shell("authorize", "User:bob", "10.0.0.1", "READ", "GROUP:g-1").startswith("DENIED\n")
    assert shell("authorize", "User:alice", "WRITE", "TOPIC:payments").startswith("ALLOWED\n")


def test_log_check_on_the_brokers_directory(cluster: dict[str, Any], kraft_acl: list[str], tmp_path: Path) -> None:
    """`log check` on a real broker's metadata: Kafka's kind, one consistent history across its segments and
    snapshots (the broker snapshots every second), the end at least what the readers read; the files untouched."""
    copy = tmp_path / "meta"
    copy_live_dir(cluster["data"] / PARTITION_DIR, copy / PARTITION_DIR)  # one moment of the running broker
    before = {p.name: p.read_bytes() for p in (copy / PARTITION_DIR).iterdir()}
    check = [*kraft_acl, "log", "check", "--log-dir", str(copy), "-o", "json"]
    done = subprocess.run(check, capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["kind"] == "kafka" and report["consistent"], done.stdout
    assert report["snapshots"] and all(s["valid"] for s in report["snapshots"])
    assert report["end"] >= read_state(copy).high_watermark
    assert {p.name: p.read_bytes() for p in (copy / PARTITION_DIR).iterdir()} == before


@pytest.mark.spark
def test_the_pipeline_reads_the_brokers_directory_as_the_library_does(
    cluster: dict[str, Any], spark: Any, kraft_acl: list[str], tmp_path: Path
) -> None:
    """fold equals read_state at the offsets around every ACL batch; `audit changes` equals `kraft-acl diff`."""
    from kraftacl.pipeline.jobs.fold import fold, state_at
    from kraftacl.pipeline.sources.log import LogSource, load_events

    copy = tmp_path / "meta"
    copy_live_dir(cluster["data"] / PARTITION_DIR, copy / PARTITION_DIR)  # one moment of the running broker
    files = locate(copy)
    assert files is not None and files.snapshots
    acl_batches = [
        d.batch
        for d in log_batches(files)
        if any(type(e) in (AccessControlEntryRecord, RemoveAccessControlEntryRecord) for _, e in d.entries)
    ]
    end = read_state(copy).high_watermark
    offsets = sorted({acl_batches[0].base_offset, *(b.next_offset for b in acl_batches), end})
    events = load_events(spark, LogSource(log_dir=copy))
    assert events.high_watermark == end
    for offset in offsets:
        folded = {r["id"] for r in state_at(events, offset).select("id").collect()}
        assert folded == set(read_state(copy, offset).image.acls), f"offset {offset}"
    written = fold(events, end, tmp_path / "broker.checkpoint")
    verified = subprocess.run(
        [*kraft_acl, "snapshot", "verify", str(written.path)], capture_output=True, text=True, check=False
    )
    assert (
        verified.stdout.strip()
        == f"OK: {len(cluster['expected'])} records (end offset {end}, epoch {written.header.epoch})"
    )
    peak = max(offsets, key=lambda o: len(read_state(copy, o).image.acls))  # before the deletes
    between = ["--from-offset", str(peak), "--to-offset", str(end), "-o", "json"]
    audited = subprocess.run(
        [*kraft_acl, "audit", "changes", "--log-dir", str(copy), *between],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert audited.returncode == 0, audited.stderr
    diffed = subprocess.run(
        [*kraft_acl, "diff", "--log-dir", str(copy), *between], capture_output=True, text=True, timeout=180, check=False
    )
    diff = json.loads(diffed.stdout)
    changed = json.loads(audited.stdout.strip().splitlines()[-1])
    assert {(c["change"], c["id"]) for c in changed["changes"]} == {
        *(("added", a["id"]) for a in diff["added"]),
        *(("removed", a["id"]) for a in diff["removed"]),
    }
    assert changed["removed"] == len(diff["removed"]) > 0
