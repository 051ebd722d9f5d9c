"""`kraft-acl acls --add | --remove | --list` on the embedded log: kafka-acls' options, rules, messages and output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kraftacl.cli.app import app
from kraftacl.metadata_log.backends.file.log import FileLog

TOPIC_ORDERS = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
ORDERS_FILTER = "ResourcePatternFilter(resourceType=TOPIC, name=orders, patternType=LITERAL)"


def acls(log_dir: Path, *args: str, answers: str | None = None) -> tuple[int, str, str]:
    """Run `kraft-acl acls --log-dir DIR ...` in this process: (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, ["acls", "--log-dir", str(log_dir), *args], input=answers)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def listed(log_dir: Path, *args: str) -> set[tuple[str, ...]]:
    """The ACLs `--list --output json` shows, as (type, name, pattern, principal, host, operation, permission)."""
    code, out, err = acls(log_dir, "--list", "--output", "json", *args)
    assert code == 0, err
    fields = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
    return {tuple(a[f] for f in fields) for a in json.loads(out)}


def batches(log_dir: Path) -> list[tuple[int, int]]:
    """(base offset, record count) of every batch in the log."""
    with FileLog(log_dir, read_only=True) as log:
        return [(b.base_offset, len(b.records)) for b in log.read(0)]


def test_add_creates_the_directory_writes_one_batch_and_prints_like_kafka_acls(tmp_path: Path) -> None:
    log_dir = tmp_path / "new" / "log"
    args = ["--allow-principal", "User:alice", "--allow-principal", "User:bob", "--allow-host", "10.0.0.1"]
    code, out, err = acls(log_dir, "--add", *args, "--operation", "Read", "--operation", "WRITE", "--topic", "orders")
    assert code == 0, err
    entries = [
        f"(principal=User:{who}, host=10.0.0.1, operation={op}, permissionType=ALLOW)"
        for who in ("alice", "bob")
        for op in ("READ", "WRITE")
    ]
    assert out == f"Adding ACLs for resource `{TOPIC_ORDERS}`: \n \t" + "\n\t".join(entries) + "\n\n"
    assert batches(log_dir) == [(0, 4)], "one atomic batch per request"
    code, out, _ = acls(log_dir, "--list", "--topic", "orders")
    assert (code, out) == (0, f"Current ACLs for resource `{TOPIC_ORDERS}`:\n\t" + "\n\t".join(entries) + "\n\n")
    assert acls(log_dir, "--list")[1] == out  # no resource: every ACL


