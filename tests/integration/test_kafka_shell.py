"""`kraft-acl shell --bootstrap-server`: the metadata shell on a Kafka-backed log of the real broker, following
records a writer appends between two commands, with the history of an id and `at`."""

from __future__ import annotations

import os
import select
import subprocess
import time
import uuid

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLog, KafkaLogConfig
from kraftacl.metadata_log.records import RemoveAccessControlEntryRecord
from tests.kafka_broker import KafkaBroker

A, B, C = "EREREREREREREREREREREQ", "IiIiIiIiIiIiIiIiIiIiIg", "MzMzMzMzMzMzMzMzMzMzMw"
T0 = 1_700_000_000_000


def acl(name: str) -> StandardAcl:
    return StandardAcl(
        ResourceType.TOPIC, name, PatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW
    )


class Lines:
    """The lines a process prints, read straight from its stdout pipe (no buffering hides a line from select)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        self.fd = process.stdout.fileno()
        self.pending = b""

    def next(self, count: int, timeout: float = 60.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while self.pending.count(b"\n") < count:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no answer from the shell after {self.pending!r}"
            chunk = os.read(self.fd, 65536)
            assert chunk, f"the shell ended after {self.pending!r}"
            self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n", count)
        return [line.decode() for line in lines]


def test_shell_on_a_kafka_topic_follows_its_writer(kafka_broker: KafkaBroker, kraft_acl: list[str]) -> None:
    topic = f"shell-{uuid.uuid4().hex[:8]}"
    source = ["--bootstrap-server", kafka_broker.bootstrap_servers, "--metadata-topic", topic]
    with KafkaLog(KafkaLogConfig(kafka_broker.bootstrap_servers, topic=topic, timeout_s=60), writer=True) as writer:
        writer.append([record_from_acl(A, acl("orders")), record_from_acl(B, acl("payments"))], timestamp_ms=T0)
        one_shot = subprocess.run(
            [*kraft_acl, "shell", *source, "cat", "/provenance/source", "/provenance/highWaterMark"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (one_shot.returncode, one_shot.stdout, one_shot.stderr) == (
            0,
            f"Kafka topic {topic} at {kafka_broker.bootstrap_servers}\n2\n",
            "",
        )
        shell = subprocess.Popen(
            [*kraft_acl, "shell", *source],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert shell.stdin is not None
        out = Lines(shell)
        try:
            shell.stdin.write("ls /acl/id\n")
            shell.stdin.flush()
            assert out.next(2) == [A, B]
            writer.append(
                [RemoveAccessControlEntryRecord(A), record_from_acl(C, acl("refunds"))], timestamp_ms=T0 + 1000
            )
            shell.stdin.write("ls /acl/id\nat\n")  # each command first applies what was written before it
            shell.stdin.flush()
            assert out.next(3) == [B, C, "offset 4 (high-water mark 4; the newest state)"]
            shell.stdin.write(f"history {A}\nat 2\nls /acl/id\nwho-can READ TOPIC:orders\n")
            shell.stdin.flush()
            assert out.next(9) == [
                A,
                f"  offset 0  epoch {writer.epoch}  2023-11-14T22:13:20.000+00:00  added    {acl('orders')}",
                f"  offset 2  epoch {writer.epoch}  2023-11-14T22:13:21.000+00:00  removed",
                "offset 2 (high-water mark 4; pinned: `at latest` returns to the newest state)",
                A,
                B,
                "who-can READ TOPIC:orders at offset 2",
                f"ALLOWED  User:alice           any host  MatchingAcl {A}",
                "DENIED   any other principal  any host  DefaultDeny",
            ]
        finally:
            shell.stdin.close()
            assert shell.wait(timeout=60) == 0
            assert shell.stderr is not None and shell.stderr.read() == ""
