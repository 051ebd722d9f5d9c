"""AclController: CreateAcls / DeleteAcls with Kafka's validation, de-duplication, limits and atomic batches.

Vectors from the spec §16.4 (C1, C2, D1, L1, L3) and the delete half of F18 (§16.3), checked through
the real path: controller -> MemoryLog (one batch per request) -> loader -> image.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.errors import ImageError
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.model.filters import (
    ANY_FILTER,
    AccessControlEntryFilter,
    AclBindingFilter,
    ResourcePatternFilter,
)
from kraftacl.authorizer.state.controller import (
    MAX_RECORDS_PER_USER_OP,
    AclController,
    ApiError,
    CreateResult,
    DeleteResult,
)
from kraftacl.authorizer.state.loader import AuthorizerPublisher, MetadataLoader
from kraftacl.authorizer.state.node import AclNode
from kraftacl.authorizer.state.records import acl_from_record, record_from_acl
from kraftacl.metadata_log.backend import AppendResult
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.backends.memory import MemoryLog
from kraftacl.metadata_log.codec.avro import new_uuid, text_to_uuid, uuid_to_text
from kraftacl.metadata_log.errors import LogLockedError
from kraftacl.metadata_log.records import MetadataRecord, RecordBatch, RemoveAccessControlEntryRecord

T, C = ResourceType.TOPIC, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
OP, PERM = AclOperation, AclPermissionType
U = "4f2a"  # the random suffix AuthorizerTest appends to topic names

X = StandardAcl(T, "foo", LIT, "User:bob", "*", OP.READ, PERM.ALLOW)
CLUSTER_ODD = StandardAcl(C, "not-kafka-cluster", LIT, "User:bob", "some.host.name", OP.ALTER, PERM.ALLOW)
C1_REQUEST = [
    X,
    X,
    StandardAcl(T, "", LIT, "User:bob", "*", OP.READ, PERM.ALLOW),
    StandardAcl(T, "foo", PatternType.UNKNOWN, "User:bob", "*", OP.READ, PERM.ALLOW),
    StandardAcl(ResourceType.UNKNOWN, "foo", PatternType.UNKNOWN, "User:bob", "*", OP.UNKNOWN, PERM.UNKNOWN),
    StandardAcl(T, "foo", LIT, "User:bob", "*", OP.UNKNOWN, PERM.ALLOW),
    StandardAcl(T, "foo", LIT, "User:bob", "*", OP.READ, PERM.UNKNOWN),
    CLUSTER_ODD,
]
UUID_TEXT = re.compile(r"^[A-Za-z0-9_-]{22}$")


def invalid(message: str) -> ApiError:
    return ApiError(42, "INVALID_REQUEST", message)


NONE = ApiError(0, "NONE")


class Harness:
    """A MemoryLog, a loader with its authorizer, and a controller writing to that log."""

    def __init__(self, log: MemoryLog | None = None, new_id: Callable[[], str] = new_uuid) -> None:
        self.log = log if log is not None else MemoryLog(epoch=5)
        self.authorizer = StandardAuthorizer()
        self.loader = MetadataLoader(self.log, [AuthorizerPublisher(self.authorizer)])
        self.loader.initial_load()
        self.controller = AclController(self.log, self.loader, new_id)

    def batches(self) -> list[RecordBatch]:
        return list(self.log.read(0))

    @property
    def stored(self) -> dict[str, StandardAcl]:
        return dict(self.loader.image.acls)


@pytest.fixture
def h() -> Harness:
    return Harness()


def numbered_acls(count: int, start: int = 0, principal: str = "User:load") -> list[StandardAcl]:
    return [StandardAcl(T, f"topic-{n}", LIT, principal, "*", OP.READ, PERM.ALLOW) for n in range(start, start + count)]


def a(
    rtype: ResourceType = T,
    pattern: PatternType = LIT,
    op: AclOperation = OP.READ,
    perm: AclPermissionType = PERM.ALLOW,
    name: str = "x",
) -> StandardAcl:
    return StandardAcl(rtype, name, pattern, "User:a", "*", op, perm)


def assert_kafka_uuid(text: str) -> None:
    assert UUID_TEXT.match(text), text
    assert not text.startswith("-")
    assert uuid_to_text(text_to_uuid(text)) == text


# ---- C1 / C2: create ----------------------------------------------------------------------------------


def test_c1_as_the_control_manager(h: Harness) -> None:
    results = h.controller.create_acls(C1_REQUEST, api_checks=False)
    assert [r.error for r in results] == [
        NONE,
        NONE,
        invalid("Resource name should not be empty"),
        invalid("Invalid patternType UNKNOWN"),
        invalid("Invalid resourceType UNKNOWN"),  # the type is checked first
        invalid("Invalid operation UNKNOWN"),
        invalid("Invalid permissionType UNKNOWN"),
        NONE,  # the host and the CLUSTER name are not validated by the control manager
    ]
    id_x, id_cluster = results[0].acl_id, results[7].acl_id
    assert id_x is not None and id_cluster is not None
    assert results[1] == CreateResult(NONE, None), "a duplicate in the request succeeds without a record"
    assert all(r.acl_id is None for r in results[1:7])
    batches = h.batches()
    assert len(batches) == 1, "all records of one request are one atomic batch"
    assert batches[0].records == (record_from_acl(id_x, X), record_from_acl(id_cluster, CLUSTER_ODD))
    assert batches[0].epoch == 5
    assert h.stored == {id_x: X, id_cluster: CLUSTER_ODD}
    assert h.authorizer.index is h.loader.index, "the caller reads its own write"


def test_c1_through_the_api_checks(h: Harness) -> None:
    results = h.controller.create_acls(C1_REQUEST, api_checks=True)
    assert [r.error for r in results] == [
        NONE,
        NONE,
        invalid("Invalid empty resource name"),
        invalid("Invalid patternType UNKNOWN"),
        invalid("Invalid resourceType UNKNOWN"),
        invalid("Invalid operation UNKNOWN"),
        invalid("Invalid permissionType UNKNOWN"),
        invalid("The only valid name for the CLUSTER resource is kafka-cluster"),
    ]
    assert results[7].acl_id is None
    batches = h.batches()
    assert len(batches) == 1
    assert batches[0].records == (record_from_acl(results[0].acl_id or "", X),)


def test_api_checks_accept_kafka_cluster_literal_and_prefixed(h: Harness) -> None:
    ok = [
        StandardAcl(C, "kafka-cluster", LIT, "User:bob", "*", OP.ALTER, PERM.ALLOW),
        StandardAcl(C, "kafka-cluster", PRE, "User:bob", "*", OP.ALTER, PERM.ALLOW),
        StandardAcl(T, "t", LIT, "odd type:x:y", "", OP.READ, PERM.DENY),  # only the colon; the host not at all
    ]
    results = h.controller.create_acls([*ok, a(C, PRE, OP.ALTER, name="kafka")])
    only = invalid("The only valid name for the CLUSTER resource is kafka-cluster")
    assert [r.error for r in results] == [NONE, NONE, NONE, only]
    assert sorted(map(str, h.stored.values())) == sorted(map(str, ok))


def test_a_principal_without_a_colon_is_invalid(h: Harness) -> None:
    """Kafka 4.3.1's AclControlManager.validateNewAcl ends with this check (a live 4.3.1 broker answers it)."""
    bad = StandardAcl(T, "t", LIT, "bob-no-colon", "*", OP.READ, PERM.ALLOW)
    message = (
        "Could not parse principal from `bob-no-colon` "
        "(no colon is present separating the principal type from the principal name)"
    )
    for api_checks in (True, False):
        assert h.controller.create_acls([bad], api_checks=api_checks) == [CreateResult(invalid(message))]
    assert h.stored == {}


