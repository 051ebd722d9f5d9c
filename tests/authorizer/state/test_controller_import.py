"""AclController.import_acls: one batch whatever its size, every ACL validated as CreateAcls validates it
(nothing written when any is invalid), stored ACLs and repeats skipped and counted, ids fresh and unique."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

import pytest

from kraftacl.authorizer.history.metadata_source import read_state
from kraftacl.authorizer.model.acls import AclOperation, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.model.filters import AclBindingFilter, ResourcePatternFilter
from kraftacl.authorizer.state import loader as loader_module
from kraftacl.authorizer.state.controller import (
    MAX_RECORDS_PER_USER_OP,
    InvalidImportError,
    invalid_acls,
    validate_new_acl,
)
from kraftacl.authorizer.state.node import AclNode
from kraftacl.authorizer.state.records import batch_rows, records_from_acls
from kraftacl.metadata_log.backend import AppendResult
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.snapshots.policy import SnapshotPolicy
from tests.authorizer.state.test_controller import C1_REQUEST, Harness, a, assert_kafka_uuid, numbered_acls


def test_an_import_beyond_the_user_limit_is_one_batch() -> None:
    h = Harness()
    acls = numbered_acls(MAX_RECORDS_PER_USER_OP + 500)
    result = h.controller.import_acls(acls)
    [batch] = h.batches()
    assert len(batch.records) == len(result.added) == len(acls) and result.base_offset == 0
    assert sorted(h.stored.values()) == sorted(acls)
    assert {i for i, _ in result.added} == set(h.stored)
    for acl_id, _ in result.added[:50]:
        assert_kafka_uuid(acl_id)


def test_stored_acls_and_repeats_are_skipped_and_counted() -> None:
    h = Harness()
    h.controller.create_acls(numbered_acls(3))
    acls = numbered_acls(5) + numbered_acls(2)  # 3 stored, 2 new, 2 repeated
    result = h.controller.import_acls(acls)
    assert (len(result.added), result.present, result.repeated, result.base_offset) == (2, 3, 2, 3)
    dry = h.controller.import_acls(numbered_acls(7), dry_run=True)
    assert ([acl for _, acl in dry.added], dry.present, dry.base_offset) == (numbered_acls(2, start=5), 5, None)
    assert len(h.batches()) == 2  # the dry run wrote nothing
    nothing = h.controller.import_acls(numbered_acls(5))
    assert (nothing.added, nothing.present, nothing.base_offset) == ([], 5, None) and len(h.batches()) == 2


def test_any_invalid_acl_fails_the_import_and_each_is_listed() -> None:
    h = Harness()
    bad_name = StandardAcl(
        ResourceType.CLUSTER, "x", PatternType.LITERAL, "User:a", "*", AclOperation.ALTER, a().permission_type
    )
    acls = [a(), bad_name, a(name=""), a(op=AclOperation.ANY)]
    with pytest.raises(InvalidImportError) as caught:
        h.controller.import_acls(acls)
    assert [position for position, _, _ in caught.value.invalid] == [1, 2, 3]
    assert "3 of the ACLs to import are invalid" in str(caught.value) and "entry 1" in str(caught.value)
    assert h.batches() == []


def test_invalid_acls_agrees_with_validate_new_acl_on_every_case() -> None:
    """The one-pass check caches by code combination; it must answer as the per-ACL validator does."""
    acls = C1_REQUEST * 2 + [a(), a(name=""), a(rtype=ResourceType.CLUSTER, name="kafka-cluster")]
    expected = [(n, acl) for n, acl in enumerate(acls) if validate_new_acl(acl, api_checks=True) is not None]
    assert [(n, acl) for n, acl, _ in invalid_acls(acls)] == expected


def test_injected_ids_that_collide_are_drawn_again() -> None:
    texts = itertools.cycle(
        ["AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw"]
    )
    h = Harness(new_id=lambda: next(texts))
    result = h.controller.import_acls(numbered_acls(3))
    assert sorted(i for i, _ in result.added) == [
        "AAAAAAAAAAAAAAAAAAAAAQ",
        "AAAAAAAAAAAAAAAAAAAAAg",
        "AAAAAAAAAAAAAAAAAAAAAw",
    ]


def test_the_importer_publishes_exactly_what_a_reader_of_the_log_replays(tmp_path: Path) -> None:
    """The controller applies its own batch from the ACLs it wrote (no read-back): the same ids, ACLs,
    index and provenance as a fresh replay of the file log."""
    node = AclNode(FileLog(tmp_path / "log"))
    node.start()
    try:
        node.controller.create_acls(numbered_acls(3))
        node.controller.delete_acls([AclBindingFilter(ResourcePatternFilter(name="topic-1"))])
        acls = [*numbered_acls(400), a(op=AclOperation.WRITE, name="é-ü-😀"), numbered_acls(1)[0]]
        result = node.controller.import_acls(acls)
        assert (len(result.added), result.present, result.repeated) == (399, 2, 1)
        fresh = read_state(tmp_path / "log").image
        assert dict(node.image.acls) == dict(fresh.acls) and len(fresh.acls) == 401
        assert node.image.provenance == fresh.provenance
        assert dict(node.authorizer.index.by_id) == dict(fresh.acls)
        assert node.loader.catch_up() == 0  # nothing left to read back
    finally:
        node.close()


def test_a_batch_that_does_not_follow_the_applied_state_is_read_from_the_log() -> None:
    h = Harness()
    h.log.append(records_from_acls(["AAAAAAAAAAAAAAAAAAAAAQ"], numbered_acls(1, start=7)))  # another writer
    written = numbered_acls(2)
    appended = h.log.append(records_from_acls(["AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw"], written))
    h.loader.publish_appended(appended, 0, ["AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw"], written)
    assert sorted(h.stored.values()) == sorted(numbered_acls(1, start=7) + written)
    assert h.loader.next_offset == 3


def test_a_catch_up_racing_the_import_waits_and_reads_nothing_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tailer woken by the import's commit (the Kafka topic's long poll) catches up while the importer is still
    between its append and its own apply: it waits for that apply and then has nothing to read back, so the import
    is applied once, from the importer's rows, not decoded from the log first."""
    h = Harness()
    raced: list[int] = []
    decoded: list[int] = []
    append = h.log.append

    def append_then_race(*args: Any, **kwargs: Any) -> AppendResult:
        result = append(*args, **kwargs)
        racer = threading.Thread(target=lambda: raced.append(h.loader.catch_up()))
        racer.start()
        racer.join(0.3)
        assert racer.is_alive(), "the catch-up waits for the importer's own apply"
        threads.append(racer)
        return result

    threads: list[threading.Thread] = []
    monkeypatch.setattr(h.log, "append", append_then_race)

    def counted(records: Any) -> Any:
        decoded.append(len(records))
        return batch_rows(records)

    monkeypatch.setattr(loader_module, "batch_rows", counted)
    result = h.controller.import_acls(numbered_acls(1_000))
    threads[0].join(10)
    assert raced == [0] and decoded == [], "nothing was read back from the log"
    assert len(h.stored) == len(result.added) == 1_000 and h.loader.next_offset == 1_000


def test_a_deferred_policy_snapshot_waits_for_take_deferred_snapshot(tmp_path: Path) -> None:
    node = AclNode(FileLog(tmp_path / "log"), snapshot_dir=tmp_path / "log", policy=SnapshotPolicy(max_records=10))
    node.start()
    try:
        node.defer_snapshots = True
        node.controller.import_acls(numbered_acls(25))
        assert list((tmp_path / "log").glob("*.checkpoint")) == []
        node.take_deferred_snapshot()
        [taken] = (tmp_path / "log").glob("*.checkpoint")
        assert taken.name.startswith(f"{25:020d}-")
        node.take_deferred_snapshot()  # taken once
        assert list((tmp_path / "log").glob("*.checkpoint")) == [taken]
        assert dict(read_state(tmp_path / "log").image.acls) == dict(node.image.acls)
        node.defer_snapshots = False
        node.controller.import_acls(numbered_acls(12, start=100))
        assert len(list((tmp_path / "log").glob("*.checkpoint"))) == 2  # not deferred: taken by the publish
    finally:
        node.close()
