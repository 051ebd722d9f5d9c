"""Every conformance scenario (answers produced by Kafka's own StandardAuthorizer) through `kraft-acl authorize`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

SCENARIOS = sorted(p for p in (Path(__file__).parents[2] / "conformance").iterdir() if p.is_dir())


def test_all_scenarios_are_present() -> None:
    assert len(SCENARIOS) == 85, "the conformance corpus has 85 scenarios (spec/conformance/README.md)"


def _normalize(answer: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in answer.items() if k in ("result", "authorized_operations", "acls")}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario(scenario: Path, kraft_acl: list[str]) -> None:
    proc = subprocess.run(
        [
            *kraft_acl,
            "authorize",
            "--acls",
            str(scenario / "acls.json"),
            "--requests",
            str(scenario / "requests.jsonl"),
            "--config",
            str(scenario / "server.properties"),
            "--output",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    expected = [json.loads(line) for line in (scenario / "expected.jsonl").read_text().splitlines()]
    requests = [json.loads(line) for line in (scenario / "requests.jsonl").read_text().splitlines()]
    assert len(got) == len(expected)
    for request, want, have in zip(requests, expected, got, strict=True):
        if "acls" in want:
            key = lambda a: tuple(a.values())  # noqa: E731 - compare as sets, as the README allows
            assert sorted(have["acls"], key=key) == sorted(want["acls"], key=key), request
        else:
            assert _normalize(have) == want, f"{request.get('id')}: {request.get('why')}"