# Values only a filter may hold, with the message AclControlManager gives each in an ACL.
FILTER_ONLY_CASES = [
    (a(rtype=ResourceType.ANY), "Invalid resourceType ANY"),
    (a(pattern=PatternType.MATCH), "Invalid patternType MATCH"),
    (a(pattern=PatternType.ANY), "Invalid patternType ANY"),
    (a(op=OP.ANY), "Invalid operation ANY"),
    (a(perm=PERM.ANY), "Invalid permissionType ANY"),
]
FILTER_ONLY = [bad for bad, _ in FILTER_ONLY_CASES]


@pytest.mark.parametrize(("bad", "message"), FILTER_ONLY_CASES)
def test_filter_values_are_invalid_in_an_acl(h: Harness, bad: StandardAcl, message: str) -> None:
    assert h.controller.create_acls([bad], api_checks=False) == [CreateResult(invalid(message))]
    assert h.log.high_watermark() == 0


UNKNOWN_SERVER = ApiError(-1, "UNKNOWN_SERVER_ERROR", None)


@pytest.mark.parametrize("bad", FILTER_ONLY, ids=lambda acl: str(acl))
def test_a_filter_only_value_fails_the_whole_request_through_the_api_checks(h: Harness, bad: StandardAcl) -> None:
    """Spec §10 layer 2: AclApis builds every binding first; ResourcePattern / AccessControlEntry throw
    IllegalArgumentException for ANY, MATCH; it escapes the handler, so EVERY entry is
    UNKNOWN_SERVER_ERROR (-1) with a null message, and nothing is written."""
    request = [X, bad, a(name=""), CLUSTER_ODD, bad]
    results = h.controller.create_acls(request, api_checks=True)
    assert results == [CreateResult(UNKNOWN_SERVER, None)] * len(request)
    assert all(r.error.message is None for r in results)
    assert h.log.high_watermark() == 0 and h.stored == {}
    # Without the API layer (AclControlManager called directly) the same entry is INVALID_REQUEST alone.
    direct = h.controller.create_acls(request, api_checks=False)
    assert [r.error.code for r in direct] == [0, 42, 42, 0, 42]
    assert direct[0].acl_id is not None and direct[3].acl_id is not None


