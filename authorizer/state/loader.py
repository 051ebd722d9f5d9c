"""The metadata loader: replays the log onto the ACL image and publishes each `Update` (image + index, the image
before and the net changes) at batch boundaries to its publishers, in list order: the authorizer's index swap
(`AuthorizerPublisher`) is one publisher among others (the node's snapshot policy, serve's decision-log ids, the
shell's view), as Kafka's MetadataLoader publishes to its AclPublisher.

One thread drives a loader (start-up, then tailing); readers only see published, immutable state.
KIP-801 initialization: `initial_load` replays up to the high-water mark read at start, then tells every
publisher the initial load is complete (the authorizer starts answering), even when the log is empty.

Every catch-up first checks that the log still holds what was applied (the batch below
`next_offset`, by end offset, epoch and timestamp): a log that is now shorter or holds another
batch there raises DivergenceError and nothing after it is applied.

From a batch of BULK_RECORDS or more on (a 200k-ACL import another serve wrote: one batch on the embedded log,
about twenty of one transaction on the Kafka topic), a catch-up runs with the garbage collector paused, and what it
made is then frozen out of later collections (`gc_pause`), as the import's writer does: the collections its million
new objects would trigger on this thread (up to hundreds of ms each) would hold the GIL that a follower's event loop
answering brokers needs.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from kraftacl.authorizer.decision.standard import StandardAuthorizer
from kraftacl.authorizer.index.acl_index import AclIndex
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.gc_pause import paused_gc
from kraftacl.authorizer.state.graveyard import bury
from kraftacl.authorizer.state.image import AclsDelta, AclsImage, Provenance, image_from_columns, image_from_snapshot
from kraftacl.authorizer.state.memory import release_free_memory
from kraftacl.authorizer.state.records import batch_rows
from kraftacl.metadata_log.backend import AppendResult, LogBackend
from kraftacl.metadata_log.records import AccessControlEntryRecord, RecordBatch
from kraftacl.metadata_log.replayer import AppliedBatch, Replayer
from kraftacl.snapshots.columns import AclColumns

log = logging.getLogger(__name__)
# A bulk rebuild of at least this many ACLs while serving is followed by a heap trim (milliseconds
# against the rebuild's hundreds; below it the trim would cost more than the rebuild).
TRIM_AFTER_ACLS = 10_000
# A catch-up publishes after this many records: a follower far behind shows progress, and its delta stays bounded.
# Fewer, larger publishes cost less: a delta of a quarter of the state or more is indexed in bulk (`_publish`),
# which is about ten times cheaper per ACL than indexing it change by change. A 200k-ACL import written to the Kafka
# topic as twenty batches of one transaction (each one Kafka message) is thus applied in one publish, as it is
# from the embedded log's one batch.
PUBLISH_EVERY_RECORDS = 500_000
BULK_RECORDS = 10_000  # from a batch this large on, a catch-up runs with the collector paused, then frozen


@dataclass(frozen=True, slots=True)
class Update:
    """One publish: the new image and its index, the image before, and the net changes (`removed` ids and `added`
    (id, ACL) pairs; None for both when the whole state was replaced, as by a snapshot)."""

    image: AclsImage
    index: AclIndex
    before: AclsImage
    removed: list[str] | None = None
    added: list[tuple[str, StandardAcl]] | None = None


class Publisher(Protocol):
    """What the loader publishes to: every update (called on the loader's thread, in list order, the image and
    index already current in the loader), and once, the end of the initial load."""

    def publish(self, update: Update) -> None: ...

    def complete_initial_load(self) -> None: ...


@dataclass(frozen=True)
class AuthorizerPublisher:
    """Swaps the authorizer's index at every publish; its initial load completes with the loader's (KIP-801)."""

    authorizer: StandardAuthorizer

    def publish(self, update: Update) -> None:
        self.authorizer.publish(update.index, update.image.provenance.last_offset)

    def complete_initial_load(self) -> None:
        self.authorizer.complete_initial_load()


@dataclass(frozen=True)
class OnPublish:
    """A publisher that only wants each update (`callback(update)`), not the end of the initial load."""

    callback: Callable[[Update], None]

    def publish(self, update: Update) -> None:
        self.callback(update)

    def complete_initial_load(self) -> None:
        """Nothing to do."""


class MetadataLoader:
    """Owns the current AclsImage; every publish is one batch boundary of the log."""

    def __init__(
        self,
        backend: LogBackend,
        publishers: Iterable[Publisher] = (),
        publish_every_records: int = PUBLISH_EVERY_RECORDS,
    ) -> None:
        self.backend = backend
        self.publishers = list(publishers)
        self.publish_every_records = publish_every_records
        self.replayer = Replayer(backend)
        self.image = AclsImage.empty()
        self.index = AclIndex.empty()
        self.loaded = False  # the initial load completed: publishers are serving
        self.applied_bytes = 0  # log bytes of every batch applied so far (RecordBatch.size_bytes)
        self._lock = threading.RLock()  # re-entrant: `appending` holds it around `publish_appended`'s own hold
        self._from_log = False  # the provenance came from a whole log batch (else a snapshot, or nothing)
        self._cut = False  # the last batch applied was cut at a `to_offset` inside it: nothing to check against

    @property
    def next_offset(self) -> int:
        """The first log offset not yet applied."""
        return self.image.provenance.next_offset

    def load_snapshot(
        self,
        records: Iterable[AccessControlEntryRecord],
        provenance: Provenance,
        source: str = "snapshot",
        columns: Iterable[AclColumns] | None = None,
    ) -> None:
        """Replace the whole state with a snapshot's records, all or nothing, and publish once.

        `columns`, when given, is the same snapshot as columnar chunks: the fast path of a cold start.
        """
        with self._lock:
            if len(self.image) == 0:  # cold start: build the image directly, one pass
                acls = image_from_snapshot(records) if columns is None else image_from_columns(columns)
                image = AclsImage(acls, provenance)
                self._swap(Update(image, AclIndex.build(image.acls.items(), by_id=image.acls), self.image))
            else:
                delta = AclsDelta(self.image)
                for number, record in enumerate(records):
                    delta.replay_snapshot(record, number)
                delta.finish_snapshot()
                self._publish(delta, provenance, full=True)
            self._from_log = self._cut = False
            log.info("loaded %s: %d ACLs up to offset %d", source, len(self.image), provenance.last_offset)

    def catch_up(self, to_offset: int | None = None, publish_every_records: int | None = -1) -> int:
        """Apply every committed batch from `next_offset` up to the high-water mark (or `to_offset`).

        Batches are grouped into one delta and published every `publish_every_records` records
        (default: the loader's setting; None: only at the end) and at the end, always between two
        batches. Returns the number of records applied.
        """
        every = self.publish_every_records if publish_every_records == -1 else publish_every_records
        with self._lock, contextlib.ExitStack() as collector:
            applied = pending = 0
            delta = AclsDelta(self.image)
            last: RecordBatch | None = None
            paused = False
            for batch in self.replayer.batches(self.next_offset, to_offset, self._applied()):
                if not paused and len(batch.records) >= BULK_RECORDS:  # from here on, until the last publish
                    collector.enter_context(paused_gc(freeze=True))
                    paused = True
                delta.replay_rows(*batch_rows(batch.records), batch.base_offset)
                self.applied_bytes += batch.size_bytes
                last = batch
                pending += len(batch.records)
                if every is not None and pending >= every:
                    self._publish(delta, _provenance(batch))
                    applied, pending, delta = applied + pending, 0, AclsDelta(self.image)
            if last is not None and (pending or not delta.is_empty()):
                self._publish(delta, _provenance(last))
                applied += pending
            if last is not None:
                self._from_log, self._cut = True, self.replayer.ended_inside_batch
            return applied

    @contextlib.contextmanager
    def appending(self) -> Iterator[None]:
        """Hold catch-ups while this process appends a batch and then applies it from its own rows
        (`publish_appended`): a tailer that the commit wakes (the Kafka topic's long poll) would otherwise read
        the batch back, decode and apply it first, and for a bulk import that costs seconds of CPU."""
        with self._lock:
            yield

    def publish_appended(
        self, appended: AppendResult, timestamp_ms: int, ids: list[str], acls: list[StandardAcl]
    ) -> None:
        """Apply a batch of adds this process has just appended from the ACLs it wrote, without reading and
        decoding it back (a bulk import's catch-up). Only when the batch directly follows the applied
        state (the writer's lock keeps it so); otherwise, or for an empty batch, catch up from the log.
        The batch's bytes are not counted in `applied_bytes` (its records are, by the publish)."""
        with self._lock:
            if ids and appended.base_offset == self.next_offset:
                delta = AclsDelta(self.image)
                delta.replay_rows(ids, list[StandardAcl | None](acls), appended.base_offset)
                self._publish(delta, Provenance(appended.last_offset, appended.epoch, timestamp_ms))
                self._from_log, self._cut = False, False  # the divergence check compares offset and epoch
                return
        self.catch_up()

    def _applied(self) -> AppliedBatch | None:
        """The batch the log must still hold below `next_offset` (None when nothing, or a cut batch, was applied)."""
        p = self.image.provenance
        if p.last_offset < 0 or self._cut:
            return None
        return AppliedBatch(p.last_offset, p.epoch, p.timestamp_ms if self._from_log else None)

    def initial_load(self) -> int:
        """Replay to the high-water mark seen now (publishing once), then complete the initial load."""
        applied = self.catch_up(self.backend.high_watermark(), publish_every_records=None)
        self.complete_initial_load()
        return applied

    def complete_initial_load(self) -> None:
        """Tell every publisher, in order, that the initial load is complete (KIP-801: the authorizer answers)."""
        self.loaded = True
        for publisher in self.publishers:
            publisher.complete_initial_load()

    def _publish(self, delta: AclsDelta, provenance: Provenance, full: bool = False) -> None:
        """Build the next index off to the side (it validates content), then swap image and index in."""
        # A change touching a large part of the state is cheaper to index in bulk than incrementally.
        bulk = full or delta.size() > max(len(self.index), 1) // 4
        before = self.image
        if bulk:
            image = delta.apply(provenance)
            index = AclIndex.build(image.acls.items(), by_id=image.acls)
            removed: list[str] | None = None
            added: list[tuple[str, StandardAcl]] | None = None
        else:
            removed, added = delta.net_changes()
            image = delta.apply(provenance)
            index = self.index.apply(removed, added, by_id_after=image.acls)
        self._swap(Update(image, index, before, removed, added))
        if bulk and len(index) >= TRIM_AFTER_ACLS and self.loaded:
            release_free_memory()  # a serving node just dropped the index it replaced (start-up trims once at the end)

    def _swap(self, update: Update) -> None:
        """Publish: the loader's own image and index, then every publisher, in order. Every publisher is told even
        when one before it fails (the first failure is raised after): the authorizer may already decide on the new
        state, so serve's change feed, last in the list, must still report it, or brokers would keep using
        decisions made before it. The index replaced and the update (with the image replaced) are buried: their
        last holder does not free them in one go."""
        replaced = self.index
        self.image, self.index = update.image, update.index
        failure: Exception | None = None
        for publisher in self.publishers:
            try:
                publisher.publish(update)
            except Exception as exc:  # raised below, once the others are told
                failure = failure or exc
        bury(replaced, update)
        if failure is not None:
            raise failure


def _provenance(batch: RecordBatch) -> Provenance:
    return Provenance(batch.last_offset, batch.epoch, batch.timestamp_ms)
