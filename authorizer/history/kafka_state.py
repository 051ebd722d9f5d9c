"""The ACL state of Apache Kafka's own KRaft metadata at an offset: the newest `.checkpoint` at or below it,
then the log's ACL records in offset order, honouring Kafka's metadata transactions.

A `KafkaAclReplay` belongs to the one thread that drives it; its `image` is an immutable value.

Offsets are Kafka's. "The state at offset N" applies every record below N, as for kraft-acl logs; N
must fall between two batches. Transactions follow `MetadataBatchLoader`: the records after a
`BeginTransactionRecord` apply together at its `EndTransactionRecord`; an `AbortTransactionRecord`
discards them, and so does the end of what is read (an unfinished transaction applies nothing). A
nested Begin, or an End or Abort outside a transaction, is an error naming the offset. Example:

    offset  3 Begin | 4 ACE a | 5 ACE b | 6 End | 7 ACE c
    state at 5 or 6: no ACL (the transaction is open); at 7: a, b; at 8: a, b, c
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from pathlib import Path

from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.state.image import AclsDelta, AclsImage, Provenance, image_from_snapshot
from kraftacl.metadata_log.kafka_files.batches import TornTail
from kraftacl.metadata_log.kafka_files.files import KafkaMetadataFiles, SnapshotFile
from kraftacl.metadata_log.kafka_files.messages import TransactionMarker
from kraftacl.metadata_log.kafka_files.reader import DecodedBatch, file_batches, log_batches, read_snapshot
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord


class KafkaStateError(AuthorizerError):
    """The state asked for does not exist in these Kafka files (an offset inside a batch, not covered, ...)."""


class KafkaAclReplay:
    """Replays Kafka metadata files onto an AclsImage: `start(to)` once, then `catch_up(to)` further."""

    def __init__(self, files: KafkaMetadataFiles) -> None:
        self.files = files
        self.image = AclsImage.empty()
        self.loaded_snapshot: Path | None = None
        self.torn: list[TornTail] = []  # a torn tail at the end of the newest segment, if any
        self.open_transaction: int | None = None  # offset of the Begin of a transaction not yet ended
        self._pending: list[tuple[int, MetadataRecord]] = []
        self._batches: Iterator[DecodedBatch] | None = None
        self._next = 0  # the first offset not read yet
        self.notes: list[str] = []  # what a reader should know about the state (partial input)

    def log_start_offset(self) -> int:
        """The first offset the segments hold (their first batch), or 0 without segments."""
        for _, path in self.files.segments:
            for batch in file_batches(path, []):
                return batch.base_offset
        return 0

    def end_offset(self) -> int:
        """The offset after the last whole batch of the log, or after the newest snapshot if that is further."""
        end = max((s.end_offset for s in self.files.snapshots), default=0)
        for _, path in reversed(self.files.segments):
            last = deque(file_batches(path, []), maxlen=1)
            if last:
                return max(end, last[0].next_offset)
        return end

    def start(self, to_offset: int | None = None) -> None:
        """Load the newest snapshot ending at or below `to_offset` (default: the end), then the log up to it."""
        target = self.end_offset() if to_offset is None else to_offset
        snapshot = max((s for s in self.files.snapshots if s.end_offset <= target), key=_order, default=None)
        if snapshot is not None and snapshot.end_offset > 0:
            self._load_snapshot(snapshot)
        elif target > 0 and not self.files.segments:
            raise KafkaStateError(
                f"{self.files.named}: no snapshot ends at or below offset {target} and no log segment holds the "
                f"records below it (the snapshots end at {', '.join(str(s.end_offset) for s in self.files.snapshots)})"
            )
        self._next = self.image.provenance.next_offset
        start = self.log_start_offset() if self.files.segments else self._next
        if self._next < start and self.files.single_file:  # one segment file, as kafka-metadata-shell reads it
            self.notes.append(f"only the records of {self.files.named.name} (from offset {start}) are applied")
            self._next = start
        if self._next < start and target > self._next:
            raise KafkaStateError(
                f"the log in {self.files.directory} starts at offset {start} and no snapshot ends between "
                f"{self._next} and {target}: the records below {start} are gone"
            )
        self.catch_up(target)

    def _load_snapshot(self, file: SnapshotFile) -> None:
        snapshot = read_snapshot(file)
        acls = image_from_snapshot(snapshot.acl_records())
        provenance = Provenance(file.end_offset - 1, file.epoch, snapshot.last_contained_timestamp)
        self.image = AclsImage(acls, provenance)
        self.loaded_snapshot = file.path

    def catch_up(self, to_offset: int) -> None:
        """Apply the log's batches from where the replay stands up to `to_offset` (exclusive, a batch boundary)."""
        if to_offset <= self._next:
            return
        if self._batches is None:
            self._batches = log_batches(self.files, self._next, self.torn)
        delta = AclsDelta(self.image)
        last: DecodedBatch | None = None
        for decoded in self._batches:
            batch = decoded.batch
            if batch.base_offset < self._next:
                raise KafkaStateError(f"{batch.path}: the log does not start a batch at offset {self._next}")
            if batch.base_offset > self._next:
                raise KafkaStateError(f"{batch.path}: gap in the log: offsets {self._next}..{batch.base_offset - 1}")
            if batch.next_offset > to_offset:
                raise KafkaStateError(
                    f"offset {to_offset} is inside the batch at offsets {batch.base_offset}..{batch.last_offset}: "
                    f"its records apply together; use {batch.base_offset} or {batch.next_offset}"
                )
            self._apply(decoded, delta)
            self._next, last = batch.next_offset, decoded
            if self._next >= to_offset:
                break
        if last is not None:
            b = last.batch
            self.image = delta.apply(Provenance(b.last_offset, b.epoch, b.max_timestamp))

    def _apply(self, decoded: DecodedBatch, delta: AclsDelta) -> None:
        if decoded.batch.is_control:
            return
        for offset, entry in decoded.entries:
            if isinstance(entry, TransactionMarker):
                self._transaction(offset, entry, delta)
            elif type(entry) is AccessControlEntryRecord or type(entry) is RemoveAccessControlEntryRecord:
                if self.open_transaction is None:
                    delta.replay(entry, offset)
                else:
                    self._pending.append((offset, entry))

    def _transaction(self, offset: int, marker: TransactionMarker, delta: AclsDelta) -> None:
        if marker.kind == "BEGIN":
            if self.open_transaction is not None:
                raise KafkaStateError(
                    f"offset {offset}: BeginTransactionRecord inside the transaction begun at {self.open_transaction}"
                )
            self.open_transaction = offset
            return
        if self.open_transaction is None:
            raise KafkaStateError(f"offset {offset}: {marker.name} without a BeginTransactionRecord")
        if marker.kind == "END":
            for at, record in self._pending:
                delta.replay(record, at)
        self._pending, self.open_transaction = [], None


def _order(snapshot: SnapshotFile) -> tuple[int, int]:
    return snapshot.end_offset, snapshot.epoch
