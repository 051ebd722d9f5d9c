"""A LogBackend on a real Kafka topic through confluent-kafka: one Kafka message per batch, read_committed.

Thread safety: a `KafkaLog` serializes its own calls with a lock; use one instance per thread for
parallel reads. confluent-kafka is imported only here (docs/ARCHITECTURE.md).

Design:
* **Topic.** One partition, `cleanup.policy=delete`, infinite retention, replication factor and
  `min.insync.replicas` from the config. The default name is `kraft-acl-metadata` because a real
  broker refuses `__cluster_metadata` ("Creation of internal topic __cluster_metadata is
  prohibited."): that name belongs to KRaft's own Raft log.
* **Atomic batches.** A batch is ONE Kafka message, so it is visible whole or not at all. Its value is
  the file log's CRC-checked frame (`file_format.encode_frame`): logical base offset, record count,
  writer epoch, timestamp, Avro payload; the writer schema travels in the `kraft-acl-schema` header.
  Logical offsets are contiguous record offsets exactly as in the file log, independent of Kafka's
  offsets (which transaction markers interleave).
* **Exactly once, one writer.** The writer is a transactional producer (`acks=all`, idempotent); each
  append is one transaction. A second writer with the same `transactional.id` fences the first, whose
  next append fails with LogFencedError and never reaches the log. After `init_transactions` the new
  writer reads the committed tail to learn the next logical offset.
* **Reads.** A read_committed consumer; the high-water mark is the last stable offset (LSO) turned
  into a logical offset by reading the last committed message below it. Seeking to a logical offset
  uses a cache of (logical base -> Kafka offset) and otherwise a binary search over Kafka offsets.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kraftacl.metadata_log.backend import AppendResult, LogBackend
from kraftacl.metadata_log.backends.file.format import encode_frame
from kraftacl.metadata_log.backends.kafka_topic.message import DEFAULT_TOPIC, SCHEMA_HEADER, decode_message
from kraftacl.metadata_log.backends.memory import check_records
from kraftacl.metadata_log.codec import DEFAULT_CODEC, Codec
from kraftacl.metadata_log.errors import LogClosedError, LogError, OffsetOutOfRangeError
from kraftacl.metadata_log.records import MetadataRecord, RecordBatch

KAFKA_LOGGER = logging.getLogger("kraft_acl.kafka")


class KafkaLogError(LogError):
    """A Kafka-side failure, with the topic and the reason."""


class LogUnavailableError(KafkaLogError):
    """The broker did not answer in time (down, unreachable, or partitioned)."""


class LogFencedError(KafkaLogError):
    """Another writer with the same transactional id took over; this writer can never append again."""


class UnsafeTopicError(KafkaLogError):
    """The topic exists with settings that would lose or reorder events."""


@dataclass(frozen=True)
class KafkaLogConfig:
    """Where the log lives and how to reach it; `client` passes security settings straight to librdkafka."""

    bootstrap_servers: str
    topic: str = DEFAULT_TOPIC
    transactional_id: str | None = None
    replication_factor: int = 1
    min_insync_replicas: int = 1
    create_topic: bool = True
    allow_unsafe_topic: bool = False
    timeout_s: float = 30.0
    client: dict[str, str] = field(default_factory=dict)

    def base(self) -> dict[str, Any]:
        """Settings shared by every client; librdkafka's own log lines go to the `kraft_acl.kafka` logger."""
        return {"bootstrap.servers": self.bootstrap_servers, "logger": KAFKA_LOGGER, **self.client}


def _error(prefix: str, exc: BaseException) -> KafkaLogError:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err = exc.args[0]
        text = f"{prefix}: {err.name()}: {err.str()}"
        if err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH):
            return LogFencedError(text + " (another writer took over this log)")
        if err.code() in (
            KafkaError._TIMED_OUT,
            KafkaError._TRANSPORT,
            KafkaError._ALL_BROKERS_DOWN,
            KafkaError._UNKNOWN_PARTITION,  # what the metadata cache says while the broker is down
            KafkaError.REQUEST_TIMED_OUT,
            KafkaError._MSG_TIMED_OUT,
        ):
            return LogUnavailableError(text)
        if err.fatal():
            return LogFencedError(text + " (fatal producer error: this writer is fenced)")
        return KafkaLogError(text)
    return KafkaLogError(f"{prefix}: {exc}")


