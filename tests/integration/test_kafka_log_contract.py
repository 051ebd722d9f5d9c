"""The LogBackend contract, run against KafkaLog on a real single-node KRaft broker."""

from __future__ import annotations

import itertools
import uuid

import pytest

from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLog, KafkaLogConfig
from tests.kafka_broker import KafkaBroker
from tests.metadata_log.contract import LogBackendContract, MakeBackend

pytestmark = pytest.mark.kafka
_counter = itertools.count()


def kafka_config(broker: KafkaBroker, topic: str | None = None, **kw: object) -> KafkaLogConfig:
    """A config for a fresh topic on the test broker."""
    name = topic or f"kraft-acl-test-{next(_counter)}-{uuid.uuid4().hex[:8]}"
    client = {k: str(v) for k, v in broker.client_config().items() if k != "bootstrap.servers"}
    return KafkaLogConfig(broker.bootstrap_servers, topic=name, timeout_s=20.0, client=client, **kw)  # type: ignore[arg-type]


class TestKafkaLogContract(LogBackendContract):
    @pytest.fixture
    def make_backend(self, kafka_broker: KafkaBroker) -> MakeBackend:
        def make() -> LogBackend:
            return KafkaLog(kafka_config(kafka_broker), writer=True)

        return make
