"""Replaying the metadata log onto the ACL image: AclsDelta invariants, the ordered Replayer, the loader.

The central property (docs/ARCHITECTURE.md "replay at every batch split gives the same image"): a random
log of add/remove batches, replayed in one go, batch by batch, record-cut by record-cut and with a
publish after every batch, always reaches the same image and the same authorize decisions; and an
image written as a snapshot and loaded back is the same image.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.errors import ImageError
from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.model.acls import (
    AclOperation,
    AclPermissionType,
    AuthorizationResult,
    PatternType,
    ResourceType,
    StandardAcl,
)
from kraftacl.authorizer.state.image import AclsDelta, AclsImage, Provenance
from kraftacl.authorizer.state.loader import AuthorizerPublisher, MetadataLoader
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.metadata_log.backend import AppendResult, LogBackend
from kraftacl.metadata_log.backends.memory import MemoryLog
from kraftacl.metadata_log.codec.avro import uuid_to_text
from kraftacl.metadata_log.errors import ReplayError
from kraftacl.metadata_log.records import (
    AccessControlEntryRecord,
    MetadataRecord,
    RecordBatch,
    RemoveAccessControlEntryRecord,
)
from kraftacl.metadata_log.replayer import Replayer
from kraftacl.snapshots.format import SnapshotHeader
from kraftacl.snapshots.store import SnapshotStore
from tests.authorizer import reference as ref

T, G = ResourceType.TOPIC, ResourceType.GROUP
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
OP, PERM = AclOperation, AclPermissionType


def acl_id(n: int) -> str:
    """A valid Kafka Uuid text, distinct for every n (so the ids survive the snapshot codec)."""
    raw = bytearray(n.to_bytes(16, "big"))
    raw[0] = 0x40 | (n % 0x3F)
    raw[15] |= 0x02
    return uuid_to_text(bytes(raw))


def acl(
    name: str = "foo",
    principal: str = "User:bob",
    op: AclOperation = OP.READ,
    perm: AclPermissionType = PERM.ALLOW,
    pattern: PatternType = LIT,
    rtype: ResourceType = T,
    host: str = "*",
) -> StandardAcl:
    return StandardAcl(rtype, name, pattern, principal, host, op, perm)


def add(n: int, content: StandardAcl) -> AccessControlEntryRecord:
    return record_from_acl(acl_id(n), content)


def remove(n: int) -> RemoveAccessControlEntryRecord:
    return RemoveAccessControlEntryRecord(acl_id(n))


def image_of(acls: dict[str, StandardAcl], last_offset: int = -1) -> AclsImage:
    return AclsImage(OverlayMap(acls), Provenance(last_offset, 0, 0))  # adopts the caller's fresh dict


# ---- AclsDelta ------------------------------------------------------------------------------------------


def test_add_of_an_existing_id_names_offset_and_id() -> None:
    base = image_of({acl_id(1): acl()})
    delta = AclsDelta(base)
    with pytest.raises(ImageError, match=rf"offset 17\b.*{acl_id(1)}"):
        delta.replay(add(1, acl("other")), offset=17)


def test_add_of_an_id_added_earlier_in_the_same_delta_is_refused() -> None:
    delta = AclsDelta(AclsImage.empty())
    delta.replay(add(5, acl("a")), offset=0)
    with pytest.raises(ImageError, match=rf"offset 1\b.*{acl_id(5)}.*already exists"):
        delta.replay(add(5, acl("b")), offset=1)


def test_remove_of_an_unknown_id_names_offset_and_id() -> None:
    delta = AclsDelta(image_of({acl_id(1): acl()}))
    with pytest.raises(ImageError, match=rf"offset 42\b.*{acl_id(2)}.*does not exist"):
        delta.replay(remove(2), offset=42)


def test_remove_twice_is_refused_the_second_time() -> None:
    delta = AclsDelta(image_of({acl_id(1): acl()}))
    delta.replay(remove(1), offset=3)
    with pytest.raises(ImageError, match=rf"offset 4\b.*{acl_id(1)}"):
        delta.replay(remove(1), offset=4)


def test_add_then_remove_cancels_out() -> None:
    base = image_of({acl_id(1): acl("keep")})
    delta = AclsDelta(base)
    delta.replay(add(2, acl("tmp")), offset=5)
    delta.replay(remove(2), offset=6)
    assert delta.is_empty()
    assert delta.net_changes() == ([], [])
    after = delta.apply(Provenance(6, 1, 9))
    assert dict(after.acls) == {acl_id(1): acl("keep")}
    assert after.provenance == Provenance(6, 1, 9)


def test_remove_then_re_add_of_a_base_id_replaces_the_acl() -> None:
    base = image_of({acl_id(1): acl("old")})
    delta = AclsDelta(base)
    delta.replay(remove(1), offset=0)
    delta.replay(add(1, acl("new")), offset=1)
    removed, added = delta.net_changes()
    assert removed == [acl_id(1)]
    assert added == [(acl_id(1), acl("new"))]
    after = delta.apply(Provenance(1, 0, 0))
    assert dict(after.acls) == {acl_id(1): acl("new")}
    assert dict(base.acls) == {acl_id(1): acl("old")}, "the base image is never changed"


def test_add_remove_add_of_a_new_id_keeps_the_last() -> None:
    delta = AclsDelta(AclsImage.empty())
    delta.replay(add(3, acl("a")), offset=0)
    delta.replay(remove(3), offset=1)
    delta.replay(add(3, acl("b")), offset=2)
    assert delta.net_changes() == ([], [(acl_id(3), acl("b"))])
    assert dict(delta.apply(Provenance(2)).acls) == {acl_id(3): acl("b")}


def test_an_image_that_adopted_the_delta_never_changes_with_it() -> None:
    """From an empty base, `apply` hands the delta's dict to the image; the delta copies it before changing."""
    delta = AclsDelta(AclsImage.empty())
    for n in range(1, 301):  # enough to take the adopting path (a change bigger than a quarter of 1024)
        delta.replay(add(n, acl(f"t{n}")), offset=n)
    first = delta.apply(Provenance(300))
    frozen = dict(first.acls)
    assert len(frozen) == 300
    delta.replay(remove(1), offset=301)
    delta.replay(add(301, acl("t301")), offset=302)
    second = delta.apply(Provenance(302))
    assert dict(first.acls) == frozen, "the first image changed with the delta"
    assert set(second.acls) == set(frozen) - {acl_id(1)} | {acl_id(301)}
    delta.replay_snapshot(record_from_acl(acl_id(400), acl("s")), 0)
    delta.finish_snapshot()
    assert dict(second.acls) == {**{k: v for k, v in frozen.items() if k != acl_id(1)}, acl_id(301): acl("t301")}
    assert dict(first.acls) == frozen


