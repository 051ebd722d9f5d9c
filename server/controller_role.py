"""Whether this serve writes the metadata log now: the active controller, a standby, or no controller at all.

On the embedded file log a controller-role serve holds the directory's writer lock from start-up: it is active for
good. On a Kafka-backed log every controller-role serve is a candidate in Kafka's group election
(`metadata_log.backends.kafka_topic.election`): the one the group elects claims the writer role
(`KafkaLog.claim_writer`, whose `init_transactions` fences every earlier writer) and the others answer ACL writes
with 421 NOT_CONTROLLER until the group elects them. A writer fenced while it believes itself elected (a
transaction timed out, or another process claimed the log outside the group) leaves and rejoins the group, which
decides afresh; it never claims the log back on its own.

Thread safety: `active` and `status()` are read from any thread (values swapped under a lock); claims and releases
run on serve's one writer thread, in order with the ACL writes they gate.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.errors import LogError
from kraftacl.server.config import ServeConfig
from kraftacl.server.log_backend import kafka_config

if TYPE_CHECKING:
    from kraftacl.metadata_log.backends.kafka_topic.election import WriterElection
    from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLog

log = logging.getLogger("kraft_acl.serve.controller")
MAX_CLAIM_BACKOFF_S = 5.0


@dataclass(frozen=True, slots=True)
class RoleStatus:
    """What /v1/status says of the controller role."""

    active: bool
    epoch: int | None  # the writer epoch of this serve's batches while active
    group: str | None  # the Kafka consumer group that elects the active controller (None: the embedded log)
    since: float  # time.time() of the last change
    elections: int  # how often this serve was elected


class ControllerRole:
    """The controller role of one serve process (see the module docstring)."""

    def __init__(self, config: ServeConfig, backend: LogBackend, writer: ThreadPoolExecutor) -> None:
        self.config = config
        self.backend = backend
        self.writer = writer
        self.kafka = config.controller and config.log.bootstrap_servers is not None
        self._lock = threading.Lock()
        self._term = 0  # bumped on every election change: a claim of an older term gives up
        self._stopped = False
        self._election: WriterElection | None = None
        self._status = RoleStatus(config.controller and not self.kafka, None, None, time.time(), 0)

    @property
    def active(self) -> bool:
        """True while this serve may write the log."""
        return self._status.active

    @property
    def electing(self) -> bool:
        """True while an ACL write is worth waiting for: the group has not answered this serve since it joined, or
        elected it and the claim is under way (a standby the group has answered is not electing)."""
        election = self._election
        if not self.kafka or self._stopped or self.active:
            return False
        if election is None:
            return False  # not started (still loading): nothing to wait for
        status = election.status()
        return not status.settled or status.elected

    def status(self) -> RoleStatus | None:
        """The role's status (None without the controller role)."""
        return self._status if self.config.controller else None

    def start(self) -> None:
        """On a Kafka-backed log, join the election (after the initial load: a standby is ready to take over)."""
        if not self.kafka:
            return
        from kraftacl.metadata_log.backends.kafka_topic.election import WriterElection

        lc = self.config.log
        member = f"kraft-acl-serve-node-{self.config.authorizer.node_id}"
        self._election = WriterElection(
            kafka_config(self.config),
            member,
            self._on_change,
            group_id=lc.election_group,
            session_timeout_ms=lc.election_session_timeout_ms,
            heartbeat_interval_ms=lc.election_heartbeat_interval_ms,
        ).start()
        self._set(False, None)

    def _on_change(self, elected: bool) -> None:
        with self._lock:
            self._term += 1
            term = self._term
        if not elected:
            self._set(False, None)
        if not self._stopped:
            self.writer.submit(self._claim if elected else self._release, term)

    def _claim(self, term: int) -> None:
        """Claim the writer role for `term`, retrying (backing off) while Kafka cannot be reached and still elected."""
        delay = 0.2
        while not self._stopped and term == self._term:
            try:
                epoch = self._kafka_log().claim_writer()
            except LogError as exc:
                log.warning("elected, but cannot claim the metadata log's writer role yet, retrying: %s", exc)
                time.sleep(delay)
                delay = min(delay * 2, MAX_CLAIM_BACKOFF_S)
                continue
            if not self._set(True, epoch, term):  # the group moved on while we claimed: let the next member write
                self._kafka_log().release_writer()
                return
            log.info("active controller: this serve writes the metadata log at epoch %d", epoch)
            return

    def _release(self, term: int) -> None:
        self._kafka_log().release_writer()
        log.info("standby controller: another serve writes the metadata log")

    def on_fenced(self) -> None:
        """An append was fenced while this serve believed itself active: stop writing and let the group decide."""
        self._set(False, None)
        if self._election is not None:
            log.warning("fenced while elected: rejoining group %s so it elects the writer afresh", self._election.group)
            self._election.rejoin()

    def stop(self) -> None:
        """Leave the election (the group elects another serve at once) and stop writing."""
        self._stopped = True
        self._set(False, None)
        if self._election is not None:
            self._election.stop()

    def _set(self, active: bool, epoch: int | None, term: int | None = None) -> bool:
        """Swap the status in; with `term`, only while no election change came after it (False: nothing set)."""
        with self._lock:
            if term is not None and term != self._term:
                return False
            before = self._status
            group = self._election.group if self._election is not None else None
            elections = self._election.status().elections if self._election is not None else 0
            since = before.since if before.active == active else time.time()
            self._status = RoleStatus(active, epoch, group, since, elections)
            return True

    def _kafka_log(self) -> KafkaLog:
        from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLog

        assert isinstance(self.backend, KafkaLog), "the controller election runs on a Kafka-backed log only"
        return self.backend
