"""A tailer on a log that can say when a batch is committed (`LogBackend.wait_for_append`, a long poll) applies it
at once rather than after its interval, never polls in a busy loop, and falls back to its interval when the wait
fails or the backend cannot wait."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

import pytest

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state import tailer as tailer_module
from kraftacl.authorizer.state.loader import MetadataLoader
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.authorizer.state.tailer import Tailer
from kraftacl.metadata_log.backend import AppendResult
from kraftacl.metadata_log.backends.memory import MemoryLog
from kraftacl.metadata_log.records import MetadataRecord
from kraftacl.metadata_log.uuids import new_uuid

HOUR_S = 3600.0


class WaitingLog(MemoryLog):
    """A memory log whose readers can wait for an append, as the Kafka topic's can; counts the waits."""

    def __init__(self) -> None:
        super().__init__()
        self.appended = threading.Condition()
        self.waits: list[tuple[int, float]] = []  # (next_offset, timeout_s) of each wait
        self.fail_waits: Exception | None = None

    def append(self, records: Sequence[MetadataRecord], *, timestamp_ms: int | None = None) -> AppendResult:
        result = super().append(records, timestamp_ms=timestamp_ms)
        with self.appended:
            self.appended.notify_all()
        return result

    def wait_for_append(self, next_offset: int, timeout_s: float, interrupt: threading.Event | None = None) -> bool:
        self.waits.append((next_offset, timeout_s))
        if self.fail_waits is not None:
            raise self.fail_waits
        with self.appended:
            self.appended.wait_for(lambda: self.high_watermark() > next_offset, timeout_s)
        return True


def add(log: MemoryLog, n: int) -> None:
    acl = StandardAcl(
        ResourceType.TOPIC, f"t{n}", PatternType.LITERAL, "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW
    )
    log.append([record_from_acl(new_uuid(), acl)])


def applied(loader: MetadataLoader, offset: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while loader.next_offset < offset and time.monotonic() < deadline:
        time.sleep(0.005)
    return loader.next_offset >= offset


@pytest.fixture
def follower() -> Iterator[tuple[WaitingLog, MetadataLoader, Tailer]]:
    log = WaitingLog()
    loader = MetadataLoader(log)
    tailer = Tailer(loader, interval_s=HOUR_S).start()
    try:
        yield log, loader, tailer
    finally:
        tailer.stop(timeout=5)
    assert tailer._thread is not None and not tailer._thread.is_alive(), "stop ends a tailer in a long poll"


def test_a_batch_is_applied_as_it_is_committed_not_after_the_interval(
    follower: tuple[WaitingLog, MetadataLoader, Tailer],
) -> None:
    log, loader, tailer = follower
    for n in range(1, 6):
        add(log, n)
        assert applied(loader, n), f"batch {n} waited for the hour-long interval"
    assert tailer.status().following and tailer.status().lag == 0
    assert log.waits, "the tailer waited in the log"
    assert all(timeout == tailer_module.LONG_POLL_MAX_S for _, timeout in log.waits), "one wait is capped"
    assert {offset for offset, _ in log.waits} <= set(range(6)), "each wait starts at the applied end"


def test_an_idle_tailer_reads_the_log_end_once_per_capped_wait_not_in_a_busy_loop(
    follower: tuple[WaitingLog, MetadataLoader, Tailer],
) -> None:
    log, _, tailer = follower
    time.sleep(1.0)
    # one wait per LONG_POLL_MAX_S (0.25 s): about four in a second, never hundreds
    assert 2 <= len(log.waits) <= 8, log.waits
    assert tailer.status().following


def test_a_lag_a_poll_does_not_shrink_is_not_polled_again_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    log = WaitingLog()
    add(log, 1)
    loader = MetadataLoader(log)
    polls: list[int] = []

    def stuck(*_: object, **__: object) -> int:  # the log says there is more, but nothing can be read
        polls.append(1)
        return 0

    monkeypatch.setattr(loader, "catch_up", stuck)
    tailer = Tailer(loader, interval_s=0.2).start()
    try:
        time.sleep(1.0)
    finally:
        tailer.stop(timeout=5)
    assert tailer.status().lag == 1
    # the first poll counts as progress (one poll again at once); then one poll per interval, about five
    assert len(polls) <= 8, f"{len(polls)} polls in a second: a busy loop on a lag that does not shrink"
    assert not log.waits, "a lagging tailer never waits in the log: it reads"


def test_a_failing_wait_falls_back_to_the_interval(caplog: pytest.LogCaptureFixture) -> None:
    log = WaitingLog()
    log.fail_waits = OSError("watch consumer gone")
    loader = MetadataLoader(log)
    tailer = Tailer(loader, interval_s=0.05).start()
    try:
        add(log, 1)
        assert applied(loader, 1), "the interval still polls"
        add(log, 2)
        assert applied(loader, 2)
        time.sleep(0.3)
        assert tailer.status().following, "a failed wait is not a failed poll"
        assert tailer._thread is not None and tailer._thread.is_alive()
    finally:
        tailer.stop(timeout=5)


@pytest.mark.parametrize(
    ("log", "long_poll"),
    [(MemoryLog(), True), (WaitingLog(), False)],
    ids=["a backend that cannot wait", "a tailer told not to long-poll (serve's reader process)"],
)
def test_without_a_long_poll_the_log_is_read_on_the_interval_or_when_poked(log: MemoryLog, long_poll: bool) -> None:
    loader = MetadataLoader(log)
    tailer = Tailer(loader, interval_s=HOUR_S, long_poll=long_poll).start()
    try:
        assert applied(loader, 0)
        time.sleep(0.2)  # the first poll has happened; the next is an hour away
        add(log, 1)
        time.sleep(0.5)
        assert loader.next_offset == 0, "nothing is applied unasked before the interval"
        assert not getattr(log, "waits", []), "the tailer never waited in the log"
        tailer.poke()
        assert applied(loader, 1)
    finally:
        tailer.stop(timeout=5)