def test_finish_snapshot_removes_everything_not_replayed() -> None:
    base = image_of({acl_id(1): acl("a"), acl_id(2): acl("b")})
    delta = AclsDelta(base)
    delta.replay(add(3, acl("c")), offset=0)
    delta.finish_snapshot()
    assert dict(delta.apply(Provenance(9)).acls) == {acl_id(3): acl("c")}


def test_provenance_next_offset() -> None:
    assert Provenance().next_offset == 0
    assert Provenance(41, 2, 3).next_offset == 42


# ---- Replayer ------------------------------------------------------------------------------------------


def batch(base: int, count: int, epoch: int = 1) -> RecordBatch:
    records = tuple(add(base + i, acl(f"t{base + i}")) for i in range(count))
    return RecordBatch(base, epoch, 1000 + base, records)


class FakeLog(LogBackend):
    """A backend yielding the batches it was given, from the first one that reaches `from_offset`.

    With `raw=True` it yields all of them whatever `read` asks for (a misbehaving backend).
    """

    def __init__(self, batches: Sequence[RecordBatch], hwm: int, log_start: int = 0, raw: bool = False) -> None:
        self.batches = list(batches)
        self.hwm = hwm
        self.start = log_start
        self.raw = raw
        self.reads: list[int] = []

    def append(self, records: Sequence[MetadataRecord], *, timestamp_ms: int | None = None) -> AppendResult:
        raise NotImplementedError

    def read(self, from_offset: int = 0) -> Iterator[RecordBatch]:
        self.reads.append(from_offset)
        if self.raw:
            return iter(self.batches)
        return iter([b for b in self.batches if b.next_offset > from_offset])

    def high_watermark(self) -> int:
        return self.hwm

    def log_start_offset(self) -> int:
        return self.start

    def close(self) -> None:
        pass