def test_a_filter_only_value_fails_before_the_record_limit(h: Harness) -> None:
    request = [*numbered_acls(MAX_RECORDS_PER_USER_OP + 1), a(op=OP.ANY)]
    results = h.controller.create_acls(request, api_checks=True)
    assert len(results) == len(request) and set(results) == {CreateResult(UNKNOWN_SERVER, None)}
    assert h.log.high_watermark() == 0


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (a(rtype=ResourceType.UNKNOWN), "Invalid resourceType UNKNOWN"),
        (a(pattern=PatternType.UNKNOWN), "Invalid patternType UNKNOWN"),
        (a(op=OP.UNKNOWN), "Invalid operation UNKNOWN"),
        (a(perm=PERM.UNKNOWN), "Invalid permissionType UNKNOWN"),
    ],
)
def test_an_unknown_value_fails_only_its_entry_through_the_api_checks(
    h: Harness, bad: StandardAcl, message: str
) -> None:
    """UNKNOWN passes the binding constructors, so it reaches validateNewAcl: INVALID_REQUEST for that entry
    only (over the wire the request parser would already have closed the connection, spec §10 layer 1)."""
    results = h.controller.create_acls([bad, X], api_checks=True)
    assert results[0] == CreateResult(invalid(message), None)
    assert results[1].error == NONE and results[1].acl_id is not None
    assert h.stored == {results[1].acl_id: X}


def test_c2_re_create_writes_nothing(h: Harness) -> None:
    first = h.controller.create_acls([X])
    hwm = h.log.high_watermark()
    again = h.controller.create_acls([X])
    assert again == [CreateResult(NONE, None)]
    assert h.log.high_watermark() == hwm, "0 records: the high-water mark does not move"
    assert len(h.batches()) == 1
    assert h.stored == {first[0].acl_id: X}


def test_a_removed_acl_can_be_created_again(h: Harness) -> None:
    first = h.controller.create_acls([X])[0].acl_id
    h.controller.delete_acls([AclBindingFilter.of(X)])
    second = h.controller.create_acls([X])[0].acl_id
    assert second is not None and second != first
    assert h.stored == {second: X}


# ---- D1 and F18: delete -------------------------------------------------------------------------------


