"""Open any metadata source and get its ACL state at an offset: a kraft-acl log directory or snapshot file,
or Apache Kafka's own KRaft metadata (a metadata.log.dir, a `__cluster_metadata-0` directory, one `.log`
segment or one `.checkpoint`). The one entry point for tools that read metadata (CLI, metadata shell,
Spark pipeline).

Stateless functions returning immutable values; every file is opened read-only (no lock is taken, so a
running writer or broker is fine) and closed before the function returns.

    state = read_state(Path("/var/lib/kafka/meta"))             # newest state, format detected
    state.format, state.image.acls, state.high_watermark        # SourceFormat.KAFKA_LOG, {id: acl}, 4711
    read_state(path, at_offset=100).image.provenance.last_offset  # 99
    authorizer_for(state, AuthorizerConfig()).authorize(...)     # decisions on that state
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import StandardAuthorizer
from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.history.kafka_state import KafkaAclReplay
from kraftacl.authorizer.state.image import AclsImage, Provenance, image_from_columns
from kraftacl.authorizer.state.node import AclNode
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.kafka_files.files import KafkaMetadataFiles, locate
from kraftacl.snapshots.format import MAGIC as SNAPSHOT_MAGIC
from kraftacl.snapshots.format import SnapshotReader


class SourceFormat(StrEnum):
    """What a metadata source is, in the words the tools print."""

    KRAFT_ACL_LOG = "kraft-acl log"
    KRAFT_ACL_SNAPSHOT = "kraft-acl snapshot"
    KAFKA_LOG = "Apache Kafka KRaft metadata log"
    KAFKA_SNAPSHOT = "Apache Kafka KRaft snapshot"

    @property
    def is_kafka(self) -> bool:
        return self in (SourceFormat.KAFKA_LOG, SourceFormat.KAFKA_SNAPSHOT)


class MetadataSourceError(AuthorizerError):
    """A path that is no metadata source, or an offset at which it holds no state; one line naming both."""


@dataclass(frozen=True, slots=True)
class MetadataState:
    """The ACL state of a source at one offset, and where it came from."""

    format: SourceFormat
    path: Path
    image: AclsImage  # provenance in the source's own offsets (Kafka's, for Kafka files)
    high_watermark: int  # the end of what the source holds: the newest state is the one at this offset
    snapshot: Path | None  # the snapshot the state was loaded from, if any
    notes: tuple[str, ...] = ()  # partial input, an open transaction, a torn tail


def detect_format(path: Path) -> tuple[SourceFormat, KafkaMetadataFiles | None]:
    """The format of `path`, and Kafka's file listing when it is Kafka's; MetadataSourceError otherwise."""
    if not path.exists():
        raise MetadataSourceError(f"{path}: no such file or directory")
    kafka = locate(path)
    if kafka is not None:
        return (SourceFormat.KAFKA_LOG if kafka.segments or path.is_dir() else SourceFormat.KAFKA_SNAPSHOT), kafka
    if path.is_dir():
        return SourceFormat.KRAFT_ACL_LOG, None
    with path.open("rb") as f:
        if f.read(len(SNAPSHOT_MAGIC)) == SNAPSHOT_MAGIC:
            return SourceFormat.KRAFT_ACL_SNAPSHOT, None
    raise MetadataSourceError(
        f"{path}: neither a metadata log directory nor a snapshot (kraft-acl's or Apache Kafka's `.checkpoint`)"
    )


def read_state(path: Path, at_offset: int | None = None) -> MetadataState:
    """The ACL state of the source at `path` at `at_offset` (default: its newest state)."""
    fmt, kafka = detect_format(path)
    if kafka is not None:
        return _kafka_state(fmt, kafka, at_offset)
    if fmt is SourceFormat.KRAFT_ACL_SNAPSHOT:
        return _snapshot_state(path, at_offset)
    return _log_state(path, at_offset)


def _check(path: Path, at_offset: int | None, high_watermark: int) -> None:
    if at_offset is not None and not 0 <= at_offset <= high_watermark:
        raise MetadataSourceError(f"{path}: offset {at_offset} is outside 0..{high_watermark} (its high-water mark)")


def _kafka_state(fmt: SourceFormat, files: KafkaMetadataFiles, at_offset: int | None) -> MetadataState:
    replay = KafkaAclReplay(files)
    end = replay.end_offset()
    _check(files.named, at_offset, end)
    replay.start(at_offset)
    notes = list(replay.notes)
    if replay.open_transaction is not None:
        notes.append(f"the metadata transaction begun at offset {replay.open_transaction} is not finished: not applied")
    for torn in replay.torn:
        notes.append(f"{torn.path}: {torn.size} bytes at byte {torn.position} are not a whole batch (being written?)")
    return MetadataState(fmt, files.named, replay.image, end, replay.loaded_snapshot, tuple(notes))


def _snapshot_state(path: Path, at_offset: int | None) -> MetadataState:
    reader = SnapshotReader(path)
    h = reader.header
    if at_offset is not None and at_offset != h.end_offset:
        raise MetadataSourceError(f"{path}: a snapshot holds only the state at its end offset {h.end_offset}")
    image = AclsImage(image_from_columns(reader.columns()), Provenance(h.end_offset - 1, h.epoch, h.timestamp_ms))
    return MetadataState(SourceFormat.KRAFT_ACL_SNAPSHOT, path, image, h.end_offset, path)


def _log_state(path: Path, at_offset: int | None) -> MetadataState:
    backend = FileLog(path, read_only=True)
    node = AclNode(backend, snapshot_dir=path)
    try:
        hwm = backend.high_watermark()
        _check(path, at_offset, hwm)
        target = hwm if at_offset is None else at_offset
        if backend.log_start_offset() < target < hwm:
            holding = next(iter(backend.read(target - 1)))
            if holding.next_offset != target:
                raise MetadataSourceError(
                    f"{path}: offset {target} is inside the batch at offsets {holding.base_offset}.."
                    f"{holding.last_offset}; use {holding.base_offset} or {holding.next_offset}"
                )
        node.start(to_offset=target)
        return MetadataState(SourceFormat.KRAFT_ACL_LOG, path, node.image, hwm, node.loaded_snapshot)
    finally:
        node.close()


def authorizer_for(state: MetadataState, config: AuthorizerConfig | None = None) -> StandardAuthorizer:
    """A loaded StandardAuthorizer deciding on the state's ACLs."""
    authorizer = StandardAuthorizer(config)
    authorizer.load_snapshot(state.image.acls.items())
    authorizer.complete_initial_load()
    return authorizer
