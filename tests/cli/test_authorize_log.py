"""Tests of `kraft-acl authorize --log-dir [--at-offset]`: decisions against the ACL state of a log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftacl.authorizer.inputs.whatif import acl_to_json
from tests.cli.test_log_cmds import ALICE_READ, assert_one_line_error, build_log, cli, run

REQUESTS = [
    {
        "id": "alice-read",
        "principal": "User:alice",
        "host": "10.1.1.1",
        "operation": "READ",
        "resource_type": "TOPIC",
        "resource_name": "foo",
    },
    {
        "id": "bob-read",
        "principal": "User:bob",
        "host": "10.1.1.1",
        "operation": "READ",
        "resource_type": "TOPIC",
        "resource_name": "foo",
    },
    {"kind": "describe", "filter": {"resource_type": "TOPIC"}},
]


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("log")
    build_log(directory)  # offset 2 holds the DENY for alice; below it only the ALLOW
    return directory


@pytest.fixture(scope="module")
def requests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("req") / "requests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in REQUESTS))
    return path


def answers(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


def test_answers_change_when_the_deny_is_added(kraft_acl: list[str], log_dir: Path, requests: Path) -> None:
    before = run(kraft_acl, "authorize", "--requests", requests, "--log-dir", log_dir, "--at-offset", "2")
    after = run(kraft_acl, "authorize", "--requests", requests, "--log-dir", log_dir, "--at-offset", "3")
    assert before.returncode == after.returncode == 0, before.stderr + after.stderr
    assert [a.get("result") for a in answers(before.stdout)[:2]] == ["ALLOWED", "DENIED"]
    assert [a.get("result") for a in answers(after.stdout)[:2]] == ["DENIED", "DENIED"]
    assert answers(before.stdout)[2] == {"acls": [acl_to_json(ALICE_READ)]}
    assert len(answers(after.stdout)[2]["acls"]) == 2  # type: ignore[arg-type]


def test_default_is_the_high_watermark_and_explain_names_the_deny(log_dir: Path, requests: Path) -> None:
    code, out, err = cli("authorize", "--requests", requests, "--log-dir", log_dir, "--explain")
    assert code == 0, err
    first = answers(out)[0]
    assert first["result"] == "DENIED" and "DENY" in str(first["rule"])
    assert cli("authorize", "--requests", requests, "--log-dir", log_dir, "--at-offset", "0")[1].splitlines()[0] == (
        '{"result": "DENIED"}'
    )  # no ACL at all below offset 0, and allow.everyone.if.no.acl.found is off


def test_config_still_applies(log_dir: Path, requests: Path, tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("super.users=User:alice\n")
    code, out, _ = cli("authorize", "--requests", requests, "--log-dir", log_dir, "--config", config)
    assert code == 0 and answers(out)[0]["result"] == "ALLOWED"


def test_table_output(log_dir: Path, requests: Path) -> None:
    code, out, _ = cli("authorize", "--requests", requests, "--log-dir", log_dir, "--at-offset", "2", "-o", "table")
    assert code == 0 and "ALLOWED" in out and "User:alice" in out


def test_acls_file_still_works(requests: Path, tmp_path: Path) -> None:
    acls = tmp_path / "acls.json"
    acls.write_text(json.dumps([acl_to_json(ALICE_READ)]))
    code, out, _ = cli("authorize", "--requests", requests, "--acls", acls)
    assert code == 0 and answers(out)[0] == {"result": "ALLOWED"}


def test_malformed_usage(log_dir: Path, requests: Path, tmp_path: Path) -> None:
    acls = tmp_path / "acls.json"
    acls.write_text("[]")
    base: list[str | Path] = ["authorize", "--requests", requests]
    cases: list[tuple[list[str | Path], tuple[str, ...]]] = [
        ([*base, "--acls", acls, "--log-dir", log_dir], ("exactly one of --acls", "--log-dir")),
        (base, ("exactly one of --acls",)),
        ([*base, "--acls", acls, "--at-offset", "1"], ("--at-offset needs --log-dir",)),
        ([*base, "--log-dir", log_dir, "--at-offset", "7"], ("--at-offset 7", "high-water mark 5")),
        ([*base, "--log-dir", log_dir, "--at-offset", "1"], ("--at-offset 1 is inside the batch at offsets 0..1",)),
        ([*base, "--log-dir", tmp_path / "missing"], ("does not exist",)),
    ]
    for args, fragments in cases:
        code, out, err = cli(*args)
        assert out == "", args
        assert_one_line_error(code, err, *fragments)
    assert not (tmp_path / "missing").exists()
