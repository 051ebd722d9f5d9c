"""The OpenAPI 3.1 document of serve's API, generated from the msgspec Structs the handlers decode and encode.

`openapi_document()` is pure; `kraftacl/api/openapi.json` in the repository is its committed copy (a test
keeps the two equal), which the Java plugin's tests read.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kraftacl.api import import_wire, wire

VERSION = "1.2.0"
ERRORS = {
    "400": "a field is missing or malformed; `error.field` names it",
    "401": "no or unknown credentials",
    "403": "the caller may not do this (ACLs, or not in broker.principals)",
    "421": "ACL writes go to a controller (process.roles=controller)",
    "503": "AUTHORIZER_NOT_READY: the initial load has not completed",
}
# (method, path, summary, request Struct or None, response Struct, public when configured)
OPERATIONS: list[tuple[str, str, str, type[msgspec.Struct] | None, type[msgspec.Struct]]] = [
    (
        "post",
        "/v1/authorize",
        "Authorize a batch of actions for one request context",
        wire.AuthorizeIn,
        wire.AuthorizeOut,
    ),
    (
        "post",
        "/v1/authorize-by-resource-type",
        "KIP-679 authorizeByResourceType",
        wire.ByResourceTypeIn,
        wire.ResultOut,
    ),
    (
        "post",
        "/v1/authorized-operations",
        "KIP-430 authorized operations of one resource",
        wire.AuthorizedOperationsIn,
        wire.AuthorizedOperationsOut,
    ),
    (
        "post",
        "/v1/acls/describe",
        "DescribeAcls by filter (DESCRIBE on the cluster)",
        wire.DescribeIn,
        wire.DescribeOut,
    ),
    (
        "post",
        "/v1/acls/create",
        "CreateAcls, KIP-140 per-entry results (ALTER on the cluster; controller role)",
        wire.CreateIn,
        wire.CreateOut,
    ),
    (
        "post",
        "/v1/acls/delete",
        "DeleteAcls, KIP-140 per-filter results (ALTER on the cluster; controller role)",
        wire.DeleteIn,
        wire.DeleteOut,
    ),
    (
        "post",
        "/v1/acls/import",
        "Import ACLs as ONE atomic batch, duplicates skipped and counted (ALTER on the cluster; controller role; "
        "body limit import.max.bytes)",
        import_wire.ImportIn,
        import_wire.ImportOut,
    ),
    ("get", "/v1/acls/count", "KIP-801 AclCount", None, wire.CountOut),
    (
        "get",
        "/v1/acls/image",
        "Every ACL with its id at one offset, with super.users and allow.everyone.if.no.acl.found (DESCRIBE on "
        "the cluster; since 1.1.0)",
        None,
        wire.ImageOut,
    ),
    (
        "post",
        "/v1/acls/history",
        "When each ACL id was added and removed, read from the metadata log (DESCRIBE on the cluster; since 1.1.0)",
        wire.HistoryIn,
        wire.HistoryOut,
    ),
    (
        "post",
        "/v1/snapshots",
        "Write a snapshot of the current state into the snapshot directory now, retention applied (ALTER on the "
        "cluster; the serve that writes the log's snapshots: a controller, or any serve of a Kafka-backed log; "
        "since 1.2.0)",
        None,
        wire.SnapshotOut,
    ),
    (
        "get",
        "/v1/status",
        "Readiness and replay progress (503 until the initial load completes, and while the log is not followed)",
        None,
        wire.StatusOut,
    ),
    (
        "post",
        "/v1/data/kafka/authz/allow",
        "OPA-compatible decision (opa-kafka-plugin's input; any path under /v1/data/)",
        wire.OpaIn,
        wire.OpaOut,
    ),
]


def _ref(struct: type[msgspec.Struct]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{struct.__name__}"}


def openapi_document() -> dict[str, Any]:
    """The whole document."""
    structs = [s for _, _, _, req, resp in OPERATIONS for s in (req, resp) if s is not None] + [wire.ErrorOut]
    _, components = msgspec.json.schema_components(structs, ref_template="#/components/schemas/{name}")
    paths: dict[str, Any] = {}
    for method, path, summary, request, response in OPERATIONS:
        op: dict[str, Any] = {
            "summary": summary,
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": _ref(response)}}},
                **{
                    code: {"description": why, "content": {"application/json": {"schema": _ref(wire.ErrorOut)}}}
                    for code, why in ERRORS.items()
                },
            },
        }
        if request is not None:
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema": _ref(request)}}}
        paths.setdefault(path, {})[method] = op
    paths["/metrics"] = {
        "get": {
            "summary": "Prometheus metrics (text exposition format)",
            "responses": {"200": {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "kraft-acl serve", "version": VERSION},
        "security": [{"bearer": []}, {"mutualTLS": []}],
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "mutualTLS": {"type": "mutualTLS"},
            },
        },
        "paths": paths,
    }


if __name__ == "__main__":  # python -m kraftacl.api.openapi > kraftacl/api/openapi.json
    import sys

    sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(openapi_document()), indent=2) + b"\n")
