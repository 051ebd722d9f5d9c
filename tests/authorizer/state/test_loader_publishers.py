"""The loader publishes each update (image + index, the image before, the net changes) to a list of publishers in
order, the authorizer's index swap being one of them (docs/ARCHITECTURE.md "Image / delta"): each sees the same
published state, and the end of the initial load."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.errors import AuthorizerNotReadyError
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.loader import AuthorizerPublisher, MetadataLoader, OnPublish, Update
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.metadata_log.backends.memory import MemoryLog

READ = StandardAcl(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW
)


@dataclass
class Recorder:
    """A publisher that writes down what it is told, into a shared journal (to check the order)."""

    name: str
    journal: list[tuple[str, str, int]]
    updates: list[Update] = field(default_factory=list)

    def publish(self, update: Update) -> None:
        self.journal.append((self.name, "publish", update.image.provenance.last_offset))
        self.updates.append(update)

    def complete_initial_load(self) -> None:
        self.journal.append((self.name, "loaded", -1))


def test_every_publisher_sees_each_publish_in_list_order() -> None:
    log = MemoryLog()
    log.append([record_from_acl("AAAAAAAAAAAAAAAAAAAAAQ", READ)])
    journal: list[tuple[str, str, int]] = []
    first, last = Recorder("first", journal), Recorder("last", journal)
    auth = StandardAuthorizer()
    seen: list[tuple[int, bool]] = []
    loader = MetadataLoader(
        log,
        [
            first,
            AuthorizerPublisher(auth),
            OnPublish(lambda u: seen.append((u.image.provenance.last_offset, auth.index is u.index))),
            last,
        ],
    )
    ctx, action = RequestContext("User:alice", "10.0.0.1"), Action(AclOperation.READ, ResourceType.TOPIC, "orders")
    loader.catch_up()
    assert journal == [("first", "publish", 0), ("last", "publish", 0)]
    assert seen == [(0, True)]  # the authorizer, before it in the list, already decides on this index
    assert first.updates == last.updates and [u.index for u in first.updates] == [loader.index]
    (update,) = first.updates
    assert update.before.provenance.last_offset == -1 and update.image is loader.image
    assert update.removed is None and update.added is None  # from nothing: the whole state, built in bulk
    with pytest.raises(AuthorizerNotReadyError):  # published, but the initial load is not complete
        auth.authorize(ctx, [action])
    loader.complete_initial_load()
    assert journal[2:] == [("first", "loaded", -1), ("last", "loaded", -1)]
    assert [r.name for r in auth.authorize(ctx, [action])] == ["ALLOWED"]


def test_a_loader_without_an_authorizer_still_publishes() -> None:
    log = MemoryLog()
    log.append([record_from_acl("AAAAAAAAAAAAAAAAAAAAAQ", READ)])
    journal: list[tuple[str, str, int]] = []
    loader = MetadataLoader(log, [Recorder("only", journal)])
    assert loader.initial_load() == 1
    assert journal == [("only", "publish", 0), ("only", "loaded", -1)] and len(loader.index) == 1


def test_a_failing_publisher_does_not_keep_the_update_from_those_after_it() -> None:
    """The authorizer decides on the new state; a publisher failing after it (out of memory in serve's id map)
    must not keep the change feed, last in the list, from reporting it: the failure is raised once all are told."""
    log = MemoryLog()
    log.append([record_from_acl("AAAAAAAAAAAAAAAAAAAAAQ", READ)])
    journal: list[tuple[str, str, int]] = []
    auth = StandardAuthorizer()

    def broken(update: Update) -> None:
        raise MemoryError("the id map")

    last = Recorder("last", journal)
    loader = MetadataLoader(log, [AuthorizerPublisher(auth), OnPublish(broken), last])
    with pytest.raises(MemoryError, match="the id map"):
        loader.catch_up()
    assert journal == [("last", "publish", 0)] and auth.index is loader.index