def spans(batches: Sequence[RecordBatch]) -> list[tuple[int, int]]:
    return [(b.base_offset, b.last_offset) for b in batches]


WORKED = [batch(0, 3), batch(3, 1), batch(4, 4)]  # [0..2] [3..3] [4..7], HWM 8


def test_replayer_worked_example() -> None:
    replayer = Replayer(FakeLog(WORKED, 8))
    assert spans(list(replayer.batches(0))) == [(0, 2), (3, 3), (4, 7)]


def test_replayer_cuts_the_first_batch_at_from_offset() -> None:
    got = list(Replayer(FakeLog(WORKED, 8)).batches(1))
    assert spans(got) == [(1, 2), (3, 3), (4, 7)]
    assert got[0].records == WORKED[0].records[1:]
    assert (got[0].epoch, got[0].timestamp_ms) == (WORKED[0].epoch, WORKED[0].timestamp_ms)


def test_replayer_cuts_the_last_batch_at_to_offset() -> None:
    """`to_offset` is exclusive, as `batches()` documents and the loader uses it (`catch_up(hwm)`).

    (The class docstring's worked example says `batches(0, to=5) -> ... [4..5]`, which reads it as
    inclusive; the code and the method docstring agree on exclusive.)
    """
    got = list(Replayer(FakeLog(WORKED, 8)).batches(0, to_offset=6))
    assert spans(got) == [(0, 2), (3, 3), (4, 5)]
    assert got[-1].records == WORKED[2].records[:2]
    assert spans(list(Replayer(FakeLog(WORKED, 8)).batches(0, to_offset=5))) == [(0, 2), (3, 3), (4, 4)]
    assert spans(list(Replayer(FakeLog(WORKED, 8)).batches(5, to_offset=7))) == [(5, 6)]
    assert spans(list(Replayer(FakeLog(WORKED, 8)).batches(0, to_offset=3))) == [(0, 2)]


@pytest.mark.parametrize(("start", "to"), [(8, None), (3, 3), (5, 2), (0, 0)])
def test_replayer_empty_range_does_not_read(start: int, to: int | None) -> None:
    log = FakeLog(WORKED, 8)
    assert list(Replayer(log).batches(start, to)) == []
    assert log.reads == []


def test_replayer_gap() -> None:
    with pytest.raises(ReplayError, match=r"gap: expected offset 3, got batch 4\.\.7") as info:
        list(Replayer(FakeLog([batch(0, 3), batch(4, 4)], 8)).batches(0))
    assert info.value.offset == 3


def test_replayer_gap_before_the_first_batch() -> None:
    with pytest.raises(ReplayError, match="gap: expected offset 2") as info:
        list(Replayer(FakeLog([batch(3, 1), batch(4, 4)], 8)).batches(2))
    assert info.value.offset == 2


def test_replayer_duplicate_batch() -> None:
    log = FakeLog([batch(0, 3), batch(0, 3), batch(3, 1)], 4, raw=True)
    with pytest.raises(ReplayError, match=r"duplicate: batch 0\.\.2") as info:
        list(Replayer(log).batches(0))
    assert info.value.offset == 0


def test_replayer_batch_entirely_before_from_is_a_duplicate() -> None:
    with pytest.raises(ReplayError, match="duplicate"):
        list(Replayer(FakeLog([batch(0, 3), batch(3, 1)], 4, raw=True)).batches(3))


def test_replayer_overlapping_batch_is_a_duplicate() -> None:
    overlapping = RecordBatch(2, 1, 0, (add(100, acl("x")), add(101, acl("y")), add(102, acl("z"))))
    log = FakeLog([batch(0, 3), overlapping], 5, raw=True)
    with pytest.raises(ReplayError, match="duplicate"):
        list(Replayer(log).batches(0))