def test_adding_existing_acls_reports_them_and_writes_only_the_new_ones(tmp_path: Path) -> None:
    read_orders = ["--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders"]
    assert acls(tmp_path, "--add", *read_orders)[0] == 0
    code, out, err = acls(
        tmp_path, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe",
        "--topic", "orders",
    )  # fmt: skip
    assert code == 0, err
    read = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    describe = "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)"
    assert out == (
        f"Acl (pattern={TOPIC_ORDERS}, entry={read}) already exists.\n"
        f"Adding ACLs for resource `{TOPIC_ORDERS}`: \n \t{describe}\n\n"
    )
    assert batches(tmp_path) == [(0, 1), (1, 1)]
    again = acls(tmp_path, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
    assert again[0] == 0 and "Adding" not in again[1] and batches(tmp_path) == [(0, 1), (1, 1)]


def test_deny_principals_and_hosts_and_every_resource_option(tmp_path: Path) -> None:
    steps = [
        ["--deny-principal", "User:mallory", "--deny-host", "10.0.0.9", "--group", "g1"],
        ["--allow-principal", "User:ops", "--operation", "Alter", "--cluster"],
        ["--allow-principal", "User:tx", "--operation", "Write", "--transactional-id", " tx-1 "],
        ["--allow-principal", "User:t", "--operation", "Describe", "--delegation-token", "tok"],
        ["--allow-principal", "User:admin", "--operation", "CreateTokens", "--user-principal", "User:bob"],
        ["--allow-principal", "User:p", "--operation", "describe_configs", "--topic", " pre- ",
         "--resource-pattern-type", "Prefixed"],
    ]  # fmt: skip
    for step in steps:
        code, _, err = acls(tmp_path, "--add", *step)
        assert code == 0, (step, err)
    assert listed(tmp_path) == {
        ("GROUP", "g1", "LITERAL", "User:mallory", "10.0.0.9", "ALL", "DENY"),
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:ops", "*", "ALTER", "ALLOW"),
        ("TRANSACTIONAL_ID", " tx-1 ", "LITERAL", "User:tx", "*", "WRITE", "ALLOW"),  # not trimmed, as in Kafka
        ("DELEGATION_TOKEN", "tok", "LITERAL", "User:t", "*", "DESCRIBE", "ALLOW"),
        ("USER", "User:bob", "LITERAL", "User:admin", "*", "CREATE_TOKENS", "ALLOW"),
        ("TOPIC", "pre-", "PREFIXED", "User:p", "*", "DESCRIBE_CONFIGS", "ALLOW"),
    }
    assert listed(tmp_path, "--topic", "pre-", "--resource-pattern-type", "prefixed") == {
        ("TOPIC", "pre-", "PREFIXED", "User:p", "*", "DESCRIBE_CONFIGS", "ALLOW")
    }
    assert listed(tmp_path, "--topic", "pre-") == set()  # the default pattern type is LITERAL


def test_producer_and_consumer_shortcuts(tmp_path: Path) -> None:
    producer = ["--producer", "--topic", "t", "--transactional-id", "tx", "--idempotent"]
    assert acls(tmp_path, "--add", "--allow-principal", "User:p", *producer)[0] == 0
    consumer = ["--consumer", "--topic", "t", "--group", "g"]
    assert acls(tmp_path, "--add", "--allow-principal", "User:c", *consumer)[0] == 0
    p = [("TOPIC", "t", op) for op in ("WRITE", "DESCRIBE", "CREATE")] + [("TRANSACTIONAL_ID", "tx", "WRITE")]
    p += [("TRANSACTIONAL_ID", "tx", "DESCRIBE"), ("CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE")]
    c = [("TOPIC", "t", "READ"), ("TOPIC", "t", "DESCRIBE"), ("GROUP", "g", "READ")]
    assert listed(tmp_path) == {(rt, n, "LITERAL", "User:p", "*", op, "ALLOW") for rt, n, op in p} | {
        (rt, n, "LITERAL", "User:c", "*", op, "ALLOW") for rt, n, op in c
    }
    # --producer --consumer together, with the cluster allowed because --producer is given
    both = ["--producer", "--consumer", "--topic", "u", "--group", "h", "--cluster"]
    assert acls(tmp_path, "--add", "--allow-principal", "User:pc", *both)[0] == 0
    assert {(a[0], a[5]) for a in listed(tmp_path) if a[3] == "User:pc"} == {
        ("TOPIC", op) for op in ("WRITE", "DESCRIBE", "CREATE", "READ")
    } | {("GROUP", "READ")}


def test_list_by_principal_prints_a_header_per_principal(tmp_path: Path) -> None:
    for who in ("alice", "bob", "carol"):
        acls(tmp_path, "--add", "--allow-principal", f"User:{who}", "--operation", "Read", "--topic", "orders")
    code, out, _ = acls(tmp_path, "--list", "--principal", "User:alice", "--principal", "User:carol")
    entry = "(principal=User:{}, host=*, operation=READ, permissionType=ALLOW)"
    assert code == 0 and out == "".join(
        f"ACLs for principal `User:{who}`\nCurrent ACLs for resource `{TOPIC_ORDERS}`:\n\t{entry.format(who)}\n\n"
        for who in ("alice", "carol")
    )
    assert {a[3] for a in listed(tmp_path, "--principal", "User:bob")} == {"User:bob"}


def test_remove_asks_kafka_acls_question_per_resource_and_honours_the_answer(tmp_path: Path) -> None:
    for who in ("alice", "bob"):
        acls(tmp_path, "--add", "--allow-principal", f"User:{who}", "--operation", "Read", "--topic", "orders")
    before = listed(tmp_path)
    code, out, _ = acls(tmp_path, "--remove", "--topic", "orders", answers="n\n")
    question = f"Are you sure you want to delete all ACLs for resource filter `{ORDERS_FILTER}`? (y/n)\n"
    assert (code, out) == (0, question)
    assert listed(tmp_path) == before and len(batches(tmp_path)) == 2
    code, out, _ = acls(tmp_path, "--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic",
                        "orders", answers="Y\n")  # fmt: skip
    entry = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert code == 0 and out.startswith(
        f"Are you sure you want to remove ACLs: \n \t{entry}"
        f"\n from resource filter `{ORDERS_FILTER}`? (y/n)\nRemoved ACLs for resource `{TOPIC_ORDERS}`:"
    )
    assert {a[3] for a in listed(tmp_path)} == {"User:bob"}
    code, _, err = acls(tmp_path, "--remove", "--topic", "orders")  # no terminal, no --force
    assert code == 2 and "use --force" in err and {a[3] for a in listed(tmp_path)} == {"User:bob"}


def test_remove_force_with_a_match_filter_removes_every_pattern_that_applies(tmp_path: Path) -> None:
    grant = ["--add", "--allow-principal", "User:a", "--operation", "Read"]
    acls(tmp_path, *grant, "--topic", "orders-1")
    acls(tmp_path, *grant, "--topic", "orders-", "--resource-pattern-type", "prefixed")
    acls(tmp_path, *grant, "--topic", "*")
    acls(tmp_path, *grant, "--topic", "other")
    code, out, err = acls(
        tmp_path, "--remove", "--force", "--topic", "orders-1", "--resource-pattern-type", "match", "-o", "json"
    )
    assert code == 0, err
    [result] = json.loads(out)
    assert sorted(a["resource_name"] for a in result["deleted"]) == ["*", "orders-", "orders-1"]
    assert {a[1] for a in listed(tmp_path)} == {"other"}
    assert batches(tmp_path)[-1] == (4, 3), "the three removals are one batch"


NO_WRITE_CASES: list[tuple[list[str], str]] = [
    (["--list", "--producer"], 'Option "[list]" can\'t be used with option "[producer]"'),
    (["--list", "--allow-principal", "User:a"], 'Option "[list]" can\'t be used with option "[allow-principal]"'),
    (
        ["--add", "--producer", "--operation", "Read", "--topic", "t", "--allow-principal", "User:a"],
        'Option "[producer]" can\'t be used with option "[operation]"',
    ),
    (
        ["--add", "--consumer", "--deny-principal", "User:a", "--topic", "t", "--group", "g"],
        'Option "[consumer]" can\'t be used with option "[deny-principal]"',
    ),
    (
        ["--add", "--allow-principal", "User:a", "--topic", "t", "--principal", "User:a"],
        "The --principal option is only available if --list is set",
    ),
    (
        ["--add", "--producer", "--transactional-id", "x", "--allow-principal", "User:a"],
        "With --producer you must specify a --topic",
    ),
    (
        ["--add", "--idempotent", "--topic", "t", "--allow-principal", "User:a"],
        "The --idempotent option is only available if --producer is set",
    ),
    (
        ["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"],
        "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option",
    ),
    (
        ["--add", "--consumer", "--topic", "t", "--group", "g", "--cluster", "--allow-principal", "User:a"],
        "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option",
    ),
    (["--add", "--topic", "t"], "You must specify one of: --allow-principal, --deny-principal when trying to add"),
    (["--add", "--allow-principal", "User:a"], "You must provide at least one resource: --topic <topic> or --cluster"),
    (["--remove", "--force"], "You must provide at least one resource"),
    (
        ["--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"],
        "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.",
    ),
    (
        ["--add", "--allow-principal", "User:a", "--group", "g", "--operation", "Write"],
        "ResourceType GROUP only supports operations",
    ),
    (
        ["--add", "--allow-principal", "alice", "--topic", "t"],
        "kraft-acl: error: --allow-principal: expected a string in format principalType:principalName but got alice",
    ),
    (["--add", "--deny-principal", "bob", "--topic", "t"], "--deny-principal: expected a string in format"),
    (["--remove", "--allow-principal", "carol", "--topic", "t", "--force"], "--allow-principal: expected a string"),
    (["--list", "--principal", "dave"], "--principal: expected a string in format principalType:principalName"),
    (["--add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"], "invalid operation 'Fly'"),
    (["--add", "--list"], "Command must include exactly one action: --list, --add, --remove."),
    (["--list", "--resource-pattern-type", "sideways"], "invalid --resource-pattern-type 'sideways'"),
]


@pytest.mark.parametrize(("args", "message"), NO_WRITE_CASES, ids=[m[:40] for _, m in NO_WRITE_CASES])
def test_invalid_option_combinations_give_kafka_acls_message_and_write_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    log_dir = tmp_path / "log"
    code, out, err = acls(log_dir, *args)
    assert code == 2 and out == "", (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kraft-acl: error: ") and message in lines[0], err
    assert not log_dir.exists(), "a refused command creates nothing"


ONE_TARGET = (
    "kraft-acl: error: give exactly one of --log-dir DIR (embedded log), --bootstrap-server HOST:PORT (Kafka) and "
    "--server URL (a running kraft-acl serve)"
)


@pytest.mark.parametrize(
    "where",
    [
        [],
        ["--log-dir", "LOG", "--server", "http://127.0.0.1:1"],
        ["--bootstrap-server", "127.0.0.1:1", "--server", "http://127.0.0.1:1"],
        ["--log-dir", "LOG", "--bootstrap-server", "127.0.0.1:1"],
    ],
    ids=["none", "log-dir and server", "bootstrap-server and server", "log-dir and bootstrap-server"],
)
@pytest.mark.parametrize("command", ["acls", "export"])
def test_no_place_or_two_name_all_three_places(tmp_path: Path, command: str, where: list[str]) -> None:
    args = [str(tmp_path / "log") if a == "LOG" else a for a in where]
    action = ["--list"] if command == "acls" else []
    result = CliRunner().invoke(app, [command, *action, *args])
    assert (result.exit_code, result.stdout, result.stderr.strip()) == (2, "", ONE_TARGET)
    assert not (tmp_path / "log").exists()


def test_a_locked_log_directory_is_a_one_line_failure(tmp_path: Path) -> None:
    acls(tmp_path, "--add", "--allow-principal", "User:a", "--topic", "t")
    with FileLog(tmp_path):
        code, out, err = acls(tmp_path, "--add", "--allow-principal", "User:b", "--topic", "t")
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1 and "locked" in err, err
    assert {a[3] for a in listed(tmp_path)} == {"User:a"}


def test_the_installed_command_adds_and_lists(kraft_acl: list[str], tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [*kraft_acl, "acls", "--log-dir", str(tmp_path), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    added = run("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
    assert added.returncode == 0 and added.stdout.startswith(f"Adding ACLs for resource `{TOPIC_ORDERS}`"), added
    shown = run("--list", "--output", "json")
    assert [(a["principal"], a["operation"], len(a["id"])) for a in json.loads(shown.stdout)] == [
        ("User:alice", "READ", 22)
    ]
