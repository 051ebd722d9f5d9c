"""KIP-801 "Ordering" and "Consistency" through the real log path, with concurrent readers.

A writer thread appends batches to a MemoryLog; a loader thread tails it (MetadataLoader.catch_up) and
now and then loads a snapshot of an alternative state and then of the true state again (written to
and read back from a real snapshot file); reader
threads call `authorizer.authorize(bob, [READ foo, READ bar])` the whole time. Every observed pair
must be the pair of SOME batch boundary of the log (precomputed by replaying every prefix).

The batches are chosen so that bob is DENIED on `foo` at every boundary, while applying any of them
out of order, or record by record, opens a window in which he is ALLOWED on `foo`:

    [+D]            deny bob READ foo
    [+A]            allow bob READ *                     (KIP-801's example, two batches)
    [-A, +A']       swap the allow                       (record by record: a moment with no allow)
    [-D, +D']       swap the deny, the allow present     (record by record: ALLOWED on foo)
    [+D'', -D']     swap again, add first                (out of order: ALLOWED on foo)
    [-A'] [-D'']
    [+D3, +A3]      KIP-801's example in one batch       (out of order: ALLOWED on foo)
    [-D3, -A3]      remove both, deny first              (record by record: ALLOWED on foo)

A self-check runs the same harness against deliberately broken loaders (record-by-record, reversed,
and a snapshot load applied record by record) and requires it to see a violation, so the main test
can fail.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.model.acls import (
    AclOperation,
    AclPermissionType,
    AuthorizationResult,
    PatternType,
    ResourceType,
    StandardAcl,
)
from kraftacl.authorizer.model.filters import AclBindingFilter
from kraftacl.authorizer.state.image import AclsImage, Provenance
from kraftacl.authorizer.state.loader import AuthorizerPublisher, MetadataLoader
from kraftacl.authorizer.state.records import acl_from_record, record_from_acl
from kraftacl.metadata_log.backends.memory import MemoryLog
from kraftacl.metadata_log.codec.avro import new_uuid
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord
from kraftacl.metadata_log.replayer import Replayer
from kraftacl.snapshots.format import SnapshotHeader, SnapshotReader
from kraftacl.snapshots.store import SnapshotStore

T = ResourceType.TOPIC
ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
BOB = RequestContext("User:bob", "10.0.0.1")
ACTIONS = [Action(AclOperation.READ, T, "foo"), Action(AclOperation.READ, T, "bar")]


def bob(
    name: str,
    perm: AclPermissionType,
    op: AclOperation = AclOperation.READ,
    host: str = "*",
    principal: str = "User:bob",
) -> StandardAcl:
    return StandardAcl(T, name, PatternType.LITERAL, principal, host, op, perm)


# Several ACLs with the same effect on bob's two actions, so that a batch can replace one by another
# (the image refuses two ACLs with the same content, as Kafka's StandardAuthorizerData does).
DENY_FOO = bob("foo", AclPermissionType.DENY)
DENY_FOO_ALL = bob("foo", AclPermissionType.DENY, op=AclOperation.ALL)
DENY_FOO_HOST = bob("foo", AclPermissionType.DENY, host=BOB.host)
ALLOW_ALL = bob("*", AclPermissionType.ALLOW)
ALLOW_ALL_OPS = bob("*", AclPermissionType.ALLOW, op=AclOperation.ALL)
ALLOW_EVERYONE = bob("*", AclPermissionType.ALLOW, principal="User:*")
Pair = tuple[AuthorizationResult, ...]


def add(acl: StandardAcl) -> tuple[str, AccessControlEntryRecord]:
    acl_id = new_uuid()
    return acl_id, record_from_acl(acl_id, acl)


def rm(acl_id: str) -> RemoveAccessControlEntryRecord:
    return RemoveAccessControlEntryRecord(acl_id)


def round_batches() -> list[list[MetadataRecord]]:
    """One round of the adversarial sequence (fresh ids every time)."""
    d, add_d = add(DENY_FOO)
    a, add_a = add(ALLOW_ALL)
    a2, add_a2 = add(ALLOW_ALL_OPS)
    a3, add_a3 = add(ALLOW_EVERYONE)
    d2, add_d2 = add(DENY_FOO_ALL)
    d3, add_d3 = add(DENY_FOO_HOST)
    d4, add_d4 = add(DENY_FOO)
    a4, add_a4 = add(ALLOW_ALL)
    return [
        [add_d],  # KIP-801's example as two batches: deny first ...
        [add_a],  # ... then allow all topics
        [rm(a), add_a2],  # swap the allow
        [add_a3, rm(a2)],  # swap the allow, add first
        [rm(d), add_d2],  # swap the deny while the allow is present: record by record, foo is open
        [add_d3, rm(d2)],  # swap the deny, add first: out of order, foo is open
        [rm(a3)],
        [rm(d3)],
        [add_d4, add_a4],  # KIP-801's example in one batch: out of order, foo is open
        [rm(d4), rm(a4)],  # remove both, the deny first: record by record, foo is open
    ]


def script(rounds: int) -> list[list[MetadataRecord]]:
    return [batch for _ in range(rounds) for batch in round_batches()]


def boundary_pairs(batches: list[list[MetadataRecord]]) -> set[Pair]:
    """Replay every prefix of the log (each batch boundary) and collect the decisions there."""
    log = MemoryLog()
    auth = StandardAuthorizer()
    auth.complete_initial_load()
    loader = MetadataLoader(log, [AuthorizerPublisher(auth)])
    pairs = {tuple(auth.authorize(BOB, ACTIONS))}
    for batch in batches:
        log.append(batch)
    for boundary in [b.next_offset for b in log.read(0)]:
        loader.catch_up(to_offset=boundary)
        pairs.add(tuple(auth.authorize(BOB, ACTIONS)))
    return pairs


def alternative_state() -> list[AccessControlEntryRecord]:
    """A snapshot of another state (fresh ids): deny foo and allow all, so (DENIED, ALLOWED)."""
    return [record_from_acl(new_uuid(), DENY_FOO), record_from_acl(new_uuid(), ALLOW_ALL)]


class Harness:
    """Writer, loader driver and readers around one authorizer; records every observed pair."""

    def __init__(
        self,
        auth: StandardAuthorizer,
        log: MemoryLog,
        drive: Callable[[], None],
        readers: int = 3,
    ) -> None:
        self.auth = auth
        self.log = log
        self.drive = drive
        self.readers = readers
        self.seen: Counter[Pair] = Counter()
        self.errors: list[BaseException] = []

    def read_loop(self, stop: threading.Event, abort: threading.Event, stop_on: Callable[[Pair], bool]) -> None:
        seen: Counter[Pair] = Counter()
        try:
            while not stop.is_set():
                pair = tuple(self.auth.authorize(BOB, ACTIONS))
                seen[pair] += 1
                if stop_on(pair):
                    abort.set()
                    stop.set()
        except BaseException as exc:  # pragma: no cover - reported below
            self.errors.append(exc)
        finally:
            self.seen.update(seen)

    def run(
        self,
        batches: list[list[MetadataRecord]],
        time_limit: float,
        stop_on: Callable[[Pair], bool] = lambda pair: False,
    ) -> None:
        stop = threading.Event()  # readers stop: time is up, everything is applied, or abort
        abort = threading.Event()  # everyone stops: a reader saw what `stop_on` looks for
        written = threading.Event()

        def write() -> None:
            try:
                for batch in batches:
                    if abort.is_set():
                        return
                    self.log.append(batch)
                    time.sleep(0)  # let the loader and the readers interleave with the appends
            except BaseException as exc:  # pragma: no cover - reported below
                self.errors.append(exc)
            finally:
                written.set()

        def drive() -> None:
            try:
                while not abort.is_set():
                    done = written.is_set()
                    self.drive()
                    if done:  # this pass started after the last append: everything is applied
                        return
            except BaseException as exc:  # pragma: no cover - reported below
                self.errors.append(exc)

        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-5)
        try:
            threads = [
                threading.Thread(target=self.read_loop, args=(stop, abort, stop_on)) for _ in range(self.readers)
            ]
            for t in threads:
                t.start()
            writer = threading.Thread(target=write)
            driver = threading.Thread(target=drive)
            writer.start()
            driver.start()
            # The readers run at most `time_limit` seconds; the log is then applied to its end regardless.
            driver.join(time_limit)
            stop.set()
            for t in threads:
                t.join(10)
            writer.join(10)
            driver.join(10)
            assert not driver.is_alive() and not writer.is_alive()
        finally:
            sys.setswitchinterval(old)
        assert not self.errors, self.errors


def foo_allowed(pair: Pair) -> bool:
    return pair[0] is ALLOWED


def snapshot_file(store: SnapshotStore, image: AclsImage) -> SnapshotReader:
    """The image written as a real snapshot file (temporary name, fsync, rename) and opened for reading."""
    p = image.provenance
    path = store.write_chunks(SnapshotHeader(p.next_offset, max(p.epoch, 0), max(p.timestamp_ms, 0)), image.chunks())
    return SnapshotReader(path)


def bobs_other_acls(count: int) -> list[MetadataRecord]:
    """One batch giving bob `count` ACLs that decide nothing about foo or bar: his view is then large (literal
    topics, prefixes under `foo-` beside `foo`'s path in his tree, hosts on `*`), and every later batch
    changes that large view (issue #19)."""
    acls = [bob(f"t-{n}", AclPermissionType.ALLOW) for n in range(count // 2)]
    acls += [
        bob(f"foo-{n}", AclPermissionType.DENY)._replace(pattern_type=PatternType.PREFIXED) for n in range(count // 4)
    ]
    acls += [bob("*", AclPermissionType.ALLOW, host=f"10.9.{n // 250}.{n % 250}") for n in range(count // 4)]
    return [add(acl)[1] for acl in acls]


@pytest.mark.parametrize("bob_owns", [0, 3000], ids=["small", "bob-owns-3000"])
@pytest.mark.parametrize("publish_every", [1, 50_000])
def test_readers_only_ever_see_batch_boundaries(publish_every: int, bob_owns: int, tmp_path: Path) -> None:
    batches = ([bobs_other_acls(bob_owns)] if bob_owns else []) + script(rounds=300)
    allowed = boundary_pairs(batches)
    assert allowed == {(DENIED, DENIED), (DENIED, ALLOWED)}, "bob is never allowed on foo at a boundary"

    log = MemoryLog()
    auth = StandardAuthorizer()
    loader = MetadataLoader(log, [AuthorizerPublisher(auth)], publish_every_records=publish_every)
    loader.initial_load()
    passes = Counter[str]()
    store = SnapshotStore(tmp_path, retain=2)

    def drive() -> None:
        applied = loader.catch_up()
        passes["catch_up"] += 1
        passes["records"] += applied
        if passes["catch_up"] % 7 == 0:
            # A node that must apply a snapshot: another state first, then the true state again, read
            # back from a snapshot file written by the store.
            true: AclsImage = loader.image
            reader = snapshot_file(store, true)
            loader.load_snapshot(alternative_state(), true.provenance, source="alternative")
            loader.load_snapshot(reader.records(), true.provenance, source=str(reader.path))
            passes["snapshots"] += 2

    harness = Harness(auth, log, drive)
    harness.run(batches, time_limit=4.0, stop_on=foo_allowed)

    bad = {pair: n for pair, n in harness.seen.items() if pair not in allowed}
    assert not bad, f"readers saw states that are no batch boundary of the log: {bad}"
    assert not any(foo_allowed(p) for p in harness.seen), "bob was allowed on foo while a deny was in the log"
    assert sum(harness.seen.values()) > 1_000
    assert set(harness.seen) == allowed, "both boundary states were observed (the readers ran during writes)"
    assert passes["records"] == log.high_watermark() == sum(len(b) for b in batches)
    assert passes["snapshots"] > 0
    assert len(loader.image.acls) == bob_owns


# ---- self-check: the harness sees broken loaders -------------------------------------------------------


class RecordByRecordLoader:
    """A broken loader: publishes every record on its own (optionally in reverse order within a batch),
    which is Kafka's AclPublisher window (and worse), not one swap per batch."""

    def __init__(self, log: MemoryLog, auth: StandardAuthorizer, reverse: bool) -> None:
        self.replayer = Replayer(log)
        self.auth = auth
        self.reverse = reverse
        self.next_offset = 0

    def catch_up(self) -> None:
        for batch in self.replayer.batches(self.next_offset):
            records: Iterator[MetadataRecord] = reversed(batch.records) if self.reverse else iter(batch.records)
            for record in records:
                if isinstance(record, AccessControlEntryRecord):
                    self.auth.apply_changes([], [(record.id, acl_from_record(record))])
                else:
                    self.auth.apply_changes([record.id], [])
                time.sleep(0.0002)
            self.next_offset = batch.next_offset


@pytest.mark.parametrize("reverse", [False, True], ids=["record-by-record", "reversed"])
def test_harness_detects_out_of_order_or_partial_application(reverse: bool) -> None:
    log = MemoryLog()
    auth = StandardAuthorizer()
    auth.complete_initial_load()
    loader = RecordByRecordLoader(log, auth, reverse)
    harness = Harness(auth, log, loader.catch_up)
    harness.run(script(rounds=150), time_limit=5.0, stop_on=foo_allowed)
    assert any(foo_allowed(p) for p in harness.seen), harness.seen


def test_harness_detects_a_snapshot_load_applied_record_by_record() -> None:
    """The main test's snapshot loads can fail it: a load that shows its steps is seen by the readers."""
    log = MemoryLog()
    auth = StandardAuthorizer()
    loader = MetadataLoader(log, [AuthorizerPublisher(auth)])
    loader.initial_load()
    # another state, in a file order that is no decision order: the allow before the deny on foo
    other = [record_from_acl(new_uuid(), ALLOW_ALL), record_from_acl(new_uuid(), DENY_FOO)]

    def load_record_by_record(records: list[AccessControlEntryRecord]) -> None:
        for acl_id, _ in auth.acls_with_ids(AclBindingFilter()):
            auth.apply_changes([acl_id], [])
            time.sleep(0.0002)
        for record in records:
            auth.apply_changes([], [(record.id, acl_from_record(record))])
            time.sleep(0.0002)

    def drive() -> None:
        loader.catch_up()
        load_record_by_record(other)
        load_record_by_record(list(loader.image.records()))  # the true state again

    harness = Harness(auth, log, drive)
    harness.run(script(rounds=150), time_limit=5.0, stop_on=foo_allowed)
    assert any(foo_allowed(p) for p in harness.seen), harness.seen


def test_snapshot_provenance_is_kept_across_reloads() -> None:
    """The snapshot loads in the main test keep the loader where it was: the tail continues after them."""
    log = MemoryLog()
    for batch in script(rounds=1)[:2]:
        log.append(batch)
    loader = MetadataLoader(log, [AuthorizerPublisher(StandardAuthorizer())])
    loader.catch_up()
    true = loader.image
    loader.load_snapshot(alternative_state(), true.provenance)
    assert loader.image.provenance == true.provenance
    assert set(loader.image.acls).isdisjoint(true.acls)
    loader.load_snapshot(list(true.records()), true.provenance)
    assert dict(loader.image.acls) == dict(true.acls)
    assert loader.image.provenance == Provenance(1, 0, true.provenance.timestamp_ms)