def test_d1(h: Harness) -> None:
    created = h.controller.create_acls(C1_REQUEST, api_checks=False)
    id_x, id_cluster = created[0].acl_id, created[7].acl_id
    assert id_x is not None and id_cluster is not None
    hwm = h.log.high_watermark()
    results = h.controller.delete_acls(
        [
            ANY_FILTER,
            AclBindingFilter.of(X),
            AclBindingFilter(ResourcePatternFilter(T, None, PatternType.UNKNOWN)),
            AclBindingFilter(ResourcePatternFilter(T, "zzz", PatternType.ANY)),
        ]
    )
    assert [r.error for r in results] == [NONE, NONE, invalid("Unknown patternFilter."), NONE]
    assert sorted(results[0].deleted, key=str) == sorted([(id_x, X), (id_cluster, CLUSTER_ODD)], key=str)
    assert results[1].deleted == [(id_x, X)], "x is reported again under the second filter"
    assert results[2].deleted == []
    assert results[3] == DeleteResult(NONE, [])
    batches = h.batches()
    assert len(batches) == 2
    removal = batches[1]
    assert removal.base_offset == hwm
    assert sorted(r.id for r in removal.records if isinstance(r, RemoveAccessControlEntryRecord)) == sorted(
        [id_x, id_cluster]
    )
    assert len(removal.records) == 2, "each id is removed once, in one atomic batch"
    assert h.stored == {}


def test_unknown_entry_filter(h: Harness) -> None:
    h.controller.create_acls([X])
    bad_op = AclBindingFilter(entry=AccessControlEntryFilter(operation=OP.UNKNOWN))
    bad_perm = AclBindingFilter(entry=AccessControlEntryFilter(permission_type=PERM.UNKNOWN))
    results = h.controller.delete_acls([bad_op, bad_perm])
    assert [r.error for r in results] == [invalid("Unknown entryFilter."), invalid("Unknown entryFilter.")]
    assert len(h.batches()) == 1
    assert list(h.stored.values()) == [X]


def test_delete_matching_nothing_writes_nothing(h: Harness) -> None:
    h.controller.create_acls([X])
    hwm = h.log.high_watermark()
    results = h.controller.delete_acls([AclBindingFilter(ResourcePatternFilter(T, "nope", LIT))])
    assert results == [DeleteResult(NONE, [])]
    assert h.log.high_watermark() == hwm


def test_f18_delete_half(h: Harness) -> None:
    acl1 = StandardAcl(T, f"foo-{U}", LIT, "User:alice", "*", OP.READ, PERM.ALLOW)
    acl2 = StandardAcl(T, f"foo-{U}", LIT, "User:alice", "192.168.0.1", OP.WRITE, PERM.ALLOW)
    acl3 = StandardAcl(T, f"bar-{U}", LIT, "User:alice", "*", OP.DESCRIBE, PERM.ALLOW)
    acl4 = StandardAcl(T, "bar-", PRE, "User:*", "*", OP.READ, PERM.ALLOW)
    ids = [r.acl_id for r in h.controller.create_acls([acl1, acl2, acl3, acl4])]
    id1, id2, id3, id4 = ids
    assert None not in ids
    hwm = h.log.high_watermark()
    match_filter = AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, f"bar-{U}", PatternType.MATCH))
    results = h.controller.delete_acls(
        [
            match_filter,
            AclBindingFilter.of(acl1),
            AclBindingFilter(ResourcePatternFilter(T, f"bar-{U}", LIT)),
            AclBindingFilter(ResourcePatternFilter(T, "baz", PatternType.ANY)),
        ]
    )
    assert all(r.error == NONE for r in results)
    assert sorted(results[0].deleted, key=str) == sorted([(id3, acl3), (id4, acl4)], key=str)
    assert results[1].deleted == [(id1, acl1)]
    assert results[2].deleted == [(id3, acl3)], "acl3 is reported under filter 0 and filter 2"
    assert results[3].deleted == []
    removal = h.batches()[-1]
    assert removal.base_offset == hwm
    assert sorted(r.id for r in removal.records) == sorted(str(i) for i in (id1, id3, id4)), "acl3 once"
    assert h.stored == {id2: acl2}


# ---- L1 / L3: the 10,000-record limit -------------------------------------------------------------------

POLICY = ApiError(44, "POLICY_VIOLATION", "Unable to perform excessively large batch operation.")


