"""A live Kafka cluster's ACLs through confluent-kafka's AdminClient `describe_acls`, read in pages.

Stateless; each call makes its own AdminClient and drops it. confluent_kafka is imported only here and
in the Kafka backend (docs/ARCHITECTURE.md).

confluent-kafka's `describe_acls` is slow and can crash the process with a segmentation fault when
one response holds more than ~55,000 ACLs (confluent-kafka-python issue 2031). So the cluster is
never asked for everything at once: one request per (resource type, pattern type, permission,
operation), 4 x 2 x 2 x 11 = 176 requests, each answering one slice. confluent-kafka cannot name
the DELEGATION_TOKEN and USER resource types nor the CREATE_TOKENS and DESCRIBE_TOKENS operations
(its enums lack them), so ACLs of those are not read; `UNREADABLE` says so for the caller to report.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from kraftacl.metadata_log.errors import LogError

# (resource type, name, pattern type, principal, host, operation, permission type): Kafka's wire codes.
AclCodes = tuple[int, str, int, str, str, int, int]
UNREADABLE = (
    "DELEGATION_TOKEN and USER ACLs, and CREATE_TOKENS / DESCRIBE_TOKENS ACLs (confluent-kafka has no enum for them)"
)
_ANY: Any = None  # a filter's "any name / principal / host" (confluent-kafka's stubs say str)
_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.BROKER, ResourceType.TRANSACTIONAL_ID)
_PATTERNS = (ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED)
_PERMISSIONS = (AclPermissionType.ALLOW, AclPermissionType.DENY)
_OPERATIONS = tuple(op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY))


class ClusterAclsError(LogError):
    """The cluster could not be asked for its ACLs (unreachable, not authorized, ...); names the slice."""


def describe_all_acls(client: Mapping[str, Any], timeout_s: float = 30.0) -> list[AclCodes]:
    """Every ACL the cluster describes (to a principal allowed DESCRIBE on the cluster), as wire codes.

    `client` holds librdkafka settings, `bootstrap.servers` included. Each slice is one request;
    they are sent together and awaited in order. ClusterAclsError names the first slice that failed.
    """
    admin = AdminClient(dict(client))
    slices = list(itertools.product(_TYPES, _PATTERNS, _PERMISSIONS, _OPERATIONS))
    futures = [
        admin.describe_acls(AclBindingFilter(rt, _ANY, pt, _ANY, _ANY, op, pm), request_timeout=timeout_s)
        for rt, pt, pm, op in slices
    ]
    out: list[AclCodes] = []
    for (rt, pt, pm, op), future in zip(slices, futures, strict=True):
        try:
            bindings = future.result()
        except KafkaException as exc:
            raise ClusterAclsError(
                f"describe_acls({rt.name} {pt.name} {pm.name} {op.name}) on {client.get('bootstrap.servers')}: "
                f"{exc.args[0] if exc.args else exc}"
            ) from exc
        out.extend(binding_codes(b) for b in bindings)
    return out


def binding_codes(b: Any) -> AclCodes:
    """One AdminClient AclBinding as the seven ACL fields, enums as Kafka's codes."""
    return (
        b.restype.value,
        b.name,
        b.resource_pattern_type.value,
        b.principal,
        b.host,
        b.operation.value,
        b.permission_type.value,
    )
