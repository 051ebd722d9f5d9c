"""The CLI against a running serve (`--server URL`): kafka-acls' output and the what-if answers, as on a log."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kraftacl.harness.serve_process import kraft_acl_command
from tests.server.serve_process import ADMIN_TOKEN, ALICE_TOKEN, BROKER_TOKEN, ServeProcess

ADD = [
    "--add",
    "--allow-principal",
    "User:alice",
    "--operation",
    "Read",
    "--operation",
    "Write",
    "--topic",
    "orders",
    "--resource-pattern-type",
    "PREFIXED",
]


def _run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*kraft_acl_command(), *args], capture_output=True, text=True, timeout=60, input=stdin, env=env
    )


def test_acls_through_serve_print_what_the_log_version_prints(serve: ServeProcess, tmp_path: Path) -> None:
    url = serve.url("CLIENT")
    remote = ["--server", url, "--token", ADMIN_TOKEN]
    local = ["--log-dir", str(tmp_path / "log")]
    for args in (ADD, ADD, ["--list", "--topic", "orders", "--resource-pattern-type", "match"]):
        via_serve, via_log = _run("acls", *remote, *args), _run("acls", *local, *args)
        assert via_serve.returncode == via_log.returncode == 0, via_serve.stderr + via_log.stderr
        assert via_serve.stdout == via_log.stdout
    token_file = tmp_path / "token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    removed = _run(
        "acls",
        "--server",
        url,
        "--token-file",
        str(token_file),
        "--remove",
        "--topic",
        "orders",
        "--resource-pattern-type",
        "PREFIXED",
        "--force",
    )
    assert removed.returncode == 0 and "Removed ACLs for resource" in removed.stdout, removed.stderr
    listed = _run("acls", "--server", url, "--list", "-o", "json", env={"KRAFT_ACL_TOKEN": ADMIN_TOKEN, "PATH": ""})
    assert json.loads(listed.stdout) == []


def test_authorize_through_serve_answers_like_the_log(serve: ServeProcess, tmp_path: Path) -> None:
    url = serve.url("CLIENT")
    _run("acls", "--server", url, "--token", ADMIN_TOKEN, *ADD)
    _run("acls", "--log-dir", str(tmp_path / "log"), *ADD)
    requests = tmp_path / "requests.jsonl"
    lines = [
        {
            "principal": "User:alice",
            "host": "10.0.0.1",
            "operation": "WRITE",
            "resource_type": "TOPIC",
            "resource_name": "orders-eu",
        },
        {
            "principal": "User:alice",
            "host": "10.0.0.1",
            "operation": "DELETE",
            "resource_type": "TOPIC",
            "resource_name": "orders",
        },
        {
            "kind": "by_resource_type",
            "principal": "User:alice",
            "host": "10.0.0.1",
            "operation": "READ",
            "resource_type": "TOPIC",
        },
        {
            "kind": "authorized_operations",
            "principal": "User:alice",
            "host": "10.0.0.1",
            "resource_type": "TOPIC",
            "resource_name": "orders1",
        },
    ]
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    via_serve = _run(
        "authorize",
        "--server",
        url,
        "--token",
        BROKER_TOKEN,
        "--requests",
        str(requests),
        "--output",
        "json",
        "--explain",
    )
    via_log = _run(
        "authorize", "--log-dir", str(tmp_path / "log"), "--requests", str(requests), "--output", "json", "--explain"
    )
    assert via_serve.returncode == 0, via_serve.stderr
    assert via_serve.stdout == via_log.stdout
    describe = tmp_path / "describe.jsonl"
    describe.write_text(json.dumps({"kind": "describe", "filter": {"principal": "User:alice"}}) + "\n")
    assert (
        _run("authorize", "--server", url, "--token", ADMIN_TOKEN, "--requests", str(describe)).stdout
        == _run("authorize", "--log-dir", str(tmp_path / "log"), "--requests", str(describe)).stdout
    )


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--token", "wrong-token-0123456789abcdef"], 1, "HTTP 401 UNAUTHENTICATED"),
        (["--token", ALICE_TOKEN], 1, "HTTP 403 CLUSTER_AUTHORIZATION_FAILED"),
    ],
)
def test_refusals_are_one_line(serve: ServeProcess, args: list[str], code: int, words: str) -> None:
    result = _run("acls", "--server", serve.url("CLIENT"), *args, *ADD)
    assert result.returncode == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kraft-acl: error: ") and words in lines[0], result.stderr


def test_unreachable_serve_is_one_line(tmp_path: Path) -> None:
    result = _run("acls", "--server", "http://127.0.0.1:9", "--token", ADMIN_TOKEN, "--list")
    assert result.returncode == 1
    assert result.stderr.startswith("kraft-acl: error: http://127.0.0.1:9: cannot reach serve:")