def test_replayer_never_yields_at_or_above_the_high_watermark() -> None:
    log = FakeLog(WORKED, 4)  # the backend yields more than it has committed
    got = list(Replayer(log).batches(0))
    assert spans(got) == [(0, 2), (3, 3)]
    assert all(b.next_offset <= 4 for b in got)
    straddling = FakeLog([batch(0, 3), batch(3, 3)], 4)
    got = list(Replayer(straddling).batches(0))
    assert max(b.last_offset for b in got) == 3
    # to_offset above the high-water mark is capped at the high-water mark.
    assert spans(list(Replayer(FakeLog(WORKED, 4)).batches(0, to_offset=100))) == [(0, 2), (3, 3)]


def test_replayer_log_ending_below_its_high_watermark() -> None:
    with pytest.raises(ReplayError, match="ended at offset 4 below its high-water mark 8") as info:
        list(Replayer(FakeLog([batch(0, 3), batch(3, 1)], 8)).batches(0))
    assert info.value.offset == 4


def test_replayer_on_a_real_memory_log() -> None:
    log = MemoryLog()
    for size in (3, 1, 4):
        log.append([add(log.high_watermark() + i, acl(f"n{log.high_watermark() + i}")) for i in range(size)])
    assert spans(list(Replayer(log).batches(0))) == [(0, 2), (3, 3), (4, 7)]
    assert spans(list(Replayer(log).batches(6))) == [(6, 7)]
    assert spans(list(Replayer(log).batches(2, 5))) == [(2, 2), (3, 3), (4, 4)]


# ---- the loader: errors leave the published state untouched, snapshots --------------------------------


def test_catch_up_failure_publishes_nothing() -> None:
    log = MemoryLog()
    log.append([add(1, acl("a"))])
    auth = StandardAuthorizer()
    loader = MetadataLoader(log, [AuthorizerPublisher(auth)])
    assert loader.catch_up() == 1
    before_image, before_index = loader.image, auth.index
    log.append([add(2, acl("b")), remove(9)])  # offset 2 removes an unknown id
    with pytest.raises(ImageError, match=rf"offset 2\b.*{acl_id(9)}"):
        loader.catch_up()
    assert loader.image is before_image
    assert auth.index is before_index
    assert loader.next_offset == 1


def test_catch_up_returns_records_applied_and_stops_at_to_offset() -> None:
    log = MemoryLog()
    log.append([add(i, acl(f"a{i}")) for i in range(3)])
    log.append([add(3, acl("b")), remove(0)])
    loader = MetadataLoader(log)
    assert loader.catch_up(3) == 3
    assert loader.next_offset == 3
    assert loader.catch_up(3) == 0
    assert loader.catch_up() == 2
    assert set(loader.image.acls) == {acl_id(1), acl_id(2), acl_id(3)}
    assert loader.image.provenance.last_offset == 4


def test_load_snapshot_is_all_or_nothing() -> None:
    auth = StandardAuthorizer()
    loader = MetadataLoader(MemoryLog(), [AuthorizerPublisher(auth)])
    loader.load_snapshot([add(1, acl("a"))], Provenance(4, 1, 1))
    image, index = loader.image, auth.index
    bad = [add(2, acl("b")), add(3, acl("c")), add(2, acl("d"))]
    with pytest.raises(ImageError):
        loader.load_snapshot(bad, Provenance(9, 1, 1))
    assert loader.image is image
    assert auth.index is index


def test_load_snapshot_with_other_ids_replaces_everything() -> None:
    auth = StandardAuthorizer()
    loader = MetadataLoader(MemoryLog(), [AuthorizerPublisher(auth)])
    loader.load_snapshot([add(1, acl("a")), add(2, acl("b"))], Provenance(4, 1, 1))
    loader.load_snapshot([add(3, acl("c"))], Provenance(7, 1, 1))
    assert dict(loader.image.acls) == {acl_id(3): acl("c")}
    assert loader.image.provenance == Provenance(7, 1, 1)
    assert dict(auth.index.by_id) == {acl_id(3): acl("c")}


def test_load_snapshot_over_an_image_sharing_ids() -> None:
    log = MemoryLog()
    log.append([add(1, acl("a")), add(2, acl("b"))])
    log.append([remove(1)])
    loader = MetadataLoader(log, [AuthorizerPublisher(StandardAuthorizer())])
    loader.catch_up()
    # A snapshot of the state at offset 2 (ids 1 and 2), loaded by a node that is already further on.
    loader.load_snapshot([add(1, acl("a")), add(2, acl("b"))], Provenance(1, 0, 0))
    assert dict(loader.image.acls) == {acl_id(1): acl("a"), acl_id(2): acl("b")}


