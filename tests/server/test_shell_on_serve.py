"""`kraft-acl shell --server` on a real `kraft-acl serve` process over a real socket: GET /v1/acls/image, the
tree, cat, who-can and authorize, the prompt following an ACL added with `kraft-acl acls --server`, the one-line
errors of a bad URL, a bad token and a caller without DESCRIBE on the cluster."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.server.serve_process import ADMIN_TOKEN, ALICE_TOKEN, ServeProcess, free_port
from tests.shell.terminal import Terminal

ALICE_READ = (
    "StandardAcl(resourceType=TOPIC, resourceName=orders, patternType=LITERAL, principal=User:alice, host=*, "
    "operation=READ, permissionType=ALLOW)"
)
BOB_DENY = (
    "StandardAcl(resourceType=TOPIC, resourceName=ord, patternType=PREFIXED, principal=User:bob, host=*, "
    "operation=ALL, permissionType=DENY)"
)


def run(kraft_acl: list[str], *args: str, stdin: str = "") -> tuple[int, str, str]:
    done = subprocess.run([*kraft_acl, *args], input=stdin, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def acls(kraft_acl: list[str], serve: ServeProcess, *args: str) -> None:
    code, _, err = run(kraft_acl, "acls", "--server", serve.url("CLIENT"), "--token", ADMIN_TOKEN, *args)
    assert code == 0, err


@pytest.fixture(scope="module")
def ids(kraft_acl: list[str], serve: ServeProcess) -> dict[str, str]:
    """Two ACLs added through `kraft-acl acls --server`; their ids by principal, as serve describes them."""
    acls(kraft_acl, serve, "--add", "--allow-principal", "User:alice", "--operation", "READ", "--topic", "orders")
    acls(
        kraft_acl,
        serve,
        *("--add", "--deny-principal", "User:bob", "--operation", "ALL", "--topic", "ord"),
        *("--resource-pattern-type", "prefixed"),
    )
    with serve.client(token=ADMIN_TOKEN) as admin:
        listed = admin.post("/v1/acls/describe", json={}).json()["acls"]
    return {a["principal"]: a["id"] for a in listed}


def shell(kraft_acl: list[str], serve: ServeProcess, *words: str, token: str = ADMIN_TOKEN) -> tuple[int, str, str]:
    return run(kraft_acl, "shell", "--server", serve.url("CLIENT"), "--token", token, *words)


def test_the_image_endpoint_answers_one_offset_with_the_settings(serve: ServeProcess, ids: dict[str, str]) -> None:
    with (
        serve.client(token=ADMIN_TOKEN) as admin,
        serve.client(token=ALICE_TOKEN) as alice,
        serve.client(token=None) as anonymous,
    ):
        image = admin.get("/v1/acls/image").json()
        status = admin.get("/v1/status").json()
        assert sorted(a["id"] for a in image["acls"]) == sorted(ids.values())
        assert image["offset"] == status["last_applied_offset"] and image["epoch"] >= 1 and image["timestamp_ms"] > 0
        assert (image["super_users"], image["allow_everyone_if_no_acl_found"]) == (["User:admin"], False)
        assert alice.get("/v1/acls/image").json()["error"]["code"] == "CLUSTER_AUTHORIZATION_FAILED"
        assert anonymous.get("/v1/acls/image").status_code == 401
        assert admin.post("/v1/acls/image").status_code == 405


def test_tree_cat_who_can_and_authorize(kraft_acl: list[str], serve: ServeProcess, ids: dict[str, str]) -> None:
    alice, bob = ids["User:alice"], ids["User:bob"]
    assert shell(kraft_acl, serve, "ls", "/acl/id") == (0, "\n".join(sorted([alice, bob])) + "\n", "")
    assert shell(kraft_acl, serve, "tree", "/acl/by-principal") == (
        0,
        f"User:alice:\n  {alice}:\n    {ALICE_READ}\nUser:bob:\n  {bob}:\n    {BOB_DENY}\n",
        "",
    )
    code, out, _ = shell(kraft_acl, serve, "cat", f"/acl/id/{alice}", f"/image/acls/{bob}")
    assert code == 0 and f'"id" : "{alice}"' in out and '"principal" : "User:alice"' in out
    assert out.endswith(BOB_DENY + "\n")
    offset = shell(kraft_acl, serve, "cat", "/provenance/offset")[1].strip()
    assert shell(kraft_acl, serve, "who-can", "READ", "TOPIC:orders") == (
        0,
        f"who-can READ TOPIC:orders at offset {offset}\n"
        "ALLOWED  User:admin           any host  SuperUser\n"  # serve's super.users, not the shell's
        f"ALLOWED  User:alice           any host  MatchingAcl {alice}\n"
        f"DENIED   User:bob             any host  MatchingAcl {bob}\n"
        "DENIED   any other principal  any host  DefaultDeny\n\n"
        + "".join(f"{i}  {acl}\n" for i, acl in sorted([(alice, ALICE_READ), (bob, BOB_DENY)])),
        "",
    )
    assert shell(kraft_acl, serve, "authorize", "User:bob", "READ", "TOPIC:orders") == (
        0,
        f"DENIED\nrule: MatchingAcl(acl={BOB_DENY})\nacl: /acl/id/{bob}\n",
        "",
    )
    code, out, _ = shell(
        kraft_acl, serve, "cat", "/provenance/source", "/provenance/ready", "/provenance/highWaterMark"
    )
    assert out == f"kraft-acl serve at {serve.url('CLIENT')}\ntrue\n{int(offset)}\n"


def test_a_script_sees_each_new_acl(kraft_acl: list[str], serve: ServeProcess, ids: dict[str, str]) -> None:
    argv = [*kraft_acl, "shell", "--server", serve.url("CLIENT"), "--token", ADMIN_TOKEN]
    pipe = subprocess.PIPE
    with subprocess.Popen(argv, text=True, stdin=pipe, stdout=pipe, stderr=pipe) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write("ls /acl/by-principal/User:erin\n")
        proc.stdin.flush()
        assert proc.stderr.readline() == "ls: /acl/by-principal/User:erin: no such file or directory.\n"
        acls(kraft_acl, serve, "--add", "--allow-principal", "User:erin", "--operation", "READ", "--group", "g")
        proc.stdin.write("ls /acl/by-principal/User:erin\n")  # polled before the command: erin's ACL is there
        proc.stdin.close()
        out = proc.stdout.read()
        assert proc.wait() == 1  # the first ls found no such path
    with serve.client(token=ADMIN_TOKEN) as admin:
        listed = admin.post("/v1/acls/describe", json={"filter": {"principal": "User:erin"}}).json()["acls"]
    assert out == f"{listed[0]['id']}\n"
    acls(
        kraft_acl, serve, "--remove", "--force", "--allow-principal", "User:erin", "--operation", "READ", "--group", "g"
    )


def test_history_from_serves_log_and_at_says_why_not(
    kraft_acl: list[str], serve: ServeProcess, ids: dict[str, str]
) -> None:
    alice = ids["User:alice"]
    with serve.client(token=ADMIN_TOKEN) as admin, serve.client(token=ALICE_TOKEN) as other:
        answer = admin.post("/v1/acls/history", json={"ids": [alice, "bm90LWFuLWlkLWF0LWFsbA"]}).json()
        assert other.post("/v1/acls/history", json={"ids": [alice]}).status_code == 403
        bad = admin.post("/v1/acls/history", json={"ids": "x"}).json()["error"]
    assert bad == {"code": "INVALID_REQUEST", "message": "Expected `array`, got `str`", "field": "$.ids"}
    [event] = answer["events"]
    assert (answer["log_start"], event["id"], event["offset"]) == (0, alice, 0)  # the fixture's first record
    assert event["acl"]["principal"] == "User:alice" and event["timestamp_ms"] > 0
    time = datetime.fromtimestamp(event["timestamp_ms"] / 1000, UTC).isoformat(timespec="milliseconds")
    assert shell(kraft_acl, serve, "history", f"/acl/by-principal/User:alice/{alice}") == (
        0,
        f"{alice}\n  offset 0  epoch {event['epoch']}  {time}  added  {ALICE_READ}\n",
        "",
    )
    code, _, err = shell(kraft_acl, serve, "at", "1")
    assert code == 1 and err == (
        "at: kraft-acl serve answers with its current state only; moving in time (at) needs the log itself: "
        "open serve's metadata.log.dir with --log-dir (or its Kafka topic with --bootstrap-server)\n"
    )


@pytest.fixture
def terminal(kraft_acl: list[str], serve: ServeProcess, tmp_path: Path) -> Iterator[Terminal]:
    argv = [*kraft_acl, "shell", "--history-file", str(tmp_path / "history"), "--server", serve.url("CLIENT")]
    term = Terminal(argv, columns=200, env={"HOME": str(tmp_path), "KRAFT_ACL_TOKEN": ADMIN_TOKEN, "PAGER": ""})
    try:
        yield term
    finally:
        term.close()


def test_the_prompt_follows_acls_added_through_serve(
    kraft_acl: list[str], serve: ServeProcess, ids: dict[str, str], terminal: Terminal
) -> None:
    with serve.client(token=ADMIN_TOKEN) as admin:
        before = admin.get("/v1/acls/image").json()["offset"] + 1
    terminal.wait_lines(f"[offset {before}] >>")
    acls(kraft_acl, serve, "--add", "--allow-principal", "User:dave", "--operation", "WRITE", "--topic", "payments")
    terminal.wait_lines(f"[offset {before + 1}] >>")  # redrawn without a key pressed
    terminal.send("ls /acl/by-principal\r")
    terminal.wait_lines(
        f"[offset {before + 1}] >> ls /acl/by-principal", "User:alice  User:bob  User:dave", f"[offset {before + 1}] >>"
    )
    terminal.send("cat /provenance/following\r")
    terminal.wait_lines("true", f"[offset {before + 1}] >>")
    terminal.send("exit\r")
    assert terminal.exit_status() == 0


@pytest.mark.parametrize(
    ("args", "exit_code", "message"),
    [  # the rule of every --server command (cli.options): serve unreachable or refusing is 1, bad input 2
        (["--server", f"http://127.0.0.1:{free_port()}"], 1, "cannot reach serve: [Errno 111] Connection refused"),
        (["--server", "URL", "--token", "not-a-token"], 1, "HTTP 401 UNAUTHENTICATED: the bearer token is not in"),
        (["--server", "URL", "--token", ALICE_TOKEN], 1, "HTTP 403 CLUSTER_AUTHORIZATION_FAILED: User:alice from"),
        (["--server", "URL", "--at-offset", "1"], 2, "--at-offset needs a log (--log-dir or --bootstrap-server)"),
        (["--server", "URL", "--config", "x.properties"], 2, "--config: with --server the decisions use serve's own"),
        (["--server", "URL", "--log-dir", "."], 2, "give exactly one of --log-dir DIR, --snapshot FILE,"),
    ],
)
def test_bad_urls_and_tokens_are_one_line_and_the_rules_exit_code(
    kraft_acl: list[str], serve: ServeProcess, args: list[str], exit_code: int, message: str
) -> None:
    argv = [serve.url("CLIENT") if a == "URL" else a for a in args]
    if "--token" not in argv:
        argv += ["--token", ADMIN_TOKEN]
    code, out, err = run(kraft_acl, "shell", *argv, "ls")
    assert (code, out) == (exit_code, "")
    assert err.startswith("kraft-acl: error: ") and message in err and err.count("\n") == 1, err
