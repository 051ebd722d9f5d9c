"""AclController: CreateAcls / DeleteAcls with Kafka's validation, de-duplication, limits and atomic batches.

Vectors from the spec §16.4 (C1, C2, D1, L1, L3) and the delete half of F18 (§16.3), checked through
the real path: controller -> MemoryLog (one batch per request) -> loader -> image.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator

import pytest

from authorizer.controller import (
    MAX_RECORDS_PER_USER_OP,
    AclController,
    ApiError,
    CreateResult,
    DeleteResult,
)
from authorizer.filters import ANY_FILTER, AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter
from authorizer.loader import MetadataLoader
from authorizer.model import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from authorizer.records import record_from_acl
from authorizer.standard import Action, RequestContext, StandardAuthorizer
from metadata_log.backends.memory import MemoryLog
from metadata_log.codec import new_uuid, text_to_uuid, uuid_to_text
from metadata_log.records import RecordBatch, RemoveAccessControlEntryRecord

T, C = ResourceType.TOPIC, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
OP, PERM = AclOperation, AclPermissionType
U = "4f2a"  # the random suffix AuthorizerTest appends to topic names

X = StandardAcl(T, "foo", LIT, "User:bob", "*", OP.READ, PERM.ALLOW)
CLUSTER_ODD = StandardAcl(C, "not-kafka-cluster", LIT, "bob-no-colon", "some.host.name", OP.ALTER, PERM.ALLOW)
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
        self.loader = MetadataLoader(self.log, self.authorizer)
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
        NONE,  # principal, host and the CLUSTER name are not validated by the control manager
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
        StandardAcl(T, "t", LIT, "nocolon", "", OP.READ, PERM.DENY),  # principal and host are not validated
    ]
    results = h.controller.create_acls([*ok, a(C, PRE, OP.ALTER, name="kafka")])
    only = invalid("The only valid name for the CLUSTER resource is kafka-cluster")
    assert [r.error for r in results] == [NONE, NONE, NONE, only]
    assert sorted(map(str, h.stored.values())) == sorted(map(str, ok))


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (a(rtype=ResourceType.ANY), "Invalid resourceType ANY"),
        (a(pattern=PatternType.MATCH), "Invalid patternType MATCH"),
        (a(pattern=PatternType.ANY), "Invalid patternType ANY"),
        (a(op=OP.ANY), "Invalid operation ANY"),
        (a(perm=PERM.ANY), "Invalid permissionType ANY"),
    ],
)
def test_filter_values_are_invalid_in_an_acl(h: Harness, bad: StandardAcl, message: str) -> None:
    assert h.controller.create_acls([bad], api_checks=False) == [CreateResult(invalid(message))]
    assert h.log.high_watermark() == 0


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