def test_l1_too_many_new_acls_fails_every_entry_and_a_retry_succeeds(h: Harness) -> None:
    assert MAX_RECORDS_PER_USER_OP == 10_000
    acls = numbered_acls(10_001)
    results = h.controller.create_acls([X, *acls, a(name="")])
    assert len(results) == 10_003
    assert all(r == CreateResult(POLICY) for r in results), "every entry, even the valid and the invalid ones"
    assert h.log.high_watermark() == 0, "nothing was written"
    assert h.stored == {}
    # The clean rule (spec §10): no stale de-dup state, so the retried subset is really written.
    retry = h.controller.create_acls(acls[:10_000])
    assert all(r.error == NONE and r.acl_id is not None for r in retry)
    batches = h.batches()
    assert len(batches) == 1 and len(batches[0].records) == 10_000
    assert len(h.stored) == 10_000
    last = h.controller.create_acls([acls[0], acls[10_000]])
    assert last[0] == CreateResult(NONE, None)
    assert last[1].acl_id is not None
    assert len(h.stored) == 10_001


def test_the_limit_counts_only_new_records(h: Harness) -> None:
    acls = numbered_acls(10_000)
    h.controller.create_acls([acls[0]])
    # 10,000 new + 1 already stored + 1 in-request duplicate + 1 invalid: 10,000 new records, accepted.
    request = [*acls, acls[5], numbered_acls(1, start=10_000)[0], a(name="")]
    results = h.controller.create_acls(request, api_checks=False)
    assert results[0] == CreateResult(NONE, None)
    assert results[-1].error.code == 42
    assert sum(r.acl_id is not None for r in results) == 10_000
    assert len(h.batches()[-1].records) == 10_000


def test_l3_deleting_more_than_the_limit_deletes_nothing(h: Harness) -> None:
    h.controller.create_acls(numbered_acls(10_000))
    h.controller.create_acls([X])
    assert len(h.stored) == 10_001
    hwm = h.log.high_watermark()
    results = h.controller.delete_acls([ANY_FILTER, AclBindingFilter.of(X)])
    assert [r.error.code for r in results] == [-1, -1]
    assert [r.error.name for r in results] == ["UNKNOWN_SERVER_ERROR"] * 2
    assert all(r.deleted == [] for r in results)
    assert h.log.high_watermark() == hwm, "nothing deleted"
    assert len(h.stored) == 10_001
    # Exactly 10,000 is allowed, as one batch.
    by_principal = AclBindingFilter(entry=AccessControlEntryFilter(principal="User:load"))
    ok = h.controller.delete_acls([by_principal])
    assert ok[0].error == NONE and len(ok[0].deleted) == 10_000
    assert len(h.batches()[-1].records) == 10_000
    assert list(h.stored.values()) == [X]


# ---- catching up, ids ---------------------------------------------------------------------------------


def test_controller_catches_up_before_validating() -> None:
    log = MemoryLog()
    first, second = Harness(log), Harness(log)
    other = StandardAcl(T, "bar", LIT, "User:carol", "*", OP.WRITE, PERM.DENY)
    written = second.controller.create_acls([X, other])
    hwm = log.high_watermark()
    assert hwm == 2
    assert first.stored == {}, "the first controller has not seen the other's write yet"
    results = first.controller.create_acls([X, other])
    assert results == [CreateResult(NONE, None), CreateResult(NONE, None)], "seen as duplicates"
    assert log.high_watermark() == hwm
    assert first.stored == {written[0].acl_id: X, written[1].acl_id: other}
    # Deletes catch up too: the first controller removes what the second wrote.
    deleted = first.controller.delete_acls([AclBindingFilter.of(other)])
    assert deleted[0].deleted == [(written[1].acl_id, other)]
    second.controller.create_acls([])
    assert second.stored == {written[0].acl_id: X}


def test_authorizer_of_the_controller_sees_the_write(h: Harness) -> None:
    bob = RequestContext("User:bob", "10.0.0.1")
    read_foo = Action(OP.READ, T, "foo")
    assert h.authorizer.authorize(bob, [read_foo])[0].name == "DENIED"
    h.controller.create_acls([X])
    assert h.authorizer.authorize(bob, [read_foo])[0].name == "ALLOWED"
    h.controller.delete_acls([ANY_FILTER])
    assert h.authorizer.authorize(bob, [read_foo])[0].name == "DENIED"


