"""Which of several processes writes the Kafka-backed log: Kafka's group protocol elects it, with no consensus of
our own.

Every candidate joins one consumer group subscribed to the log's topic, whose single partition the group's
coordinator assigns to exactly one live member: that member is elected. A member that stops heartbeating (killed,
frozen, cut off from Kafka) leaves the group after `session.timeout.ms` and the partition moves to another; a
member that leaves cleanly (`stop`) hands it over at once. The cooperative-sticky assignor keeps the partition
where it is when members join, so a restarted candidate does not take the role back. The group only says who
should write: correctness comes from transactional fencing (`KafkaLog.claim_writer`), so a member that still
believes itself elected after the group moved on (it was frozen) fails its next append and never reaches the log.

Thread safety: one background thread polls the consumer and runs the callbacks; `elected`, `status()`, `rejoin()`
and `stop()` may be called from any thread. `on_change` runs on the election thread and must not block.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kraftacl.metadata_log.backends.kafka_topic.client import KafkaLogConfig

log = logging.getLogger(__name__)
#: The classic group protocol's smallest session timeout on a stock broker (group.min.session.timeout.ms).
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500


@dataclass(frozen=True, slots=True)
class ElectionStatus:
    """Whether this member holds the log's partition, since when (time.time()), how often it was elected, and
    whether the group has given it an assignment (empty or not) since it last joined (`settled`)."""

    group: str
    member: str
    elected: bool
    since: float
    elections: int
    last_error: str | None
    settled: bool = False


class WriterElection:
    """One candidate in the group that elects the writer of `config.topic`; `on_change(True/False)` on every change."""

    def __init__(
        self,
        config: KafkaLogConfig,
        member: str,
        on_change: Callable[[bool], None],
        *,
        group_id: str | None = None,
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
        heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
    ) -> None:
        self.config = config
        self.group = group_id or f"kraft-acl-controllers-{config.topic}"
        self.member = member
        self.on_change = on_change
        self._settings: dict[str, Any] = {
            **config.base(),
            "group.id": self.group,
            "client.id": member,
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": heartbeat_interval_ms,
            "partition.assignment.strategy": "cooperative-sticky",
            "enable.auto.commit": False,
            "auto.offset.reset": "latest",  # the member reads nothing: its poll only keeps it in the group
            "isolation.level": "read_committed",
        }
        self._lock = threading.Lock()
        self._owned: set[int] = set()
        self._status = ElectionStatus(self.group, member, False, time.time(), 0, None)
        self._stop = threading.Event()
        self._rejoin = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def elected(self) -> bool:
        """True while the group assigns this member the log's partition."""
        return self._status.elected

    def status(self) -> ElectionStatus:
        """The latest status (an immutable value)."""
        return self._status

    def start(self) -> WriterElection:
        """Join the group in the background (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kraft-acl-election", daemon=True)
            self._thread.start()
        return self

    def rejoin(self) -> None:
        """Leave and join the group again (this member was fenced while elected: let the group decide afresh)."""
        self._rejoin.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Leave the group (another member is elected at once) and stop the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        consumer = Consumer(self._settings)
        try:
            self._subscribe(consumer)
            while not self._stop.is_set():
                if self._rejoin.is_set():
                    self._rejoin.clear()
                    log.info("leaving group %s to let it elect the log's writer again", self.group)
                    consumer.unsubscribe()
                    self._set(set(), settled=False)
                    self._subscribe(consumer)
                self._poll(consumer)
        finally:
            self._set(set(), settled=False)
            try:
                consumer.close()  # LeaveGroup: the partition moves to another member without waiting for a timeout
            except (KafkaException, RuntimeError) as exc:
                log.warning("leaving group %s: %s", self.group, exc)

    def _subscribe(self, consumer: Consumer) -> None:
        consumer.subscribe(
            [self.config.topic],
            on_assign=lambda c, parts: self._assigned(parts, True),
            on_revoke=lambda c, parts: self._assigned(parts, False),
            on_lost=lambda c, parts: self._assigned(parts, False),
        )

    def _poll(self, consumer: Consumer) -> None:
        try:
            message = consumer.poll(0.2)
        except (KafkaException, RuntimeError) as exc:  # a fatal consumer error: say so, keep trying
            self._error(str(exc))
            time.sleep(0.5)
            return
        if message is not None and message.error() is not None:
            self._error(f"{message.error()}")

    def _assigned(self, partitions: list[TopicPartition], added: bool) -> None:
        owned = set(self._owned)
        for tp in partitions:
            (owned.add if added else owned.discard)(tp.partition)
        self._set(owned, settled=added or bool(partitions))

    def _set(self, owned: set[int], settled: bool) -> None:
        with self._lock:
            self._owned = owned
            before = self._status
            elected = 0 in owned
            if elected == before.elected:
                if settled != before.settled:
                    self._status = ElectionStatus(
                        self.group, self.member, elected, before.since, before.elections, before.last_error, settled
                    )
                return
            self._status = ElectionStatus(
                self.group, self.member, elected, time.time(), before.elections + int(elected), None, settled
            )
        log.info(
            "%s %s the log's writer in group %s", self.member, "is elected" if elected else "is no longer", self.group
        )
        self.on_change(elected)

    def _error(self, text: str) -> None:
        with self._lock:
            s = self._status
            self._status = ElectionStatus(s.group, s.member, s.elected, s.since, s.elections, text, s.settled)
        if s.last_error != text:
            log.warning("controller election in group %s: %s", self.group, text)