def ensure_topic(config: KafkaLogConfig) -> None:
    """Create the topic if missing with event-log settings; refuse (or warn about) an unsafe existing one."""
    admin = AdminClient(config.base())
    wanted = {
        "cleanup.policy": "delete",
        "retention.ms": "-1",
        "retention.bytes": "-1",
        "min.insync.replicas": str(config.min_insync_replicas),
    }
    try:
        meta = admin.list_topics(topic=config.topic, timeout=config.timeout_s)
    except KafkaException as exc:
        raise _error(f"cannot reach Kafka at {config.bootstrap_servers}", exc) from exc
    topic = meta.topics.get(config.topic)
    if topic is None or topic.error is not None:
        if not config.create_topic:
            raise KafkaLogError(f"topic {config.topic} does not exist and topic creation is disabled")
        new = NewTopic(config.topic, num_partitions=1, replication_factor=config.replication_factor, config=wanted)
        try:
            admin.create_topics([new], request_timeout=config.timeout_s)[config.topic].result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise _error(f"cannot create topic {config.topic}", exc) from exc
        return
    problems = [] if len(topic.partitions) == 1 else [f"{len(topic.partitions)} partitions (need 1)"]
    resource = ConfigResource(ConfigResource.Type.TOPIC, config.topic)
    try:
        entries = admin.describe_configs([resource], request_timeout=config.timeout_s)[resource].result()
    except KafkaException as exc:
        raise _error(f"cannot describe topic {config.topic}", exc) from exc
    policy = entries["cleanup.policy"].value
    if "compact" in (policy or ""):
        problems.append(f"cleanup.policy={policy} (compaction drops events)")
    retention = entries["retention.ms"].value
    if retention not in ("-1", None):
        problems.append(f"retention.ms={retention} (old events would be deleted; snapshots must then cover them)")
    if problems and not config.allow_unsafe_topic:
        raise UnsafeTopicError(f"topic {config.topic} is unsafe for an event log: {'; '.join(problems)}")


class KafkaLog(LogBackend):
    """The metadata log on one Kafka partition; `writer=True` makes this instance the (fencing) writer."""

    def __init__(self, config: KafkaLogConfig, *, writer: bool = False, codec: Codec | None = None) -> None:
        self.config = config
        self._codec = DEFAULT_CODEC if codec is None else codec
        self._tp = TopicPartition(config.topic, 0)
        self._write_lock = threading.Lock()  # one append (transaction) at a time; close
        self._index_lock = threading.Lock()  # the logical -> Kafka offset cache
        self._closed = False
        self._bases: list[int] = []  # sorted logical base offsets seen, and their Kafka offsets
        self._kafka: dict[int, int] = {}
        self._tail: tuple[int, int] | None = None  # (LSO, logical end) last computed
        self._start: tuple[int, int] | None = None  # (low watermark, logical log start) last computed
        if config.create_topic or writer:
            ensure_topic(config)
        self._probe = _Stream(self._new_consumer(), config)  # watermarks, tail and seek lookups
        self._reader = _Stream(self._new_consumer(), config)  # read() iterations
        self._producer: Producer | None = None
        self._fenced: LogFencedError | None = None  # once fenced, always fenced
        self._needs_reset = False  # a failed transaction left the producer unusable: rebuild it first
        self.epoch = 0
        if writer:
            self._open_writer()

    def _new_consumer(self) -> Consumer:
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
            }
        )

    # ---- writing --------------------------------------------------------------------------------------
    def _open_writer(self) -> None:
        tid = self.config.transactional_id or f"kraft-acl-controller-{self.config.topic}"
        self._producer = Producer(
            {
                **self.config.base(),
                "transactional.id": tid,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 0,
            }
        )
        try:
            self._producer.init_transactions(self.config.timeout_s)
        except KafkaException as exc:
            raise _error(f"cannot become the writer of {self.config.topic} (transactional.id {tid})", exc) from exc
        last = self._last_batch()
        self.epoch = (last.epoch if last is not None else 0) + 1
        self._next = last.next_offset if last is not None else 0

    def append(self, records: Sequence[MetadataRecord], *, timestamp_ms: int | None = None) -> AppendResult:
        with self._write_lock:
            self._check_open()
            if self._producer is None:
                raise KafkaLogError(f"append on {self.config.topic}: this KafkaLog was opened as a reader")
            if self._fenced is not None:
                raise LogFencedError(str(self._fenced))
            records = check_records(records)
            if self._needs_reset:
                self._open_writer()  # fences our own stuck producer, aborts its transaction, re-reads the tail
                self._needs_reset = False
            ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
            base = self._next
            frame = encode_frame(base, len(records), self.epoch, ts, self._codec.encode(records))
            headers: list[tuple[str, str | bytes | None]] = [
                (SCHEMA_HEADER, self._codec.writer_schema.json_text.encode())
            ]
            delivered: list[int] = []

            def on_delivery(err: KafkaError | None, msg: Any) -> None:
                if err is None:
                    delivered.append(msg.offset())

            try:
                self._producer.begin_transaction()
                self._producer.produce(
                    self.config.topic,
                    key=base.to_bytes(8, "big"),  # unique per batch: even compaction could never merge two
                    value=frame,
                    partition=0,
                    headers=headers,
                    timestamp=ts,
                    on_delivery=on_delivery,
                )
                self._producer.commit_transaction(self.config.timeout_s)
            except KafkaException as exc:
                error = _error(f"append to {self.config.topic} at offset {base}", exc)
                if isinstance(error, LogFencedError):
                    self._fenced = error
                else:
                    self._maybe_abort()
                    self._needs_reset = True
                    error = type(error)(f"{error} (the batch may or may not be committed: replay the log to see)")
                raise error from exc
            self._next = base + len(records)
            if delivered:
                self._remember(base, delivered[0])
            return AppendResult(base, base + len(records) - 1, self.epoch)

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

    def high_watermark(self) -> int:
        self._check_open()
        end = self._committed_end()
        target = self._next if self._producer is not None else 0
        # Our own commits are durable, but the broker writes transaction markers asynchronously: wait
        # (bounded, holding no lock) until the last stable offset covers them, so the writer reads its writes.
        deadline = time.monotonic() + self.config.timeout_s
        while end < target:
            if time.monotonic() > deadline:
                raise LogUnavailableError(
                    f"{self.config.topic}: the last stable offset did not reach "
                    f"this writer's offset {target} within {self.config.timeout_s}s"
                )
            time.sleep(0.005)
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

    def close(self) -> None:
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
            self._probe.close()
            self._reader.close()
            if self._producer is not None:
                self._producer.flush(5)