def test_new_ids_are_kafka_uuid_text(h: Harness) -> None:
    results = h.controller.create_acls(numbered_acls(500))
    ids = [r.acl_id for r in results]
    assert len(set(ids)) == 500
    for acl_id in ids:
        assert acl_id is not None
        assert_kafka_uuid(acl_id)
    for rec in h.batches()[0].records:
        assert_kafka_uuid(rec.id)


def test_new_uuid_never_starts_with_a_dash() -> None:
    for _ in range(20_000):
        assert_kafka_uuid(new_uuid())


def test_an_id_already_in_use_is_never_reused() -> None:
    taken = new_uuid()
    fresh = [new_uuid() for _ in range(3)]
    sequence: Iterator[str] = itertools.chain([taken], [taken, taken, fresh[0]], fresh[1:])
    h = Harness(new_id=lambda: next(sequence))
    assert h.controller.create_acls([X])[0].acl_id == taken
    other = StandardAcl(T, "other", LIT, "User:bob", "*", OP.READ, PERM.ALLOW)
    third = StandardAcl(T, "third", LIT, "User:bob", "*", OP.READ, PERM.ALLOW)
    results = h.controller.create_acls([other, third])
    assert [r.acl_id for r in results] == fresh[:2]
    assert h.stored == {taken: X, fresh[0]: other, fresh[1]: third}


# ---- one writer at a time -------------------------------------------------------------------------------
#
# "The controller must be caught up before it validates, and only one controller writes at a time."
# A thread switch is forced between validation and the append (the id generator gives up the GIL),
# so a controller that did not serialize catch-up, validation and append would be caught here.

RACE = "User:race"


def yielding_new_id() -> str:
    time.sleep(0)  # releases the GIL: another thread may run between validating and appending
    return new_uuid()


class YieldingLog(MemoryLog):
    """A MemoryLog that lets other threads run just before each append (after the caller validated)."""

    def append(self, records: Sequence[MetadataRecord], *, timestamp_ms: int | None = None) -> AppendResult:
        time.sleep(0)
        return super().append(records, timestamp_ms=timestamp_ms)


def run_threads(count: int, work: Callable[[int], None]) -> None:
    """Run `work(n)` for n in range(count) on `count` threads released together; re-raise any failure."""
    barrier = threading.Barrier(count)
    failures: list[BaseException] = []

    def body(n: int) -> None:
        try:
            barrier.wait()
            work(n)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=body, args=(n,)) for n in range(count)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        sys.setswitchinterval(interval)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
    if failures:
        raise failures[0]


def replayed(log: MemoryLog) -> dict[str, StandardAcl]:
    """The ACLs of a fresh replay of the whole log."""
    loader = MetadataLoader(log)
    loader.catch_up()
    return dict(loader.image.acls)


def check_log(batches: list[RecordBatch]) -> dict[str, StandardAcl]:
    """Batches are contiguous from 0; no id is added twice or removed unless live; no content is live twice.

    Returns the ACLs live at the end.
    """
    live: dict[str, StandardAcl] = {}
    next_offset = 0
    for batch in batches:
        assert batch.base_offset == next_offset, "batches are contiguous"
        next_offset = batch.next_offset
        for rec in batch.records:
            if isinstance(rec, RemoveAccessControlEntryRecord):
                assert rec.id in live, f"{rec.id} removed while not live (removed twice?)"
                del live[rec.id]
            else:
                acl = acl_from_record(rec)
                assert rec.id not in live, f"{rec.id} added twice"
                assert acl not in live.values(), f"{acl} is live twice"
                live[rec.id] = acl
    return live


def race_creates(h: Harness, pool: list[StandardAcl]) -> list[tuple[list[StandardAcl], list[CreateResult]]]:
    """16 threads, 25 requests each, of 6 ACLs sampled from `pool` plus an in-request duplicate."""
    outcomes: list[tuple[list[StandardAcl], list[CreateResult]]] = []

    def work(n: int) -> None:
        rng = random.Random(n)
        for _ in range(25):
            request = rng.sample(pool, 6)
            request.append(request[0])  # the same ACL twice in one request as well
            outcomes.append((request, h.controller.create_acls(request)))

    run_threads(16, work)
    return outcomes


