"""Real confluent-kafka clients as one SASL/PLAIN user of a broker, each returning the error Kafka gave (or None),
and ACLs written straight into serve, so that a test can say exactly what the ACLs allow.

Every call makes fresh clients (librdkafka remembers authorization errors per topic) and closes them.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kraftacl.api.endpoints import CREATE_ACLS, DELETE_ACLS
from kraftacl.harness.serve_process import ServeProcess
from tests.kafka_broker import ClientConf, KafkaBroker

ADMIN_TOKEN = "admin-token-0123456789abcdef"


def acl(
    principal: str,
    operation: str,
    name: str,
    resource_type: str = "TOPIC",
    pattern: str = "LITERAL",
    permission: str = "ALLOW",
) -> dict[str, str]:
    """One ACL in serve's API form (host `*`)."""
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "pattern_type": pattern,
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": permission,
    }


def grant(serve: ServeProcess, *acls: dict[str, str]) -> int:
    """Create ACLs through serve's API (as its super user); every entry must succeed. The offset of their batch."""
    status, body = serve.call(CREATE_ACLS, ADMIN_TOKEN, {"acls": list(acls)})
    assert status == 200, body
    assert all(r["error_code"] == 0 for r in body["results"]), body
    return int(body["offset"])


def revoke(serve: ServeProcess, *acls: dict[str, str]) -> None:
    """Delete exactly these ACLs through serve's API."""
    status, body = serve.call(DELETE_ACLS, ADMIN_TOKEN, {"filters": list(acls)})
    assert status == 200 and all(len(r["acls"]) == 1 for r in body["results"]), body


def client_conf(broker: KafkaBroker, user: str, listener: str | None, **extra: str | int | bool) -> ClientConf:
    conf = dict(broker.client_config(user, listener=listener))
    conf.update({"log_level": 0, **extra})  # no librdkafka lines on stderr
    return conf


def produce(
    broker: KafkaBroker,
    user: str,
    topic: str,
    *,
    idempotent: bool = False,
    transactional_id: str | None = None,
    listener: str | None = None,
    timeout: float = 20.0,
) -> KafkaError | None:
    """Produce one record (in a committed transaction with `transactional_id`): None, or Kafka's error."""
    errors: list[KafkaError] = []
    conf = client_conf(
        broker, user, listener, **{"message.timeout.ms": int(timeout * 1000), "enable.idempotence": idempotent}
    )
    if transactional_id is not None:
        conf.update({"transactional.id": transactional_id, "enable.idempotence": True})
    producer = Producer(conf)
    try:
        if transactional_id is not None:
            producer.init_transactions(timeout)
            producer.begin_transaction()
        producer.produce(topic, b"value", on_delivery=lambda err, msg: errors.append(err) if err else None)
        if transactional_id is not None:
            producer.commit_transaction(timeout)
        elif producer.flush(timeout) > 0 and not errors:
            return KafkaError(KafkaError._MSG_TIMED_OUT, "not delivered in time")
    except KafkaException as exc:
        return exc.args[0]  # type: ignore[no-any-return]
    except SystemError as exc:  # confluent-kafka: flush() raised a fatal error and then ran a callback
        if not isinstance(exc.__cause__, KafkaException):
            raise
        return exc.__cause__.args[0]  # type: ignore[no-any-return]
    return errors[0] if errors else None


def consume(
    broker: KafkaBroker, user: str, topic: str, group: str, *, timeout: float = 20.0
) -> tuple[list[bytes | None], KafkaError | None]:
    """Read the topic from the start as a member of `group`: the values read, or the first error."""
    errors: list[KafkaError] = []
    group_conf: dict[str, str | int | bool] = {
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
    }
    consumer = Consumer(client_conf(broker, user, None, **group_conf) | {"error_cb": errors.append})
    values: list[bytes | None] = []  # a record's value may be null
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not values and not errors:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                errors.append(error)
            else:
                values.append(msg.value())
        if values:
            consumer.commit(asynchronous=False)
    except KafkaException as exc:
        errors.append(exc.args[0])
    finally:
        consumer.close()
    return values, (errors[0] if errors else None)


def visible_topics(broker: KafkaBroker, user: str, listener: str | None = None) -> set[str]:
    """The topics a Metadata request for all topics returns to `user` (Kafka drops the ones not DESCRIBE-able)."""
    admin = AdminClient(client_conf(broker, user, listener))
    return set(admin.list_topics(timeout=15).topics)


def create_topics(broker: KafkaBroker, *names: str, listener: str | None = None) -> None:
    """Create topics as the super user (1 partition each) and wait for every one."""
    for future in admin(broker, listener).create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(30)


def unique(prefix: str) -> str:
    """A topic or group name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


_ADMINS: dict[tuple[str, str | None], AdminClient] = {}


def admin(broker: KafkaBroker, listener: str | None = None) -> AdminClient:
    """The super user's AdminClient, one per broker listener, kept alive (a collected client fails its pending
    futures with _DESTROY)."""
    key = (broker.bootstrap_servers, listener)
    if key not in _ADMINS:
        _ADMINS[key] = AdminClient(client_conf(broker, "admin", listener))
    return _ADMINS[key]


def by_principal(principal: str) -> AclBindingFilter:
    """Every ACL of one principal."""
    # None matches any name and any host (documented; confluent-kafka's hints say str)
    return AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, principal, None, AclOperation.ANY,  # type: ignore[arg-type]
                            AclPermissionType.ANY)  # fmt: skip


def create(broker: KafkaBroker, bindings: list[AclBinding]) -> list[int]:
    """CreateAcls through the broker: per binding, 0 or Kafka's error code."""
    futures = admin(broker).create_acls(bindings, request_timeout=30)
    codes = []
    for binding in bindings:
        try:
            futures[binding].result()
            codes.append(0)
        except KafkaException as exc:
            codes.append(exc.args[0].code())
    return codes


def describe(broker: KafkaBroker, acl_filter: AclBindingFilter) -> list[AclBinding]:
    """DescribeAcls through the broker (sorted: Kafka groups them by resource in a hash map)."""
    return sorted(admin(broker).describe_acls(acl_filter, request_timeout=30).result(), key=str)


def delete(broker: KafkaBroker, acl_filter: AclBindingFilter) -> list[AclBinding]:
    """DeleteAcls of one filter through the broker: the ACLs it removed, sorted."""
    return sorted(admin(broker).delete_acls([acl_filter], request_timeout=30)[acl_filter].result(), key=str)
