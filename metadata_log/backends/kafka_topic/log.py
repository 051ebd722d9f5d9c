"""A LogBackend on a real Kafka topic through confluent-kafka: one Kafka message per batch, read_committed.

Thread safety: a `KafkaLog` serializes its own calls with a lock; use one instance per thread for
parallel reads. confluent-kafka is imported only in this package (docs/ARCHITECTURE.md).

Design:
* **Topic.** One partition, `cleanup.policy=delete`, infinite retention, replication factor and
  `min.insync.replicas` from the config (`client.ensure_topic`). The default name is `kraft-acl-metadata`
  because a real broker refuses `__cluster_metadata` ("Creation of internal topic __cluster_metadata is
  prohibited."): that name belongs to KRaft's own Raft log.
* **Atomic batches.** A batch is ONE Kafka message, so it is visible whole or not at all. Its value is
  the file log's CRC-checked frame (`file_format.encode_frame`): logical base offset, record count,
  writer epoch, timestamp, Avro payload; the writer schema travels in the `kraft-acl-schema` header.
  Logical offsets are contiguous record offsets exactly as in the file log, independent of Kafka's
  offsets (which transaction markers interleave). An append too large for one message (over `frame_limit`:
  a bulk import) is written as consecutive batches in one transaction, which read_committed readers see
  all together or not at all (a follower may apply them one after another).
* **Exactly once, one writer.** The writer is a transactional producer (`acks=all`, idempotent); each
  append is one transaction. Every writer of a topic shares one `transactional.id`, so the one that
  claims the role last (`claim_writer`: `init_transactions`) fences every earlier one, whose next append
  fails with LogFencedError and never reaches the log (an open transaction of the old writer is aborted,
  one being committed completes first). The new writer then reads the committed tail to learn the next
  logical offset and writes under a new epoch. `release_writer` gives the role up (appends then raise
  NotWriterError); who claims it when several processes could is `election.WriterElection`'s business.
* **Reads.** A read_committed consumer; the high-water mark is the last stable offset (LSO) turned
  into a logical offset by reading the last committed message below it. Seeking to a logical offset
  uses a cache of (logical base -> Kafka offset) and otherwise a binary search over Kafka offsets.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, Self

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kraftacl.metadata_log.backend import AppendResult, LogBackend
from kraftacl.metadata_log.backends.kafka_topic.client import (
    KafkaLogConfig,
    KafkaLogError,
    LogFencedError,
    LogMovedError,
    LogUnavailableError,
    NotWriterError,
    UnsafeTopicError,
    ensure_topic,
    kafka_error,
)
from kraftacl.metadata_log.backends.kafka_topic.message import DEFAULT_TOPIC, SCHEMA_HEADER, batch_frames
from kraftacl.metadata_log.backends.kafka_topic.stream import ReadStream
from kraftacl.metadata_log.backends.memory import check_records
from kraftacl.metadata_log.codec import DEFAULT_CODEC, Codec
from kraftacl.metadata_log.errors import LogClosedError, OffsetOutOfRangeError
from kraftacl.metadata_log.records import MetadataRecord, RecordBatch

LIBRDKAFKA_MESSAGE_MAX_BYTES = 1_000_000  # the producer's default message.max.bytes
MESSAGE_OVERHEAD_BYTES = 16_384  # a message's key, schema header (about 1.5 KB) and record and batch headers, with room
# How long the broker holds the watch consumer's fetch for data past the last stable offset (a commit answers it
# at once), and how little it prefetches: it only learns that a message is there, `read` fetches it again.
WATCH_FETCH_WAIT_MS = 500
WATCH_SETTINGS = {
    "fetch.wait.max.ms": WATCH_FETCH_WAIT_MS,
    "enable.partition.eof": False,
    "queued.max.messages.kbytes": 1024,
}


class KafkaLog(LogBackend):
    """The metadata log on one Kafka partition; `writer=True` makes this instance the (fencing) writer."""

    def __init__(self, config: KafkaLogConfig, *, writer: bool = False, codec: Codec | None = None) -> None:
        self.config = config
        self._codec = DEFAULT_CODEC if codec is None else codec
        self._tp = TopicPartition(config.topic, 0)
        self._write_lock = threading.Lock()  # one append (transaction) at a time; close
        self._index_lock = threading.Lock()  # the logical -> Kafka offset cache
        self._watch_lock = threading.Lock()  # the watch consumer's creation and close (never behind an append)
        self._closed = False
        self._bases: list[int] = []  # sorted logical base offsets seen, and their Kafka offsets
        self._kafka: dict[int, int] = {}
        self._tail: tuple[int, int] | None = None  # (LSO, logical end) last computed
        self._start: tuple[int, int] | None = None  # (low watermark, logical log start) last computed
        if config.create_topic or writer:
            ensure_topic(config)
        self._probe = ReadStream(self._new_consumer(), config)  # watermarks, tail and seek lookups
        self._reader = ReadStream(self._new_consumer(), config)  # read() iterations
        # the tail's long poll (`wait_for_append`); made on its first use, since only a follower's tailer waits
        self._watch: ReadStream | None = None
        self._producer: Producer | None = None
        self._fenced: LogFencedError | None = None  # fenced: no append until the role is claimed again
        self._needs_reset = False  # a failed transaction left the producer unusable: rebuild it first
        self.epoch = 0
        self._next = 0
        if writer:
            self.claim_writer()

    def _new_consumer(self, **settings: Any) -> Consumer:
        return Consumer(
            {
                **self.config.base(),
                "group.id": f"kraft-acl-reader-{uuid.uuid4()}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                # A metadata log is small and read to its end: answer at once rather than wait for more data.
                "fetch.wait.max.ms": 5,
                **settings,
            }
        )

    # ---- writing --------------------------------------------------------------------------------------
    @property
    def is_writer(self) -> bool:
        """True while this instance holds the writer role (claimed, and not fenced or released since)."""
        return self._producer is not None and self._fenced is None

    def claim_writer(self) -> int:
        """Become the writer: a new transactional producer whose `init_transactions` fences every other writer of
        this topic, then the committed tail (next offset, and a new epoch, which it returns)."""
        with self._write_lock:
            self._check_open()
            self._drop_producer()
            self._open_writer()
            return self.epoch

    def release_writer(self) -> None:
        """Give the writer role up (another process was elected): appends raise NotWriterError until a claim."""
        with self._write_lock:
            self._drop_producer()

    def _drop_producer(self) -> None:
        if self._producer is not None:
            self._producer.flush(0)  # nothing is in flight outside a transaction; never wait for a dead broker
        self._producer, self._fenced, self._needs_reset = None, None, False

    def _open_writer(self) -> None:
        tid = self.config.transactional_id or f"kraft-acl-controller-{self.config.topic}"
        producer = Producer(self.config.producer_settings(tid))
        try:
            producer.init_transactions(self.config.timeout_s)
        except KafkaException as exc:
            raise kafka_error(f"cannot become the writer of {self.config.topic} (transactional.id {tid})", exc) from exc
        last = self._last_batch()  # complete: init_transactions finished or aborted every earlier writer's transaction
        self._producer = producer
        self.epoch = (last.epoch if last is not None else 0) + 1
        self._next = last.next_offset if last is not None else 0

    def append(self, records: Sequence[MetadataRecord], *, timestamp_ms: int | None = None) -> AppendResult:
        with self._write_lock:
            self._check_open()
            if self._producer is None:
                raise NotWriterError(f"append on {self.config.topic}: this process does not hold the writer role")
            if self._fenced is not None:
                raise LogFencedError(str(self._fenced))
            records = check_records(records)
            if self._needs_reset:
                self._reset_writer()
            ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
            base = self._next
            parts = batch_frames(self._codec, base, records, self.epoch, ts, self.frame_limit)
            headers: list[tuple[str, str | bytes | None]] = [
                (SCHEMA_HEADER, self._codec.writer_schema.json_text.encode())
            ]
            delivered: dict[int, int] = {}  # each part's logical base -> its Kafka offset

            def on_delivery(err: KafkaError | None, msg: Any) -> None:
                if err is None:
                    delivered[int.from_bytes(msg.key(), "big")] = msg.offset()

            try:
                self._producer.begin_transaction()
                for part_base, frame in parts:
                    self._producer.produce(
                        self.config.topic,
                        key=part_base.to_bytes(8, "big"),  # unique per batch: even compaction could never merge two
                        value=frame,
                        partition=0,
                        headers=headers,
                        timestamp=ts,
                        on_delivery=on_delivery,
                    )
                self._producer.commit_transaction(self.config.timeout_s)
            except KafkaException as exc:
                error = kafka_error(f"append to {self.config.topic} at offset {base}", exc)
                if isinstance(error, LogFencedError):
                    self._fenced = error
                else:
                    self._maybe_abort()
                    self._needs_reset = True
                    error = type(error)(f"{error} (the batch may or may not be committed: replay the log to see)")
                raise error from exc
            self._next = base + len(records)
            for part_base, kafka_offset in delivered.items():
                self._remember(part_base, kafka_offset)
            # returned once every reader sees it (a shell or a broker-role serve asked next); past the timeout it is
            # still committed, so no error here: `high_watermark` waits again and names the timeout
            self._await_committed(self._next)
            return AppendResult(base, base + len(records) - 1, self.epoch)

    def _reset_writer(self) -> None:
        """After an append of unknown outcome: fence our own stuck producer (aborting its transaction, or letting a
        commit under way complete) and re-read the tail. If that batch did land, the caller validated its new batch
        against a state without it: refuse (nothing written) so it catches up and validates again."""
        uncertain = self._next
        self._open_writer()
        self._needs_reset = False
        if self._next != uncertain:
            raise LogMovedError(
                f"append to {self.config.topic}: the earlier append of unknown outcome at offset {uncertain} was "
                f"committed (the log now ends at {self._next}); nothing was written: catch up and try again"
            )

    @property
    def frame_limit(self) -> int:
        """The largest batch frame written as one Kafka message: the producer's `message.max.bytes` (librdkafka's
        1,000,000 unless `metadata.log.kafka.message.max.bytes` says otherwise) less room for the key, the schema
        header and Kafka's record overhead."""
        return int(self.config.client.get("message.max.bytes", LIBRDKAFKA_MESSAGE_MAX_BYTES)) - MESSAGE_OVERHEAD_BYTES

    def _maybe_abort(self) -> None:
        assert self._producer is not None
        with contextlib.suppress(KafkaException):  # fenced or fatal: the transaction can never commit anyway
            self._producer.abort_transaction(self.config.timeout_s)

    # ---- reading --------------------------------------------------------------------------------------
    def _watermarks(self) -> tuple[int, int]:
        return self._probe.watermarks()

    def _consume(self, start: int, end: int) -> Iterator[tuple[int, RecordBatch]]:
        for offset, batch in self._probe.consume(start, end, self._codec):
            self._remember(batch.base_offset, offset)
            yield offset, batch

    def _remember(self, base: int, kafka_offset: int) -> None:
        with self._index_lock:
            if base not in self._kafka:
                bisect.insort(self._bases, base)
            self._kafka[base] = kafka_offset

    def _first_at_or_after(self, kafka_offset: int, end: int) -> tuple[int, RecordBatch] | None:
        return next(iter(self._consume(kafka_offset, end)), None)

    def _seek_kafka_offset(self, logical: int, low: int, high: int) -> int:
        """The Kafka offset of the message whose batch contains `logical` (or the first after it)."""
        with self._index_lock:
            i = bisect.bisect_right(self._bases, logical) - 1
            lo = max(low, self._kafka[self._bases[i]]) if i >= 0 else low
        hi = high
        while lo < hi:  # invariant: the wanted message is at or after lo, and before hi
            mid = (lo + hi) // 2
            found = self._first_at_or_after(mid, high)
            if found is None or found[1].base_offset > logical:
                hi = mid
            elif found[1].next_offset <= logical:
                lo = found[0] + 1
            else:
                return found[0]
        return lo

    def _last_batch(self) -> RecordBatch | None:
        low, high = self._watermarks()
        last = None
        if high > low:
            for _, batch in self._consume(max(low, high - 16), high):
                last = batch
            if last is None:  # only transaction markers or aborted data near the end: look further back
                for _, batch in self._consume(low, high):
                    last = batch
        if last is None and low > 0:
            raise KafkaLogError(
                f"{self.config.topic}: every message below Kafka offset {high} was deleted (log start {low}), so "
                "the next logical offset is unknown; restore the log or start a new topic"
            )
        return last

    def read(self, from_offset: int = 0) -> Iterator[RecordBatch]:
        self._check_open()
        hwm = self.high_watermark()
        start_offset = self.log_start_offset()
        if not start_offset <= from_offset <= hwm:
            raise OffsetOutOfRangeError(from_offset, start_offset, hwm)
        if from_offset == hwm:
            return iter(())
        low, high = self._watermarks()
        start = self._seek_kafka_offset(from_offset, low, high)
        return self._read_from(start, high, from_offset, hwm)

    def _read_from(self, start: int, high: int, from_offset: int, hwm: int) -> Iterator[RecordBatch]:
        for offset, batch in self._reader.consume(start, high, self._codec):
            self._remember(batch.base_offset, offset)
            if batch.base_offset >= hwm:
                return
            if batch.next_offset > from_offset:
                yield batch

    def wait_for_append(self, next_offset: int, timeout_s: float, interrupt: threading.Event | None = None) -> bool:
        """Long-poll Kafka for the message after the committed end last read, when that end is `next_offset`.

        The watch consumer's fetch waits at the broker (`WATCH_FETCH_WAIT_MS`) until the last stable offset
        moves, so a follower applies a commit about a round trip after it, not up to a polling interval later.
        Where the end last read is not `next_offset` (the log holds more, or it was never read) it returns at once.
        """
        self._check_open()
        tail = self._tail
        if tail is None or tail[1] != next_offset:
            return True
        watch = self._watch
        if watch is None:
            with self._watch_lock:  # close() takes it: no watch is made for a closed log
                self._check_open()
                if self._watch is None:
                    self._watch = ReadStream(self._new_consumer(**WATCH_SETTINGS), self.config)
                watch = self._watch
        watch.wait_past(tail[0], timeout_s, interrupt)
        return True

    def high_watermark(self) -> int:
        self._check_open()
        target = self._next if self._producer is not None else 0
        # Our own commits are durable, but the broker writes transaction markers asynchronously: wait
        # (bounded, holding no lock) until the last stable offset covers them, so the writer reads its writes.
        end = self._await_committed(target)
        if end < target:
            raise LogUnavailableError(
                f"{self.config.topic}: the last stable offset did not reach "
                f"this writer's offset {target} within {self.config.timeout_s}s"
            )
        return end

    def _await_committed(self, target: int) -> int:
        """The committed end once it reaches `target` (the broker answers a transaction's commit before it writes the
        markers, and read_committed readers stop below a batch until then), or as it is after the timeout."""
        deadline = time.monotonic() + self.config.timeout_s
        end = self._committed_end()
        while end < target and time.monotonic() < deadline:
            time.sleep(0.002)
            end = self._committed_end()
        return end

    def _committed_end(self) -> int:
        """The logical offset after the last batch below the last stable offset."""
        _, high = self._watermarks()
        if self._tail is not None and self._tail[0] == high:
            return self._tail[1]
        last = self._last_batch()
        end = 0 if last is None else last.next_offset
        self._tail = (high, end)
        return end

    def log_start_offset(self) -> int:
        self._check_open()
        low, high = self._watermarks()
        if self._start is not None and self._start[0] == low:
            return self._start[1]  # the first message only changes when retention moves `low`
        first = self._first_at_or_after(low, high) if high > low else None
        start = 0 if first is None else first[1].base_offset
        if first is not None:
            self._start = (low, start)
        return start

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"the Kafka log on {self.config.topic}")

    def __enter__(self) -> Self:  # narrower than LogBackend's, so `with KafkaLog(...) as log` keeps the type
        return self

    def close(self) -> None:
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
            self._probe.close()
            self._reader.close()
            with self._watch_lock:
                if self._watch is not None:
                    self._watch.close()
            if self._producer is not None:
                self._producer.flush(5)


__all__ = [
    "DEFAULT_TOPIC",
    "KafkaLog",
    "KafkaLogConfig",
    "KafkaLogError",
    "LogFencedError",
    "LogMovedError",
    "LogUnavailableError",
    "NotWriterError",
    "UnsafeTopicError",
]