def test_concurrent_creates_write_each_distinct_acl_once() -> None:
    h = Harness(YieldingLog(), new_id=yielding_new_id)
    pool = numbered_acls(40, principal=RACE)
    outcomes = race_creates(h, pool)
    assert all(r.error == NONE for _, results in outcomes for r in results)
    created = [(r.acl_id, acl) for request, results in outcomes for acl, r in zip(request, results, strict=True)]
    new = {acl_id: acl for acl_id, acl in created if acl_id is not None}
    assert sorted(Counter(new.values()).items()) == sorted(Counter(pool).items()), "one record per distinct ACL"
    assert sum(acl_id is None for acl_id, _ in created) == len(created) - len(pool), "the rest: success, no record"
    batches = h.batches()
    # Every request that created something wrote exactly one batch holding exactly its new records, in order.
    request_ids = [tuple(r.acl_id for r in results if r.acl_id is not None) for _, results in outcomes]
    assert sorted(ids for ids in request_ids if ids) == sorted(tuple(rec.id for rec in b.records) for b in batches)
    assert {rec.id: rec for b in batches for rec in b.records} == {i: record_from_acl(i, acl) for i, acl in new.items()}
    assert check_log(batches) == new == h.stored == replayed(h.log)
    assert h.authorizer.index is h.loader.index


def test_self_check_the_race_catches_an_unserialized_controller() -> None:
    """Without its lock, the controller of the test above writes some ACL twice: that test can fail."""
    for _ in range(5):
        h = Harness(YieldingLog(), new_id=yielding_new_id)
        h.controller._lock = contextlib.nullcontext()  # type: ignore[assignment]
        try:
            race_creates(h, numbered_acls(40, principal=RACE))
        except ImageError as exc:  # the loader refuses the duplicate content the race wrote
            assert "an ACL with the same content already exists" in str(exc)
            return
    pytest.fail("five unserialized races wrote no duplicate: the race harness cannot see a missing lock")


def test_concurrent_deletes_racing_creates_never_remove_an_acl_twice() -> None:
    h = Harness(YieldingLog(), new_id=yielding_new_id)
    pool = numbered_acls(10, principal=RACE)
    initial = h.controller.create_acls(pool)
    creates: list[tuple[list[StandardAcl], list[CreateResult]]] = [(pool, initial)]
    deletes: list[list[DeleteResult]] = []
    everything = AclBindingFilter(entry=AccessControlEntryFilter(principal=RACE))

    def work(n: int) -> None:
        rng = random.Random(n)
        for step in range(30):
            if n % 2:
                request = rng.sample(pool, 3)
                creates.append((request, h.controller.create_acls(request)))
            else:
                filters = [AclBindingFilter.of(acl) for acl in rng.sample(pool, 3)]
                if step % 7 == 0:
                    filters.append(everything)  # overlaps the exact filters: still one removal each
                deletes.append(h.controller.delete_acls(filters))

    run_threads(12, work)
    assert all(r.error == NONE for _, results in creates for r in results)
    assert all(r.error == NONE for results in deletes for r in results)
    added = {r.acl_id: acl for request, results in creates for acl, r in zip(request, results, strict=True) if r.acl_id}
    # Each delete request removed a set of ids; no id is removed by two requests.
    removed_per_request = [{i for r in results for i, _ in r.deleted} for results in deletes]
    removed = [i for ids in removed_per_request for i in ids]
    assert len(removed) == len(set(removed)), "an ACL was reported deleted by two requests"
    assert removed, "the deletes raced with something to delete"
    assert all(added[i] == acl for results in deletes for r in results for i, acl in r.deleted)
    batches = h.batches()
    log_adds = [rec.id for b in batches for rec in b.records if not isinstance(rec, RemoveAccessControlEntryRecord)]
    log_removes = [rec.id for b in batches for rec in b.records if isinstance(rec, RemoveAccessControlEntryRecord)]
    assert sorted(log_adds) == sorted(added), "every reported creation is a record, and only those"
    assert sorted(log_removes) == sorted(removed), "every reported deletion is one removal, and only those"
    removal_batches = [
        sorted(rec.id for rec in b.records) for b in batches if isinstance(b.records[0], RemoveAccessControlEntryRecord)
    ]
    assert all(len({type(rec) for rec in b.records}) == 1 for b in batches), "adds and removals never share a batch"
    removal_batches.sort()
    assert removal_batches == sorted(sorted(ids) for ids in removed_per_request if ids), "one batch per request"
    final = {i: acl for i, acl in added.items() if i not in set(removed)}
    assert check_log(batches) == final == h.stored == replayed(h.log)


