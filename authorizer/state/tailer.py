"""Keeps a node caught up with its log after start-up, and keeps it serving when the log is unreachable.

A `Tailer` owns one background thread that calls `MetadataLoader.catch_up` every `interval_s`, or as soon as
a batch is committed where the log can say so (a long poll: `LogBackend.wait_for_append`, the Kafka topic).
Readers of the authorizer are never blocked: a failed catch-up leaves the last published state in
place (KIP-801: always some batch boundary of the log). The tailer never dies quietly: every
exception is caught, logged (once per streak, with what it is) and reported in `status()` with
since when it has failed; it is retried with a growing delay (up to `max_backoff_s`), since it may
be transient (EMFILE, EIO, a broker outage). A divergence (the log no longer holds what the node
applied) is not retried: the tailer stops advancing for good and says so in `status().diverged`.
`status()` may be read from any thread (an immutable value swapped by one reference).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from kraftacl.authorizer.state.loader import MetadataLoader
from kraftacl.metadata_log.errors import DivergenceError, LogError
from kraftacl.metadata_log.pace import pace_thread

log = logging.getLogger(__name__)
# A serve's decisions follow the log by up to this much more after the log comes back from an outage: keep it short.
MAX_BACKOFF_S = 1.0
# The longest one wait in the log lasts (whatever the interval): `stop` is not held up longer, and the log's end is
# read at least this often, which keeps `status()` and the lag current while nothing is written.
LONG_POLL_MAX_S = 0.25


@dataclass(frozen=True, slots=True)
class TailStatus:
    """What the tailer last saw: applied offset, the log's high-water mark, and the last error if any.

    `since` is the wall-clock time (time.time()) the current run of failures began, `failures` its
    length; `diverged` is set for good once the log stopped holding what was applied.
    """

    next_offset: int
    high_watermark: int | None
    last_error: str | None
    last_success_monotonic: float
    since: float | None = None
    failures: int = 0
    diverged: str | None = None
    started_monotonic: float = 0.0  # when the poll that produced this status began (its high-water mark is newer)

    @property
    def lag(self) -> int | None:
        """Records the node is behind the log (None while the log is unreachable)."""
        return None if self.high_watermark is None else max(0, self.high_watermark - self.next_offset)

    @property
    def following(self) -> bool:
        """True while the node follows its log: the last poll succeeded and it never diverged (readiness)."""
        return self.last_error is None and self.diverged is None


class Tailer:
    """Background catch-up loop; `status()` reports lag and errors, `stop()` ends it."""

    def __init__(
        self,
        loader: MetadataLoader,
        interval_s: float = 0.2,
        max_backoff_s: float = MAX_BACKOFF_S,
        *,
        long_poll: bool = True,
    ) -> None:
        self.loader = loader
        self.interval_s = interval_s
        self.long_poll = long_poll  # False: only the interval and pokes (a node that reads when asked)
        self.max_backoff_s = max(max_backoff_s, interval_s)
        self._stop = threading.Event()
        self._poked = threading.Event()  # set by `poke` (and `stop`): poll now rather than after the interval
        self._thread: threading.Thread | None = None
        self._status = TailStatus(loader.next_offset, None, None, time.monotonic())

    def start(self) -> Tailer:
        """Start the loop thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kraft-acl-tailer", daemon=True)
            self._thread.start()
        return self

    def poll_once(self) -> TailStatus:
        """One catch-up attempt; errors are recorded, never raised (the node keeps serving)."""
        if self._status.diverged is not None:
            return self._status  # applies nothing after a divergence
        started = time.monotonic()
        try:
            self.loader.catch_up()
            hwm = self.loader.backend.high_watermark()
            if self._status.failures:
                log.info("metadata log followed again after %d failed attempts", self._status.failures)
            self._status = TailStatus(self.loader.next_offset, hwm, None, time.monotonic(), started_monotonic=started)
        except DivergenceError as exc:
            offset = self.loader.next_offset
            log.error("metadata log diverged: %s; this node stops following it at offset %d", exc, offset)
            self._status = self._failed(exc, started, diverged=str(exc))
        except Exception as exc:  # every failure is reported, none ends the loop
            failed = self._failed(exc, started)
            if failed.last_error != self._status.last_error:  # once per streak, and when the error changes
                kind = "" if isinstance(exc, LogError) else f" ({type(exc).__name__})"
                log.warning(
                    "metadata log unreachable%s, serving the state at offset %d, retrying: %s",
                    kind,
                    self.loader.next_offset,
                    failed.last_error,
                    exc_info=not isinstance(exc, LogError),
                )
            self._status = failed
        return self._status

    def _failed(self, exc: Exception, started: float, diverged: str | None = None) -> TailStatus:
        s = self._status
        since = s.since if s.since is not None else time.time()
        hwm = self._best_effort_hwm() if diverged is not None else None
        message = str(exc) or type(exc).__name__
        offset, failures = self.loader.next_offset, s.failures + 1
        return TailStatus(offset, hwm, message, s.last_success_monotonic, since, failures, diverged, started)

    def _best_effort_hwm(self) -> int | None:
        try:
            return self.loader.backend.high_watermark()
        except Exception:  # the log may be what failed
            return None

    def delay_s(self) -> float:
        """How long the loop waits before the next poll: `interval_s`, doubling per failure up to `max_backoff_s`."""
        failures = self._status.failures
        return min(self.interval_s * (2 ** min(failures, 20)), self.max_backoff_s) if failures else self.interval_s

    def _run(self) -> None:
        pace_thread()  # a large batch applied here rests now and then: decisions keep being answered meanwhile
        applied = -1
        while not self._stop.is_set():
            status = self.poll_once()
            waited = status.following and self._long_poll(status, status.next_offset != applied)
            applied = status.next_offset
            if not waited:
                self._poked.wait(self.delay_s())
            self._poked.clear()  # a poke from now on is seen by the poll that follows, or wakes the next wait

    def _long_poll(self, status: TailStatus, progressed: bool) -> bool:
        """After a poll that succeeded: poll again at once if the log holds more (and the poll advanced: a log that
        stalls is not polled in a busy loop), else wait in the log for its next batch (up to the interval) where
        the backend can. False: the loop sleeps the interval instead."""
        if status.lag:
            return progressed
        if not self.long_poll:
            return False
        try:
            wait = min(self.interval_s, LONG_POLL_MAX_S)
            return self.loader.backend.wait_for_append(status.next_offset, wait, self._poked)  # a poke ends it
        except Exception as exc:  # the next poll reports a log that is down; the wait only falls back to sleeping
            log.debug("metadata log long poll failed, sleeping the interval instead: %s", exc)
            return False

    def poke(self) -> None:
        """Poll now (or right after the poll in progress) instead of after the interval; from any thread."""
        self._poked.set()

    def status(self) -> TailStatus:
        """The latest status (lag, error, since when, divergence, last success)."""
        return self._status

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and wait for the thread."""
        self._stop.set()
        self._poked.set()
        if self._thread is not None:
            self._thread.join(timeout)