# ---- replay at every batch split gives the same image ----------------------------------------------------

CONTENTS = [
    acl(name, principal, op, perm, pattern, rtype, host)
    for name, pattern in (("foo", LIT), ("fo", PRE), ("foobar", LIT), ("*", LIT), ("f", PRE), ("bar", LIT))
    for principal, op, perm, rtype, host in (
        ("User:bob", OP.READ, PERM.ALLOW, T, "*"),
        ("User:bob", OP.READ, PERM.DENY, T, "*"),
        ("User:*", OP.ALL, PERM.ALLOW, T, "*"),
        ("User:bob", OP.WRITE, PERM.DENY, T, "10.0.0.1"),
        ("User:alice", OP.DESCRIBE, PERM.ALLOW, G, "*"),
        ("User:alice", OP.ALL, PERM.DENY, G, "*"),
    )
]
PROBE_ACTIONS = [
    Action(op, rtype, name)
    for rtype in (T, G)
    for name in ("foo", "fo", "foobar", "fox", "bar", "baz", "*")
    for op in (OP.READ, OP.WRITE, OP.DESCRIBE, OP.ALTER)
]
PROBE_CONTEXTS = [RequestContext("User:bob", "10.0.0.1"), RequestContext("User:alice", "10.0.0.2")]
CONFIG = AuthorizerConfig(allow_everyone_if_no_acl_found=True)  # so "no candidate" differs from "no match"


@dataclass
class RandomLog:
    """Batches of records plus the expected state after every record."""

    batches: list[list[MetadataRecord]]
    states: list[dict[str, StandardAcl]]  # states[k] = the state after the first k records

    @property
    def boundaries(self) -> list[int]:
        return list(itertools.accumulate(len(b) for b in self.batches))

    def describe(self) -> str:
        lines = []
        for n, records in enumerate(self.batches):
            parts = [
                f"+{r.id[:3]}{r.id[-3:]} {r.resource_name}/{r.principal}/{r.permission_type}"
                if isinstance(r, AccessControlEntryRecord)
                else f"-{r.id[:3]}{r.id[-3:]}"
                for r in records
            ]
            lines.append(f"batch {n}: " + ", ".join(parts))
        return "\n".join(lines)


@st.composite
def random_logs(draw: st.DrawFn) -> RandomLog:
    live: dict[str, StandardAcl] = {}
    dead: list[str] = []  # removed ids, which may be re-added (the delta's remove-then-re-add path)
    counter = itertools.count()
    batches: list[list[MetadataRecord]] = []
    states: list[dict[str, StandardAcl]] = [{}]
    for _ in range(draw(st.integers(1, 10))):
        records: list[MetadataRecord] = []
        for _ in range(draw(st.integers(1, 6))):
            free = [c for c in CONTENTS if c not in live.values()]
            choices = ["add"] * bool(free) + ["remove"] * bool(live) + ["readd"] * bool(dead and free)
            kind = draw(st.sampled_from(choices))
            if kind == "remove":
                victim = draw(st.sampled_from(sorted(live)))
                del live[victim]
                dead.append(victim)
                records.append(RemoveAccessControlEntryRecord(victim))
            else:
                new_id = dead.pop(draw(st.integers(0, len(dead) - 1))) if kind == "readd" else acl_id(next(counter))
                content = draw(st.sampled_from(free))
                live[new_id] = content
                records.append(record_from_acl(new_id, content))
            states.append(dict(live))
        batches.append(records)
    return RandomLog(batches, states)


def decisions(auth: StandardAuthorizer) -> list[list[AuthorizationResult]]:
    return [auth.authorize(ctx, PROBE_ACTIONS) for ctx in PROBE_CONTEXTS]


def fresh_decisions(state: dict[str, StandardAcl]) -> list[list[AuthorizationResult]]:
    """Decisions of an authorizer whose index was built from scratch (not updated incrementally)."""
    auth = StandardAuthorizer(CONFIG)
    auth.load_snapshot(state)
    auth.complete_initial_load()
    return decisions(auth)


