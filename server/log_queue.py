"""serve's log records leave the threads that make them through a bounded queue and one writer thread: a stderr
that is not read (a pipe nobody drains, a slow log shipper) blocks only that thread, never the event loop that
answers brokers' decisions (with stderr blocked, one caller's denied self-queries, each an INFO audit line, froze
decisions and SIGTERM). When the queue is full (QUEUE_RECORDS records, or QUEUE_CHARS characters) a record is
dropped and counted, and the count is logged once the
writer catches up, as log4j's asynchronous appenders discard when their buffer is full."""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import queue
import sys
import threading
import time
from logging.handlers import QueueHandler, QueueListener
from typing import NoReturn

QUEUE_RECORDS = 10_000  # records waiting for stderr at most (a few MB)
# and at most this many characters of them: a record's text is up to two 32,767-character names (a Kafka client's group
# id, asked by its broker), so 10,000 records alone let a stderr not read hold 650 MB of serve
QUEUE_CHARS = 16 << 20
FLUSH_AT_EXIT_S = 2.0  # how long an exit waits for the records still queued (a blocked stderr loses them)
log = logging.getLogger("kraft_acl.serve")


class _RecordQueue(queue.Queue[logging.LogRecord]):
    """A queue of prepared records that also counts their characters (under the queue's own lock)."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.chars = 0

    def _put(self, item: logging.LogRecord) -> None:
        self.chars += _chars(item)
        super()._put(item)

    def _get(self) -> logging.LogRecord:
        item = super()._get()
        self.chars -= _chars(item)
        return item


def _chars(record: logging.LogRecord | None) -> int:
    """A queued record's characters (0 for QueueListener's stop sentinel, None)."""
    msg = getattr(record, "msg", None)
    return len(msg) + len(getattr(record, "exc_text", None) or "") if isinstance(msg, str) else 0


class DroppingQueueHandler(QueueHandler):
    """Formats a record's message and exception text on the caller's thread, and queues it without waiting."""

    def __init__(self, records: queue.Queue[logging.LogRecord]) -> None:
        super().__init__(records)
        self.dropped = 0
        self._reported = 0
        self._lock = threading.Lock()

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        """The message merged with its arguments and the traceback as text (the writer's formatter adds them as
        usual: only the message is escaped to one line, the traceback keeps its lines)."""
        record = copy.copy(record)
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        return record

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            held = self.queue.chars if isinstance(self.queue, _RecordQueue) else 0
            if held and held + _chars(record) > QUEUE_CHARS:
                raise queue.Full
            self.queue.put_nowait(record)
        except queue.Full:
            with self._lock:
                self.dropped += 1
            return
        if self.dropped > self._reported:
            with self._lock:
                missed, self._reported = self.dropped - self._reported, self.dropped
            notice = log.makeRecord(
                log.name,
                logging.WARNING,
                __file__,
                0,
                f"{missed} log record(s) dropped: stderr was not read fast enough "
                "(kraft_acl_log_records_dropped_total)",
                (),
                None,
            )
            with contextlib.suppress(queue.Full):
                self.queue.put_nowait(notice)


_installed: list[DroppingQueueHandler] = []  # the process's handler, for the metrics


def dropped_records() -> int:
    """Log records this process dropped because stderr was not read fast enough."""
    return _installed[-1].dropped if _installed else 0


class LogQueue:
    """The root logger's handler (a DroppingQueueHandler) and its writer thread, writing to `handler`."""

    def __init__(self, handler: logging.Handler, size: int = QUEUE_RECORDS) -> None:
        self.records: queue.Queue[logging.LogRecord] = _RecordQueue(size)
        self.handler = DroppingQueueHandler(self.records)
        _installed.append(self.handler)
        self._listener = QueueListener(self.records, handler)
        self._listener.start()  # a daemon thread: an exit never waits for a stderr that is not read

    def flush(self, timeout_s: float = FLUSH_AT_EXIT_S) -> bool:
        """Wait (bounded) until the records queued so far are written; False when stderr did not take them."""
        deadline = time.monotonic() + timeout_s
        while self.records.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self.records.unfinished_tasks

    def exit(self, code: int, message: str | None = None) -> NoReturn:
        """End the process with `code` (after `message` on stderr) once the queued records are written, or at once,
        without the message, if stderr does not take them within FLUSH_AT_EXIT_S (an ordinary exit would flush
        stderr, and wait for it for good)."""
        if not self.flush():
            os._exit(code)
        if message is not None:
            print(message, file=sys.stderr, flush=True)
        sys.exit(code)
