"""serve's endpoints, in one table: method, path, the Structs of the request (body or query) and of the answer,
the name metrics count it under, and the summary the OpenAPI document gives. serve's routes, every client of
serve and the OpenAPI document read this table, so no other module spells a `/v1/` path.

Adding an endpoint is one Struct pair in `api.wire` and one `Endpoint` here (listed in `ENDPOINTS`); serve then
routes it to a handler, `ServerClient.call` calls it, and `python -m kraftacl.api.openapi` documents it.
Immutable values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import msgspec

from kraftacl.api import import_wire, wire

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass(frozen=True, slots=True)
class Endpoint(Generic[In, Out]):
    """One operation of serve's API; `request` is the JSON body (POST), `query` the query parameters (GET)."""

    method: Literal["GET", "POST"]
    path: str
    name: str  # the `endpoint` label of serve's request metrics
    summary: str  # for the OpenAPI document
    response: type[Out]
    request: type[In] | None = None
    query: type[msgspec.Struct] | None = None  # one query parameter per field


OPA_PREFIX = "/v1/data/"  # OPA's decision API: any path below it (the plugin names its policy's path)
OPENAPI_PATH = "/v1/openapi.json"  # the OpenAPI document itself
METRICS_PATH = "/metrics"  # Prometheus' text format

AUTHORIZE: Endpoint[wire.AuthorizeIn, wire.AuthorizeOut] = Endpoint(
    "POST",
    "/v1/authorize",
    "authorize",
    "Authorize a batch of actions for one request context",
    wire.AuthorizeOut,
    wire.AuthorizeIn,
)
BY_RESOURCE_TYPE: Endpoint[wire.ByResourceTypeIn, wire.ResultOut] = Endpoint(
    "POST",
    "/v1/authorize-by-resource-type",
    "authorize_by_resource_type",
    "KIP-679 authorizeByResourceType",
    wire.ResultOut,
    wire.ByResourceTypeIn,
)
AUTHORIZED_OPERATIONS: Endpoint[wire.AuthorizedOperationsIn, wire.AuthorizedOperationsOut] = Endpoint(
    "POST",
    "/v1/authorized-operations",
    "authorized_operations",
    "KIP-430 authorized operations of one resource",
    wire.AuthorizedOperationsOut,
    wire.AuthorizedOperationsIn,
)
DESCRIBE_ACLS: Endpoint[wire.DescribeIn, wire.DescribeOut] = Endpoint(
    "POST",
    "/v1/acls/describe",
    "describe_acls",
    "DescribeAcls by filter (DESCRIBE on the cluster)",
    wire.DescribeOut,
    wire.DescribeIn,
)
CREATE_ACLS: Endpoint[wire.CreateIn, wire.CreateOut] = Endpoint(
    "POST",
    "/v1/acls/create",
    "create_acls",
    "CreateAcls, KIP-140 per-entry results (ALTER on the cluster; controller role)",
    wire.CreateOut,
    wire.CreateIn,
)
DELETE_ACLS: Endpoint[wire.DeleteIn, wire.DeleteOut] = Endpoint(
    "POST",
    "/v1/acls/delete",
    "delete_acls",
    "DeleteAcls, KIP-140 per-filter results (ALTER on the cluster; controller role)",
    wire.DeleteOut,
    wire.DeleteIn,
)
IMPORT_ACLS: Endpoint[import_wire.ImportIn, import_wire.ImportOut] = Endpoint(
    "POST",
    "/v1/acls/import",
    "import_acls",
    "Import ACLs as ONE atomic batch, duplicates skipped and counted (ALTER on the cluster; controller role; "
    "body limit import.max.bytes)",
    import_wire.ImportOut,
    import_wire.ImportIn,
)
ACL_COUNT: Endpoint[None, wire.CountOut] = Endpoint(
    "GET", "/v1/acls/count", "acl_count", "KIP-801 AclCount", wire.CountOut
)
ACL_IMAGE: Endpoint[None, wire.ImageOut] = Endpoint(
    "GET",
    "/v1/acls/image",
    "acl_image",
    "Every ACL with its id at one offset, with super.users and allow.everyone.if.no.acl.found (DESCRIBE on "
    "the cluster; since 1.1.0)",
    wire.ImageOut,
)
ACL_HISTORY: Endpoint[wire.HistoryIn, wire.HistoryOut] = Endpoint(
    "POST",
    "/v1/acls/history",
    "acl_history",
    "When each ACL id was added and removed, read from the metadata log (DESCRIBE on the cluster; since 1.1.0)",
    wire.HistoryOut,
    wire.HistoryIn,
)
CREATE_SNAPSHOT: Endpoint[None, wire.SnapshotOut] = Endpoint(
    "POST",
    "/v1/snapshots",
    "snapshot",
    "Write a snapshot of the current state into the snapshot directory now, retention applied (ALTER on the "
    "cluster; the serve that writes the log's snapshots: a controller, or any serve of a Kafka-backed log; "
    "since 1.3.0)",
    wire.SnapshotOut,
)
STATUS: Endpoint[None, wire.StatusOut] = Endpoint(
    "GET",
    "/v1/status",
    "status",
    "Readiness and replay progress (503 until the initial load completes, and while the log is not followed)",
    wire.StatusOut,
)
CHANGES: Endpoint[None, wire.ChangesOut] = Endpoint(
    "GET",
    "/v1/changes",
    "changes",
    "The change feed (a long poll; broker principals only; since 1.2.0): answers at once when the offset of the "
    "newest state serve published that changed ACLs is not `after` (before 1.5.0: only when past it), or when this "
    "serve is not the `instance` asked about, else after `wait_ms` with the same body (a heartbeat)",
    wire.ChangesOut,
    query=wire.ChangesQuery,
)
OPA: Endpoint[wire.OpaIn, wire.OpaOut] = Endpoint(
    "POST",
    OPA_PREFIX + "kafka/authz/allow",
    "opa",
    "OPA-compatible decision (opa-kafka-plugin's input; any path under /v1/data/)",
    wire.OpaOut,
    wire.OpaIn,
)

#: Every endpoint, in the order the OpenAPI document lists them.
ENDPOINTS: tuple[Endpoint[Any, Any], ...] = (
    AUTHORIZE,
    BY_RESOURCE_TYPE,
    AUTHORIZED_OPERATIONS,
    DESCRIBE_ACLS,
    CREATE_ACLS,
    DELETE_ACLS,
    IMPORT_ACLS,
    ACL_COUNT,
    ACL_IMAGE,
    ACL_HISTORY,
    CREATE_SNAPSHOT,
    STATUS,
    CHANGES,
    OPA,
)
