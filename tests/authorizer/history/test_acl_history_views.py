"""`acl_history` (when ids were added and removed) on a memory log, and `AclGroups` against brute force."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kraftacl.authorizer.history.acl_history import AclEvent, acl_history
from kraftacl.authorizer.state.acl_views import AclGroups
from kraftacl.authorizer.state.records import acl_from_record
from kraftacl.metadata_log.backends.memory import MemoryLog
from kraftacl.metadata_log.codec.avro import uuid_to_text
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from tests.authorizer.decision.test_properties import BASE, AclSpec, acl_specs, to_acl

A, B, C = (uuid_to_text(bytes([n] * 16)) for n in (1, 2, 3))
T0 = 1_700_000_000_000


def add(acl_id: str, name: str) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(acl_id, 2, name, 3, "User:alice", "*", 3, 3)


def test_history_of_ids_over_the_log() -> None:
    log = MemoryLog(epoch=4)
    log.append([add(A, "orders"), add(B, "payments")], timestamp_ms=T0)  # offsets 0, 1
    log.append([RemoveAccessControlEntryRecord(A)], timestamp_ms=T0 + 1)  # 2
    log.append([add(C, "orders"), RemoveAccessControlEntryRecord(B)], timestamp_ms=T0 + 2)  # 3, 4
    history = acl_history(log, [A, B, C, "never-seen"])
    assert (history.log_start, history.end) == (0, 5)
    assert history.events[A] == (
        AclEvent(0, 4, T0, acl_from_record(add(A, "orders"))),
        AclEvent(2, 4, T0 + 1, None),
    )
    assert [(e.offset, e.added) for e in history.events[B]] == [(1, True), (4, False)]
    assert [(e.offset, e.added) for e in history.events[C]] == [(3, True)]
    assert history.events["never-seen"] == ()
    before = acl_history(log, [A, B], to_offset=2)  # the state at offset 2: nothing of batch [2] yet
    assert [e.offset for e in before.events[A]] == [0] and before.end == 2


def test_history_starts_where_the_log_starts() -> None:
    log = MemoryLog(log_start_offset=10)
    log.append([add(A, "orders")], timestamp_ms=T0)
    history = acl_history(log, [A])
    assert history.log_start == 10 and [e.offset for e in history.events[A]] == [10]


@given(specs=st.lists(acl_specs, max_size=40))
@BASE
def test_groups_file_every_acl_once(specs: list[AclSpec]) -> None:
    acls = {f"id{n:03d}": acl for n, acl in enumerate(dict.fromkeys(to_acl(s) for s in specs))}
    groups = AclGroups(acls)
    assert groups.id_of == {acl: acl_id for acl_id, acl in acls.items()}
    assert groups.by_principal == {
        p: sorted(i for i, a in acls.items() if a.principal == p) for p in {a.principal for a in acls.values()}
    }
    filed = {
        (rtype, ptype, name): ids
        for rtype, patterns in groups.by_resource.items()
        for ptype, names in patterns.items()
        for name, ids in names.items()
    }
    keys = {(a.resource_type, a.pattern_type, a.resource_name) for a in acls.values()}
    assert filed == {
        k: sorted(i for i, a in acls.items() if (a.resource_type, a.pattern_type, a.resource_name) == k) for k in keys
    }
