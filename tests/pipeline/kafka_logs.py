"""Randomized Apache Kafka KRaft metadata logs for the pipeline's tests, written byte by byte with the #16 test
writers (tests/metadata_log/kafka_files.py): ACL adds and removes, metadata transactions (committed, aborted,
and one left unfinished at the end), NoOp batches and LeaderChange control batches, several segments.

Only logs the controller could write: a remove names a live ACL, an add never repeats a live ACL's content.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from kraftacl.metadata_log.codec.avro import new_uuid
from kraftacl.metadata_log.kafka_files.files import PARTITION_DIR
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from tests.metadata_log import kafka_files as kf
from tests.pipeline.logs import _acl

Acl = tuple[int, str, int, str, str, int, int]


@dataclass
class KafkaGenerated:
    """The partition directory, each batch's (base offset, record count, bytes), and the segment bases."""

    directory: Path
    batches: list[tuple[int, int, bytes]] = field(default_factory=list)
    segment_bases: list[int] = field(default_factory=list)

    @property
    def high_watermark(self) -> int:
        return self.boundaries()[-1]

    def boundaries(self) -> list[int]:
        """0, then the end of every batch."""
        return [0, *(base + count for base, count, _ in self.batches)]


class _Writer:
    """Appends batches, keeping the committed ACLs and those pending in an open transaction apart."""

    def __init__(self, rng: random.Random, out: KafkaGenerated) -> None:
        self.rng, self.out = rng, out
        self.live: dict[str, Acl] = {}
        self.pending: dict[str, Acl | None] | None = None  # id -> ACL (added) or None (removed) in the transaction
        self.next = 0

    def visible(self) -> dict[str, Acl]:
        seen = dict(self.live)
        for acl_id, acl in (self.pending or {}).items():
            if acl is None:
                seen.pop(acl_id, None)
            else:
                seen[acl_id] = acl
        return seen

    def append(self, records: list[kf.Record], *, control: bool = False, epoch: int = 1) -> None:
        ts = kf.T0 + self.next * 10
        self.out.batches.append(
            (self.next, len(records), kf.batch(self.next, records, is_control=control, epoch=epoch, ts=ts))
        )
        self.next += len(records)

    def acl_records(self) -> list[kf.Record]:
        records: list[kf.Record] = []
        changes = self.pending if self.pending is not None else None
        for _ in range(self.rng.randrange(1, 5)):
            seen = self.visible()
            if seen and self.rng.random() < 0.3:
                gone = self.rng.choice(sorted(seen))
                self._change(changes, gone, None)
                records.append((None, kf.remove(RemoveAccessControlEntryRecord(gone))))
                continue
            acl = _acl(self.rng)
            if acl in seen.values():
                continue
            acl_id = new_uuid()
            self._change(changes, acl_id, acl)
            records.append((None, kf.ace(AccessControlEntryRecord(acl_id, *acl))))
        return records or [(None, kf.NO_OP)]

    def _change(self, pending: dict[str, Acl | None] | None, acl_id: str, acl: Acl | None) -> None:
        if pending is not None:
            pending[acl_id] = acl
        elif acl is None:
            del self.live[acl_id]
        else:
            self.live[acl_id] = acl

    def step(self, epoch: int) -> None:
        """One batch: a control batch, NoOps, ACL records, or a transaction's begin, records or end."""
        roll = self.rng.random()
        if roll < 0.08:
            self.append([kf.LEADER_CHANGE], control=True, epoch=epoch)
        elif roll < 0.16:
            self.append([(None, kf.NO_OP)] * self.rng.randrange(1, 3), epoch=epoch)
        elif self.pending is None and roll < 0.3:
            self.pending = {}
            self.append([(None, kf.BEGIN), *self.acl_records()], epoch=epoch)
        elif self.pending is not None and roll < 0.45:
            records, commit = self.acl_records(), self.rng.random() < 0.6
            if commit:
                self.live = self.visible()
            self.pending = None
            self.append([*records, (None, kf.END if commit else kf.ABORT)], epoch=epoch)
        else:
            self.append(self.acl_records(), epoch=epoch)


def random_kafka_log(root: Path, seed: int, batches: int = 50, segments: int = 3) -> KafkaGenerated:
    """`root/__cluster_metadata-0` with `batches` batches in `segments` segments, ending in an open transaction."""
    rng = random.Random(seed)
    out = KafkaGenerated(root / PARTITION_DIR)
    writer = _Writer(rng, out)
    for number in range(batches):
        writer.step(epoch=1 + number * 3 // batches)
    if writer.pending is None:
        writer.pending = {}
        writer.append([(None, kf.BEGIN), *writer.acl_records()], epoch=3)
    cuts = sorted(rng.sample(range(1, len(out.batches)), segments - 1))
    for start, end in zip([0, *cuts], [*cuts, len(out.batches)], strict=True):
        base = out.batches[start][0]
        kf.write_log(out.directory, [b for _, _, b in out.batches[start:end]], base=base)
        out.segment_bases.append(base)
    return out
