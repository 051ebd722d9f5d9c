"""The `LogBackend` contract: one abstract test class that every backend's tests subclass.

A subclass overrides the `make_backend` fixture with a factory of fresh, empty backends; each test
closes what it made. Not collected by itself (no `Test` prefix, no `test_` module name).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.errors import LogClosedError, LogError, OffsetOutOfRangeError
from kraftacl.metadata_log.records import RecordBatch
from tests.metadata_log.factories import batch_size_at, record_at, records_for

MakeBackend = Callable[[], LogBackend]


def fill(log: LogBackend, sizes: list[int]) -> list[tuple[int, int]]:
    """Append batches of the given sizes with the factory records; return their (base, last)."""
    out = []
    for n in sizes:
        result = log.append(records_for(log.high_watermark(), n))
        out.append((result.base_offset, result.last_offset))
    return out


def check_batches(batches: list[RecordBatch], first_base: int | None = None) -> None:
    """Batches are contiguous and hold exactly the factory records of their offsets."""
    for prev, nxt in itertools.pairwise(batches):
        assert nxt.base_offset == prev.next_offset, (prev.base_offset, nxt.base_offset)
    for b in batches:
        assert b.records == tuple(records_for(b.base_offset, len(b.records))), b.base_offset
    if first_base is not None and batches:
        assert batches[0].base_offset == first_base


class LogBackendContract:
    """Behaviour every `LogBackend` must show; see `metadata_log.backend.LogBackend`."""

    keeps_bytes = True  # batches report the bytes they take in the log (a memory log keeps none)

    @pytest.fixture
    def make_backend(self) -> MakeBackend:
        raise NotImplementedError("subclasses provide a factory of fresh, empty backends")

    @pytest.fixture
    def log(self, make_backend: MakeBackend) -> Iterator[LogBackend]:
        backend = make_backend()
        yield backend
        backend.close()

    def test_empty_log(self, log: LogBackend) -> None:
        assert log.high_watermark() == 0
        assert log.log_start_offset() == 0
        assert list(log.read()) == []
        assert list(log.read(0)) == []

    def test_append_read_round_trip(self, log: LogBackend) -> None:
        records = records_for(0, 9)
        result = log.append(records, timestamp_ms=1_700_000_000_123)
        assert (result.base_offset, result.last_offset) == (0, 8)
        [batch] = list(log.read())
        assert batch.records == tuple(records)
        assert batch.timestamp_ms == 1_700_000_000_123
        assert (batch.base_offset, batch.last_offset, batch.epoch) == (0, 8, result.epoch)
        # frame header and payload: more than the 9 records' 17-byte ids alone; a memory log keeps none
        assert batch.size_bytes > 9 * 17 if self.keeps_bytes else batch.size_bytes == 0

    def test_default_timestamp_is_now(self, log: LogBackend) -> None:
        before = time.time_ns() // 1_000_000
        log.append(records_for(0, 1))
        after = time.time_ns() // 1_000_000
        [batch] = list(log.read())
        assert before <= batch.timestamp_ms <= after

    def test_offsets_contiguous_across_batches(self, log: LogBackend) -> None:
        assert fill(log, [3, 1, 5, 2]) == [(0, 2), (3, 3), (4, 8), (9, 10)]
        batches = list(log.read())
        assert [(b.base_offset, b.last_offset) for b in batches] == [(0, 2), (3, 3), (4, 8), (9, 10)]
        check_batches(batches, 0)

    def test_high_watermark_is_exclusive(self, log: LogBackend) -> None:
        log.append(records_for(0, 4))
        assert log.high_watermark() == 4
        log.append(records_for(4, 1))
        assert log.high_watermark() == 5

    def test_read_from_every_offset_yields_the_batch_holding_it(self, log: LogBackend) -> None:
        fill(log, [3, 1, 5, 2])
        for offset in range(log.high_watermark()):
            batches = list(log.read(offset))
            assert batches[0].base_offset <= offset <= batches[0].last_offset
            assert batches[-1].next_offset == log.high_watermark()
            check_batches(batches)

    def test_read_from_middle_of_batch_yields_whole_batch(self, log: LogBackend) -> None:
        fill(log, [10, 10])
        batches = list(log.read(15))
        assert [(b.base_offset, len(b.records)) for b in batches] == [(10, 10)]

    def test_read_from_high_watermark_yields_nothing(self, log: LogBackend) -> None:
        fill(log, [2, 3])
        assert list(log.read(5)) == []

    def test_read_out_of_range(self, log: LogBackend) -> None:
        fill(log, [2])
        for bad in (-1, 3, 100):
            with pytest.raises(OffsetOutOfRangeError, match=f"offset {bad} is out of range"):
                log.read(bad)

    def test_read_stops_at_the_high_watermark_of_the_call(self, log: LogBackend) -> None:
        fill(log, [2])
        it = log.read(0)
        fill(log, [3])
        assert [b.base_offset for b in it] == [0]

    def test_empty_batch_rejected(self, log: LogBackend) -> None:
        with pytest.raises(ValueError, match="empty batch"):
            log.append([])
        assert log.high_watermark() == 0

    def test_non_record_rejected(self, log: LogBackend) -> None:
        with pytest.raises(TypeError, match="record 1 of the batch"):
            log.append([record_at(0), "not a record"])  # type: ignore[list-item]
        assert log.high_watermark() == 0

    def test_epoch_on_results_and_batches(self, log: LogBackend) -> None:
        results = [log.append(records_for(log.high_watermark(), 2)) for _ in range(3)]
        assert [b.epoch for b in log.read()] == [r.epoch for r in results]

    def test_large_batch(self, log: LogBackend) -> None:
        records = records_for(0, 10_000)
        result = log.append(records)
        assert (result.base_offset, result.last_offset) == (0, 9_999)
        [batch] = list(log.read(5_000))
        assert batch.records == tuple(records)

    def test_close_is_idempotent_and_final(self, make_backend: MakeBackend) -> None:
        log = make_backend()
        fill(log, [1])
        log.close()
        log.close()
        with pytest.raises(LogClosedError):
            log.append(records_for(1, 1))
        with pytest.raises(LogError):
            list(log.read())

    def test_context_manager_closes(self, make_backend: MakeBackend) -> None:
        with make_backend() as log:
            fill(log, [1])
        with pytest.raises(LogClosedError):
            log.append(records_for(1, 1))

    def test_concurrent_reader_never_sees_partial_batch(self, log: LogBackend) -> None:
        """A reader thread re-reads the whole log while a writer appends batches of varied sizes."""
        done = threading.Event()
        failures: list[BaseException] = []
        reads = 0

        def reader() -> None:
            nonlocal reads
            last_hwm = 0
            try:
                while not done.is_set() or reads < 3:
                    hwm = log.high_watermark()
                    assert hwm >= last_hwm
                    last_hwm = hwm
                    batches = list(log.read(0))
                    check_batches(batches, 0)
                    for b in batches:
                        assert len(b.records) == batch_size_at(b.base_offset, 25), b.base_offset
                    assert not batches or batches[-1].next_offset >= hwm
                    reads += 1
            except BaseException as exc:  # reported in the main thread
                failures.append(exc)

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            for _ in range(150):
                base = log.high_watermark()
                log.append(records_for(base, batch_size_at(base, 25)))
        finally:
            done.set()
            thread.join(timeout=60)
        assert not failures, failures[0]
        assert reads >= 3
        check_batches(list(log.read()), 0)