class _Stream:
    """One read_committed consumer on partition 0, repositioned per fetch so interleaved users stay correct."""

    def __init__(self, consumer: Consumer, config: KafkaLogConfig) -> None:
        self.consumer = consumer
        self.config = config
        self.tp = TopicPartition(config.topic, 0)
        self.lock = threading.Lock()
        self.at: int | None = None  # where the consumer will fetch next, if known

    def watermarks(self) -> tuple[int, int]:
        with self.lock:
            try:
                low, high = self.consumer.get_watermark_offsets(self.tp, timeout=self.config.timeout_s, cached=False)
            except KafkaException as exc:
                raise _error(f"cannot read the watermarks of {self.config.topic}", exc) from exc
        return int(low), int(high)

    def consume(self, start: int, end: int, codec: Codec) -> Iterator[tuple[int, RecordBatch]]:
        """(Kafka offset, batch) for every committed message with start <= offset < end."""
        position = start
        deadline = time.monotonic() + self.config.timeout_s
        while position < end:
            with self.lock:
                if self.at != position:
                    self.consumer.assign([TopicPartition(self.config.topic, 0, position)])
                # consume() waits for all num_messages or the timeout: keep the wait short, since a
                # seek probe wants one message and a tail read ends below 500 (each wait was ~0.1 s).
                messages = self.consumer.consume(num_messages=500, timeout=0.01)
                got = self.consumer.position([self.tp])[0].offset
                self.at = int(got) if got >= 0 else None
            if not messages and time.monotonic() > deadline:
                raise LogUnavailableError(
                    f"reading {self.config.topic} from Kafka offset {position}: no answer "
                    f"within {self.config.timeout_s:.0f}s (is the broker up?)"
                )
            for msg in messages:
                offset = msg.offset()
                if offset is None:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise _error(f"reading {self.config.topic}", KafkaException(err))
                    position = max(position, offset)
                    continue
                deadline = time.monotonic() + self.config.timeout_s
                if offset >= end:
                    return
                position = offset + 1
                yield offset, _decode(msg, codec, self.config.topic)
            if self.at is not None:  # librdkafka moves past transaction markers without delivering them
                position = max(position, self.at)

    def close(self) -> None:
        with self.lock:
            self.consumer.close()


def _decode(msg: Any, codec: Codec, topic: str) -> RecordBatch:
    schema_json = dict(msg.headers() or []).get(SCHEMA_HEADER)
    try:
        return decode_message(msg.value(), schema_json, codec, f"{topic} Kafka offset {msg.offset()}")
    except LogError as exc:
        raise KafkaLogError(str(exc)) from exc


__all__ = ["DEFAULT_TOPIC", "KafkaLog", "KafkaLogConfig", "LogFencedError", "LogUnavailableError"]
