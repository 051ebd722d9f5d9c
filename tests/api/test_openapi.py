"""The committed OpenAPI document (kraftacl/api/openapi.json, read by the Java plugin's side) is the one serve
serves."""

from __future__ import annotations

from pathlib import Path

import msgspec

from kraftacl.api import frames
from kraftacl.api.endpoints import ENDPOINTS, OPENAPI_PATH, Endpoint
from kraftacl.api.openapi import openapi_document

COMMITTED = Path(__file__).resolve().parents[2] / "kraftacl" / "api" / "openapi.json"


def test_committed_document_is_current() -> None:
    fresh = msgspec.json.format(msgspec.json.encode(openapi_document()), indent=2) + b"\n"
    assert COMMITTED.read_bytes() == fresh, (
        "kraftacl/api/openapi.json is stale: regenerate it with "
        "`.venv/bin/python -m kraftacl.api.openapi > kraftacl/api/openapi.json`"
    )


def test_every_route_is_documented() -> None:
    from kraftacl.server.api import ROUTES

    paths = openapi_document()["paths"]
    for method, path in ROUTES:
        if path != OPENAPI_PATH:
            assert method.lower() in paths[path], f"{method} {path} is not in the OpenAPI document"


def test_an_endpoint_is_one_struct_pair_and_one_entry() -> None:
    """What a new endpoint needs: its Structs and one Endpoint; a GET's query Struct becomes its parameters."""

    class WaitQuery(msgspec.Struct, frozen=True):
        after: int
        wait_ms: int = 0

    class Changed(msgspec.Struct, frozen=True):
        offset: int

    changes: Endpoint[None, Changed] = Endpoint(
        "GET", "/v1/example", "example", "An example long poll", Changed, query=WaitQuery
    )
    doc = openapi_document((*ENDPOINTS, changes))
    op = doc["paths"]["/v1/example"]["get"]
    assert op["parameters"] == [
        {"name": "after", "in": "query", "required": True, "schema": {"type": "integer"}},
        {"name": "wait_ms", "in": "query", "required": False, "schema": {"type": "integer", "default": 0}},
    ]
    assert op["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Changed"}
    assert "requestBody" not in op and "Changed" in doc["components"]["schemas"]
    assert set(doc["paths"]) == {e.path for e in ENDPOINTS} | {"/metrics", frames.PATH, "/v1/example"}