def reference_decisions(state: dict[str, StandardAcl]) -> list[list[str]]:
    return [
        [
            ref.ref_authorize(
                state.values(),
                (),
                True,
                ctx.principal,
                ctx.host,
                a.operation,
                a.resource_type,
                a.resource_name,
            )
            for a in PROBE_ACTIONS
        ]
        for ctx in PROBE_CONTEXTS
    ]


def authorizer_of(loader: MetadataLoader) -> StandardAuthorizer:
    """The authorizer the loader publishes to (one publisher among others)."""
    (found,) = [p.authorizer for p in loader.publishers if isinstance(p, AuthorizerPublisher)]
    return found


def new_loader(log: MemoryLog, publish_every: int = 50_000) -> MetadataLoader:
    auth = StandardAuthorizer(CONFIG)
    auth.complete_initial_load()
    return MetadataLoader(log, [AuthorizerPublisher(auth)], publish_every_records=publish_every)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_log=random_logs(), cuts=st.lists(st.integers(0, 80), max_size=6))
def test_replay_at_every_batch_split_gives_the_same_image(random_log: RandomLog, cuts: list[int]) -> None:
    note(random_log.describe())
    log = MemoryLog(epoch=3)
    for n, records in enumerate(random_log.batches):
        log.append(records, timestamp_ms=10_000 + n)
    hwm = log.high_watermark()
    final = random_log.states[-1]
    assert hwm == len(random_log.states) - 1

    one_go = new_loader(log)
    assert one_go.catch_up() == hwm

    by_batch = new_loader(log)
    for boundary in random_log.boundaries:
        by_batch.catch_up(to_offset=boundary)
        assert dict(by_batch.image.acls) == random_log.states[boundary]
        assert by_batch.image.provenance.last_offset == boundary - 1
        assert decisions(authorizer_of(by_batch)) == fresh_decisions(random_log.states[boundary])

    every_record = new_loader(log, publish_every=1)
    every_record.catch_up()

    # Cuts anywhere, also inside a batch (the replayer cuts the batch at both ends).
    cut_loader = new_loader(log)
    for cut in sorted(c % (hwm + 1) for c in cuts):
        cut_loader.catch_up(to_offset=cut)
        assert dict(cut_loader.image.acls) == random_log.states[max(cut, cut_loader.next_offset)]
    cut_loader.catch_up()

    expected_decisions = fresh_decisions(final)
    assert [r.name for r in expected_decisions[0]] == reference_decisions(final)[0]
    last_batch = log_batches(log)[-1]
    for loader in (one_go, by_batch, every_record, cut_loader):
        assert dict(loader.image.acls) == final
        assert loader.image.provenance == Provenance(hwm - 1, 3, last_batch.timestamp_ms)
        assert dict(loader.index.by_id) == final
        assert authorizer_of(loader).index is loader.index
        assert decisions(authorizer_of(loader)) == expected_decisions

    # image -> snapshot file -> load_snapshot -> the identical image.
    with tempfile.TemporaryDirectory() as tmp:
        store = SnapshotStore(Path(tmp))
        p = one_go.image.provenance
        store.write(SnapshotHeader(p.next_offset, p.epoch, p.timestamp_ms), one_go.image.records())
        found = store.latest_valid()
        assert found is not None
        reader, count = found
        assert count == len(final)
        restored = new_loader(log)
        h = reader.header
        restored.load_snapshot(reader.records(), Provenance(h.end_offset - 1, h.epoch, h.timestamp_ms))
        assert dict(restored.image.acls) == final
        assert restored.image.provenance == one_go.image.provenance
        assert decisions(authorizer_of(restored)) == expected_decisions
        assert restored.catch_up() == 0


def log_batches(log: MemoryLog) -> list[RecordBatch]:
    return list(log.read(log.log_start_offset()))


def test_snapshot_round_trip_of_an_empty_image(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path)
    store.write(SnapshotHeader(0, 0, 0), AclsImage.empty().records())
    found = store.latest_valid()
    assert found is not None and found[1] == 0
    loader = MetadataLoader(MemoryLog())
    loader.load_snapshot(found[0].records(), Provenance(-1, 0, 0))
    assert len(loader.image) == 0
