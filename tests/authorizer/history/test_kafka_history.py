"""`kafka_acl_history` on Kafka-format logs written byte by byte: a transaction's events count once it ends,
and a marker out of place is an error naming its offset."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftacl.authorizer.history.kafka_history import kafka_acl_history
from kraftacl.authorizer.history.kafka_state import KafkaStateError
from kraftacl.metadata_log.kafka_files.files import PARTITION_DIR, locate
from kraftacl.metadata_log.records import AccessControlEntryRecord
from tests.metadata_log import kafka_files as kf

A = AccessControlEntryRecord("AAAAAAAAQACAAAAAAAAAAA", 2, "t", 3, "User:a", "*", 3, 3)


def _history(tmp_path: Path, batches: list[bytes]) -> dict[str, list[int]]:
    kf.write_log(tmp_path / PARTITION_DIR, batches)
    files = locate(tmp_path)
    assert files is not None
    history = kafka_acl_history(files, [A.id])
    return {acl_id: [e.offset for e in events] for acl_id, events in history.events.items()}


def test_committed_events_count_at_their_offsets(tmp_path: Path) -> None:
    log = [kf.batch(0, [(None, kf.BEGIN), (None, kf.ace(A))]), kf.batch(2, [(None, kf.END), (None, kf.ace(A))])]
    assert _history(tmp_path, log) == {A.id: [1, 3]}


@pytest.mark.parametrize(
    ("markers", "message"),
    [
        ([kf.END], "offset 0: END_TRANSACTION_RECORD without a BeginTransactionRecord"),
        ([kf.BEGIN, kf.BEGIN], "offset 1: BEGIN_TRANSACTION_RECORD inside a transaction"),
    ],
)
def test_a_marker_out_of_place_names_its_offset(tmp_path: Path, markers: list[bytes], message: str) -> None:
    with pytest.raises(KafkaStateError, match=message):
        _history(tmp_path, [kf.batch(0, [(None, m) for m in markers])])
