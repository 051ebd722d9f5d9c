"""`MemoryLog` against the backend contract, plus its own knobs."""

from __future__ import annotations

import pytest

from kraftacl.metadata_log.backends.memory import MemoryLog
from tests.metadata_log.contract import LogBackendContract, MakeBackend
from tests.metadata_log.factories import records_for


class TestMemoryLogContract(LogBackendContract):
    keeps_bytes = False

    @pytest.fixture
    def make_backend(self) -> MakeBackend:
        return MemoryLog


def test_epoch_is_stamped_on_batches() -> None:
    log = MemoryLog(epoch=7)
    assert log.append(records_for(0, 2)).epoch == 7
    assert [b.epoch for b in log.read()] == [7]


def test_batches_are_shared_immutable_values() -> None:
    log = MemoryLog()
    log.append(records_for(0, 3))
    [first] = list(log.read())
    [again] = list(log.read())
    assert first is again
    assert isinstance(first.records, tuple)