def test_a_second_writer_on_the_same_log_directory_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    other = StandardAcl(T, "bar", LIT, "User:carol", "*", OP.WRITE, PERM.DENY)
    first = AclNode(FileLog(directory))
    first.start()
    x_id = first.controller.create_acls([X])[0].acl_id
    locked = (
        rf"log directory {re.escape(str(directory))} is locked by another writer \(pid {os.getpid()}\): "
        rf"lock file {re.escape(str(directory / '.lock'))}; open it read-only or stop the other writer"
    )
    with pytest.raises(LogLockedError, match=locked):
        AclNode(FileLog(directory))
    other_id = first.controller.create_acls([other])[0].acl_id  # the refused open took nothing from the first
    assert x_id is not None and other_id is not None
    reader = AclNode(FileLog(directory, read_only=True))  # readers need no lock
    reader.start()
    assert dict(reader.image.acls) == dict(first.image.acls) == {x_id: X, other_id: other}
    reader.close()
    first.close()
    second = AclNode(FileLog(directory))
    second.start()
    try:
        assert dict(second.image.acls) == {x_id: X, other_id: other}
        assert second.controller.create_acls([X]) == [CreateResult(NONE, None)], "caught up: a duplicate"
        third = second.controller.create_acls([a(name="third")])[0].acl_id
        assert third is not None and len(second.image.acls) == 3
    finally:
        second.close()


def test_a_writer_in_another_process_locks_the_directory(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    holder = (
        "import sys\nfrom kraftacl.metadata_log.backends.file.log import FileLog\n"
        "log = FileLog(sys.argv[1])\nprint('ready', flush=True)\nsys.stdin.read()\nlog.close()\n"
    )
    root = Path(__file__).resolve().parents[3]
    child = subprocess.Popen(
        [sys.executable, "-c", holder, str(directory)],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        with pytest.raises(LogLockedError, match=rf"is locked by another writer \(pid {child.pid}\)"):
            AclNode(FileLog(directory))
    finally:
        child.communicate("", timeout=30)
    assert child.returncode == 0
    node = AclNode(FileLog(directory))  # the other process exited: its lock went with it
    node.start()
    assert node.controller.create_acls([X])[0].acl_id is not None
    node.close()


def test_two_controllers_sharing_one_backend_object_never_write_a_duplicate() -> None:
    """Two nodes over ONE MemoryLog: a controller must catch up before it validates, even while the other writes.

    The first controller is held between validating X and appending it (in its id generator) until
    the second has finished its own request for X, or for 0.5 s. Were the controllers serialized only
    each by itself, the second would validate against a log without the first's X and write X again
    (and the first's catch-up would then fail on the duplicate content).
    """
    log = MemoryLog()
    first, second = AclNode(log), AclNode(log)
    first.start()
    second.start()
    second_results: list[list[CreateResult]] = []
    second_done = threading.Event()

    def run_second() -> None:
        try:
            second_results.append(second.controller.create_acls([X]))
        finally:
            second_done.set()

    runner = threading.Thread(target=run_second)

    def held_new_id() -> str:
        runner.start()
        assert not second_done.wait(timeout=0.5), "the second controller wrote while the first was writing"
        return new_uuid()

    first.controller.new_id = held_new_id
    first_results = first.controller.create_acls([X])
    runner.join(timeout=30)
    assert not runner.is_alive()
    x_id = first_results[0].acl_id
    assert x_id is not None
    assert second_results == [[CreateResult(NONE, None)]], "the second saw the first's X: a duplicate, no record"
    assert [len(b.records) for b in log.read(0)] == [1]
    second.loader.catch_up()
    assert dict(first.image.acls) == dict(second.image.acls) == replayed(log) == {x_id: X}
