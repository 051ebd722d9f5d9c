"""The OpenAPI 3.1 document of serve's API, generated from the endpoint table (`api.endpoints`) and the msgspec
Structs the handlers decode and encode.

`openapi_document()` is pure; `kraftacl/api/openapi.json` in the repository is its committed copy (a test
keeps the two equal), which the Java plugin's tests read.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kraftacl.api import frames, wire
from kraftacl.api.endpoints import ENDPOINTS, METRICS_PATH, Endpoint

VERSION = "1.6.0"
ERRORS = {
    "400": "a field is missing or malformed; `error.field` names it",
    "401": "no or unknown credentials",
    "403": "the caller may not do this (ACLs, or not in broker.principals)",
    "421": "NOT_CONTROLLER: ACL writes go to the active controller; a broker-role serve or a standby controller "
    "refuses them (send them to the next serve)",
    "503": "AUTHORIZER_NOT_READY: the initial load has not completed; LOG_UNAVAILABLE: the log cannot be written now "
    "(nothing was changed); OFFSET_NOT_REACHED: `min_offset` was not applied within min.offset.wait.max.ms",
}


def _ref(struct: type[msgspec.Struct]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{struct.__name__}"}


def _parameters(query: type[msgspec.Struct]) -> list[dict[str, Any]]:
    """One `in: query` parameter per field of the query Struct (required when it has no default)."""
    _, components = msgspec.json.schema_components([query])
    schema = components[query.__name__]
    required = set(schema.get("required", []))
    return [
        {"name": name, "in": "query", "required": name in required, "schema": field}
        for name, field in schema["properties"].items()
    ]


def _operation(endpoint: Endpoint[Any, Any]) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": endpoint.summary,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": _ref(endpoint.response)}}},
            **{
                code: {"description": why, "content": {"application/json": {"schema": _ref(wire.ErrorOut)}}}
                for code, why in ERRORS.items()
            },
        },
    }
    if endpoint.query is not None:
        op["parameters"] = _parameters(endpoint.query)
    if endpoint.request is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": _ref(endpoint.request)}}}
    return op


def openapi_document(endpoints: tuple[Endpoint[Any, Any], ...] = ENDPOINTS) -> dict[str, Any]:
    """The whole document (of `endpoints`: all of serve's by default)."""
    bodies = [s for e in endpoints for s in (e.request, e.response) if s is not None]
    _, components = msgspec.json.schema_components([*bodies, wire.ErrorOut], ref_template="#/components/schemas/{name}")
    paths: dict[str, Any] = {}
    for endpoint in endpoints:
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = _operation(endpoint)
    paths[METRICS_PATH] = {
        "get": {
            "summary": "Prometheus metrics (text exposition format)",
            "responses": {"200": {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}},
        }
    }
    paths[frames.PATH] = {
        "get": {
            "summary": f"Upgrade this connection to decision frames ({frames.PROTOCOL}; since 1.4.0): send "
            f"Connection: Upgrade and Upgrade: {frames.PROTOCOL}; after the 101 the connection carries the bodies "
            "of /v1/authorize, /v1/authorize-by-resource-type and /v1/authorized-operations in frames "
            "(docs/serve.md, Decision frames)",
            "responses": {
                "101": {"description": "Switching Protocols: frames from the next byte"},
                **{
                    code: {"description": why, "content": {"application/json": {"schema": _ref(wire.ErrorOut)}}}
                    for code, why in ERRORS.items()
                },
            },
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
