"""The decisions of one (principal, resource) from the ACLs that apply to it, run inside Spark tasks over rows
grouped and sorted by (principal, resource type, resource name): the decision core's own rule (spec §5.3-§5.5:
the grant bits of `authorizer.model.operations` and `bulk_rows.code_of_mask`, compiled), the deciding ACL named as
the core names it (`walk_order.decider`) in Kafka's index order.

Pure functions; each task calls them on its own rows.

Per group, the host classes are `*` (a client host no applying ACL names) and each host an applying ACL
names; a specific host's decision uses the `*` ACLs and its own. Worked example, bob on TOPIC `orders`:

    READ ALLOW *            host *:          READ ALLOWED (the ALLOW), DESCRIBE ALLOWED (implied)
    READ DENY  10.0.0.1     host 10.0.0.1:   READ DENIED (the DENY wins); DESCRIBE as for `*`: not repeated

A row is written only where an ACL decides (rule MatchingAcl); everything else is the default decision.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby

import pyarrow as pa

from kraftacl.authorizer.decision.walk_order import decider
from kraftacl.authorizer.index.bulk_rows import ACL_ALLOW, ACL_DENY
from kraftacl.authorizer.index.native_rows import code_of_mask
from kraftacl.authorizer.model.acls import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
    kafka_order,
)
from kraftacl.authorizer.model.operations import ALLOW_TEST, DENY_TEST, SUPPORTED_OPERATIONS, grant_bit

ANY_HOST = "*"
ROW_SCHEMA = pa.schema(
    [
        ("principal", pa.string()),
        ("host", pa.string()),
        ("resource_type", pa.string()),
        ("resource_name", pa.string()),
        ("operation", pa.string()),
        ("result", pa.string()),
        ("rule", pa.string()),
        ("acl_id", pa.string()),
        ("acl", pa.string()),
    ]
)
ROW_DDL = (
    "principal string, host string, resource_type string, resource_name string, operation string, "
    "result string, rule string, acl_id string, acl string"
)
# The columns of the applying-ACL rows a task receives, grouped by the first three.
APPLYING_COLUMNS = (
    "principal",
    "resource_type",
    "resource_name",
    "id",
    "acl_name",
    "pattern_type",
    "acl_principal",
    "host",
    "operation",
    "permission_type",
)

Applying = tuple[str, StandardAcl, int]  # (id, ACL, its grant bit)


def _decide(applying: list[Applying], mask: int, op: AclOperation) -> tuple[str, Applying] | None:
    """(result, deciding ACL) for one operation where an ACL decides (None: the default would); `mask` is the
    union of the applying ACLs' grant bits."""
    # No default here (a row is written only where an ACL decides): the core's rule without its default part.
    code = code_of_mask(mask, None, op, "", DENY_TEST, ALLOW_TEST, False)
    if code != ACL_DENY and code != ACL_ALLOW:
        return None
    test = DENY_TEST[op] if code == ACL_DENY else ALLOW_TEST[op]
    acl = decider(_in_order([a for a in applying if a[2] & test]), code == ACL_DENY, _is_allow)
    assert acl is not None  # the mask has the bit of an applying ACL of the deciding kind
    return ("DENIED" if code == ACL_DENY else "ALLOWED"), acl


def _is_allow(a: Applying) -> bool:
    return a[1].permission_type == AclPermissionType.ALLOW


def _in_order(acls: list[Applying]) -> list[Applying]:
    by_acl = {a[1]: a for a in acls}
    return [by_acl[acl] for acl in kafka_order(list(by_acl))]


def decide_group(principal: str, rtype: ResourceType, name: str, applying: list[Applying]) -> Iterator[tuple[str, ...]]:
    """Report rows (ROW_SCHEMA) for one principal and resource; a specific host only where it differs from `*`."""
    supported = SUPPORTED_OPERATIONS.get(rtype, ())
    common = [a for a in applying if a[1].host == ANY_HOST]
    hosts = sorted({a[1].host for a in applying} - {ANY_HOST})
    any_host: dict[AclOperation, tuple[str, Applying] | None] = {}
    for host in (ANY_HOST, *hosts):
        acls = common if host == ANY_HOST else common + [a for a in applying if a[1].host == host]
        mask = 0
        for a in acls:
            mask |= a[2]
        for op in supported:
            decided = _decide(acls, mask, op)
            if host == ANY_HOST:
                any_host[op] = decided
            elif decided == any_host[op]:
                continue
            if decided is not None:
                result, (acl_id, acl, _) = decided
                yield principal, host, rtype.name, name, op.name, result, "MatchingAcl", acl_id, str(acl)


def decide_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow over APPLYING_COLUMNS rows sorted by (principal, resource_type, resource_name) within the task."""
    rows: list[tuple[str, ...]] = []
    for key, group in groupby(_applying(batches), key=lambda item: item[0]):
        principal, rt, name = key
        unique = {a[0]: a for _, a in group}  # a `User:*` requester meets its ACLs by both joins
        rows.extend(decide_group(principal, ResourceType.from_code(rt), name, list(unique.values())))
        if len(rows) >= 1 << 15:
            yield _batch(rows)
            rows = []
    if rows:
        yield _batch(rows)


def _applying(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[tuple[str, int, str], Applying]]:
    for batch in batches:
        for r in batch.to_pylist():
            acl = StandardAcl(
                ResourceType.from_code(r["resource_type"]),
                r["acl_name"],
                PatternType.from_code(r["pattern_type"]),
                r["acl_principal"],
                r["host"],
                AclOperation.from_code(r["operation"]),
                AclPermissionType.from_code(r["permission_type"]),
            )
            key = (r["principal"], r["resource_type"], r["resource_name"])
            yield key, (r["id"], acl, grant_bit(acl.operation, acl.permission_type))


def _batch(rows: list[tuple[str, ...]]) -> pa.RecordBatch:
    columns = list(zip(*rows, strict=True))
    return pa.RecordBatch.from_arrays([pa.array(c, type=pa.string()) for c in columns], schema=ROW_SCHEMA)
