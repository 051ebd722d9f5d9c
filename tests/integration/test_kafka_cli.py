"""`kraft-acl acls` against a Kafka-backed metadata log on the real broker, through the installed command."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from tests.kafka_broker import KafkaBroker

pytestmark = pytest.mark.kafka


def run(kraft_acl: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*kraft_acl, "acls", *args], capture_output=True, text=True, timeout=120, check=False)


def test_acls_add_list_remove_on_kafka(kafka_broker: KafkaBroker, kraft_acl: list[str]) -> None:
    where = ["--bootstrap-server", kafka_broker.bootstrap_servers, "--metadata-topic", f"cli-{uuid.uuid4().hex[:8]}"]
    added = run(
        kraft_acl,
        *where,
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--topic",
        "orders",
        "--output",
        "json",
    )
    assert added.returncode == 0, added.stderr
    [result] = json.loads(added.stdout)
    assert result["result"] == "created" and len(result["id"]) == 22
    again = run(
        kraft_acl,
        *where,
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--topic",
        "orders",
        "--output",
        "json",
    )
    assert json.loads(again.stdout)[0]["result"] == "exists"  # a new process caught up before validating
    listed = run(kraft_acl, *where, "--list", "--output", "json")
    assert [(a["id"], a["principal"], a["operation"]) for a in json.loads(listed.stdout)] == [
        (result["id"], "User:alice", "READ")
    ]
    removed = run(kraft_acl, *where, "--remove", "--topic", "orders", "--force", "--output", "json")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(run(kraft_acl, *where, "--list", "--output", "json").stdout) == []


def test_log_choice_is_required_and_exclusive(kraft_acl: list[str], tmp_path: object) -> None:
    both = run(kraft_acl, "--log-dir", "x", "--bootstrap-server", "127.0.0.1:1", "--list")
    neither = run(kraft_acl, "--list")
    for proc in (both, neither):
        assert proc.returncode == 2
        assert "give exactly one of --log-dir DIR" in proc.stderr
