"""The committed OpenAPI document (kraftacl/api/openapi.json, read by the Java plugin's side) is the one serve
serves."""

from __future__ import annotations

from pathlib import Path

import msgspec

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
        if path != "/v1/openapi.json":
            assert method.lower() in paths[path], f"{method} {path} is not in the OpenAPI document"
