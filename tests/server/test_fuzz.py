"""Fuzzing serve's API from its own OpenAPI document (schemathesis strategies driven by hypothesis): whatever
a caller sends, schema-conforming or deliberately broken, the answer is never a 5xx, every 4xx body is
the documented error object, and the process stays up.

Every operation is fuzzed as the ACL admin (may call everything) and as the broker principal.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.core.result import Err, Ok
from schemathesis.errors import InvalidSchema
from schemathesis.generation import GenerationMode

from tests.server.serve_process import ADMIN_TOKEN, BROKER_TOKEN, ServeProcess, base_properties

SCHEMA = schemathesis.openapi.from_path(Path(__file__).parent.parent.parent / "kraftacl" / "api" / "openapi.json")


def _parsed(
    result: Ok[schemathesis.APIOperation[Any, Any, Any, Any]] | Err[InvalidSchema],
) -> schemathesis.APIOperation[Any, Any, Any, Any]:
    assert isinstance(result, Ok), result.err()  # our own document: every operation parses
    return result.ok()


OPERATIONS = [_parsed(result) for result in SCHEMA.get_all_operations()]


@pytest.fixture(scope="module")
def fuzzed_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """The serve under fuzzing."""
    work: Path = tmp_path_factory.mktemp("fuzz")
    with ServeProcess(work, base_properties(work)).start() as serve:
        yield serve


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "broken"])
@pytest.mark.parametrize("token", [ADMIN_TOKEN, BROKER_TOKEN], ids=["admin", "broker"])
@pytest.mark.parametrize("operation", OPERATIONS, ids=[op.label for op in OPERATIONS])
def test_no_request_gets_a_5xx(
    operation: schemathesis.APIOperation[Any, Any, Any, Any],
    token: str,
    mode: GenerationMode,
    fuzzed_serve: ServeProcess,
) -> None:
    url = fuzzed_serve.url("CLIENT")
    headers = {"Authorization": f"Bearer {token}"}

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def run(case: schemathesis.Case[Any]) -> None:
        if case.path == "/v1/changes" and isinstance(case.query, dict):
            wait = case.query.get("wait_ms")  # a long poll: valid waits up to 60 s would make this test take hours
            if isinstance(wait, int) and wait > 50:
                case.query["wait_ms"] = 50
        response = case.call(base_url=url, headers=headers, timeout=30)
        assert response.status_code < 500, f"{case.method} {case.formatted_path} {case.body!r} -> {response.text[:300]}"
        if response.status_code >= 400:
            assert "error" in response.json(), response.text
        assert fuzzed_serve.proc is not None and fuzzed_serve.proc.poll() is None, fuzzed_serve.output()

    run()
