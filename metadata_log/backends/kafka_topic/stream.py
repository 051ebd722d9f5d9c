"""One read_committed consumer on the log's single partition, repositioned per fetch, and the decoding of its
messages into batches.

Thread safety: a `ReadStream` serializes its calls with a lock, so the interleaved users of one KafkaLog (tail,
seek, read) each see the messages they asked for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kraftacl.metadata_log.backends.kafka_topic.client import (
    KafkaLogConfig,
    KafkaLogError,
    LogUnavailableError,
    kafka_error,
)
from kraftacl.metadata_log.backends.kafka_topic.message import SCHEMA_HEADER, decode_message
from kraftacl.metadata_log.codec import Codec
from kraftacl.metadata_log.errors import LogError
from kraftacl.metadata_log.records import RecordBatch

RETRY_BACKOFF_S = 0.1
INTERRUPT_CHECK_S = 0.005  # a long poll looks at its interrupt this often (the broker's fetch waits meanwhile)
# What a watermark lookup answers while a partition has no leader (just created, or its leader's broker died).
LEADER_MOVING = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_PARTITION,
}


class ReadStream:
    """One read_committed consumer on partition 0, repositioned per fetch so interleaved users stay correct."""

    def __init__(self, consumer: Consumer, config: KafkaLogConfig) -> None:
        self.consumer = consumer
        self.config = config
        self.tp = TopicPartition(config.topic, 0)
        self.lock = threading.Lock()
        self.at: int | None = None  # where the consumer will fetch next, if known
        self.closed = False

    def watermarks(self) -> tuple[int, int]:
        """(low, high) of the partition; a retriable error (no leader yet after the topic's creation, a leader
        moving after a broker died) is retried until `timeout_s`."""
        deadline = time.monotonic() + self.config.timeout_s
        while True:
            left = max(deadline - time.monotonic(), 0.1)
            with self.lock:
                try:
                    low, high = self.consumer.get_watermark_offsets(self.tp, timeout=left, cached=False)
                    return int(low), int(high)
                except KafkaException as exc:
                    error = exc
            if not _retriable(error) or time.monotonic() >= deadline:
                raise kafka_error(f"cannot read the watermarks of {self.config.topic}", error) from error
            time.sleep(RETRY_BACKOFF_S)

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
                        raise kafka_error(f"reading {self.config.topic}", KafkaException(err))
                    position = max(position, offset)
                    continue
                deadline = time.monotonic() + self.config.timeout_s
                if offset >= end:
                    return
                position = offset + 1
                yield offset, decode(msg, codec, self.config.topic)
            if self.at is not None:  # librdkafka moves past transaction markers without delivering them
                position = max(position, self.at)

    def wait_past(self, start: int, timeout_s: float, interrupt: threading.Event | None = None) -> bool:
        """Wait up to `timeout_s` for a committed message at Kafka offset `start` or later; True once one is there
        (or once `interrupt` is set: looked at every INTERRUPT_CHECK_S).

        A long poll: the broker holds the consumer's fetch until the last stable offset passes `start`, so
        a commit wakes the caller within a round trip rather than after a polling interval. Nothing is
        decoded; the message stays for whoever reads the log. An error (the broker down) ends the wait
        quietly at the deadline: the caller's own read reports it.
        """
        deadline = time.monotonic() + timeout_s
        with self.lock:
            if self.closed:
                return False
            if self.at != start:
                self.consumer.assign([TopicPartition(self.config.topic, 0, start)])
                self.at = start
            while (left := deadline - time.monotonic()) > 0:
                if interrupt is not None and interrupt.is_set():
                    return True
                # the fetch waits at the broker whatever the local poll's timeout: short polls only look at `interrupt`
                msg = self.consumer.poll(left if interrupt is None else min(left, INTERRUPT_CHECK_S))
                if msg is None:
                    continue
                offset, err = msg.offset(), msg.error()
                if err is None and offset is not None:
                    self.at = offset + 1
                    return True
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    rest = max(deadline - time.monotonic(), 0)
                    if interrupt is None:
                        time.sleep(rest)
                    else:
                        interrupt.wait(rest)
            return False

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.consumer.close()


def _retriable(exc: KafkaException) -> bool:
    err = exc.args[0] if exc.args else None
    return isinstance(err, KafkaError) and (err.retriable() or err.code() in LEADER_MOVING)


def decode(msg: Any, codec: Codec, topic: str) -> RecordBatch:
    schema_json = dict(msg.headers() or []).get(SCHEMA_HEADER)
    try:
        return decode_message(msg.value(), schema_json, codec, f"{topic} Kafka offset {msg.offset()}")
    except LogError as exc:
        raise KafkaLogError(str(exc)) from exc
