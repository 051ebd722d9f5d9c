"""The CLI's hook for Apache Kafka's own KRaft metadata: recognise it where a log directory or snapshot file
is expected, read its ACL state at an offset, and say which format was read.

Stateless helpers; each call opens the files read-only and closes them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kraftacl.authorizer.history.kafka_state import KafkaStateError
from kraftacl.authorizer.history.metadata_source import MetadataSourceError, MetadataState, read_state
from kraftacl.cli.errors import fail
from kraftacl.cli.log_state import library_errors
from kraftacl.metadata_log.kafka_files.files import KafkaMetadataFiles, locate


def kafka_files(path: Path) -> KafkaMetadataFiles | None:
    """Kafka's metadata files at `path` (a metadata.log.dir, `__cluster_metadata-0`, a `.log` or
    `.checkpoint`), or None for anything else (kraft-acl's own files go their usual way)."""
    with library_errors():
        return locate(path)


def say_format(state: MetadataState) -> None:
    """One line on stderr naming the format read (stdout stays the command's output), then any notes."""
    print(f"kraft-acl: reading {state.format}: {state.path}", file=sys.stderr)
    for note in state.notes:
        print(f"kraft-acl: note: {note}", file=sys.stderr)


def kafka_state(path: Path, offset: int | None, option: str, say: bool = True) -> MetadataState:
    """The state of Kafka's metadata at `offset` (default: the end), or one error line naming the option."""
    if offset is not None and offset < 0:
        fail(f"{option} {offset} is negative")
    with library_errors():
        try:
            state = read_state(path, offset)
        except (MetadataSourceError, KafkaStateError) as exc:
            fail(f"{option} {offset}: {exc}" if offset is not None else str(exc))
    if say:
        say_format(state)
    return state
