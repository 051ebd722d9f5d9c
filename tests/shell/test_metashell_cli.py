"""`kraft-acl shell` non-interactive: every command run as a subprocess of the installed command on the fixed log
of `metashell_log.py`, with the exact output; commands read from standard input; the sources and their errors."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.shell.metashell_log import ACL_B, ACL_C, ACL_D, ACL_E, ACL_F, A, B, C, D, E, F, build_log

IDS = "\n".join([B, C, D, E, F]) + "\n"
INVALID = (
    "invalid choice: '{}' (choose from 'at', 'authorize', 'cat', 'cd', 'exit', 'find', 'help', 'history', 'ls', "
    "'man', 'pwd', 'tree', 'who-can')\n"
)


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("metashell") / "log"
    build_log(directory)
    return directory


def shell(kraft_acl: list[str], source: list[str], *words: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = subprocess.run(
        [*kraft_acl, "shell", *source, *words], input=stdin or "", capture_output=True, text=True, timeout=120
    )
    return done.returncode, done.stdout, done.stderr


# (command words, exit status, stdout, stderr): one subprocess each, on the log at its high-water mark 7.
CASES = [
    (["ls"], 0, "acl\nimage\nlocal\nprovenance\n", ""),
    (
        ["ls", "/local/version", "/acl", "/image"],
        0,
        "version\n\nacl:\nby-principal\nby-resource\nid\n\nimage:\nacls\nprovenance\n",
        "",
    ),
    (["ls", "/nope", "/acl/id"], 1, IDS, "ls: /nope: no such file or directory.\n"),
    (
        ["ls", "/acl/by-resource/*/*"],
        0,
        "LITERAL:\n%\n\nLITERAL:\n*\norders\n\nPREFIXED:\nord\n\nLITERAL:\ntx%2F1\n",
        "",
    ),
    (["cd", "/acl"], 0, "", ""),
    (["pwd"], 0, "/\n", ""),
    (
        ["cat", "/image/acls/55555555-5555-5555-5555-555555555555", "/acl", "/nope", "/image/provenance"],
        1,
        f"{ACL_E}\noffset 6, epoch 1, time 2023-11-14T22:13:24Z[UTC]\n",
        "cat: /acl: Is a directory\ncat: /nope: No such file or directory.\n",
    ),
    (
        ["cat", "/acl/by-resource/GROUP/LITERAL/%/*", "/acl/by-resource/TRANSACTIONAL_ID/LITERAL/tx%2F1/*"],
        0,
        f"{ACL_D}\n{ACL_E}\n",
        "",
    ),
    (
        ["find", "/image", "/nope"],
        1,
        "/image\n/image/acls\n" + "".join(f"/image/acls/{i}\n" for i in (B, C, D, E, F)) + "/image/provenance\n",
        "find: /nope: no such file or directory.\n",
    ),
    (
        ["find", "/acl/by-resource/T*"],
        0,
        "/acl/by-resource/TOPIC\n/acl/by-resource/TOPIC/LITERAL\n/acl/by-resource/TOPIC/LITERAL/*\n"
        f"/acl/by-resource/TOPIC/LITERAL/*/{C}\n/acl/by-resource/TOPIC/LITERAL/orders\n"
        f"/acl/by-resource/TOPIC/LITERAL/orders/{F}\n/acl/by-resource/TOPIC/PREFIXED\n/acl/by-resource/TOPIC/PREFIXED/ord\n"
        f"/acl/by-resource/TOPIC/PREFIXED/ord/{B}\n/acl/by-resource/TRANSACTIONAL_ID\n"
        "/acl/by-resource/TRANSACTIONAL_ID/LITERAL\n/acl/by-resource/TRANSACTIONAL_ID/LITERAL/tx%2F1\n"
        f"/acl/by-resource/TRANSACTIONAL_ID/LITERAL/tx%2F1/{E}\n",
        "",
    ),
    (
        ["tree", "/acl/by-principal/User:alice", "/acl/by-principal/User:%2A", "/acl/by-principal/User:nobody"],
        1,
        f"{F}:\n  {ACL_F}\n{B}:\n  {ACL_B}\n",  # %2A is `*`: a way to name the principal User:* without a glob
        "tree: /acl/by-principal/User:nobody: No such file or directory.\n",
    ),
    (
        ["tree", "/image/provenance", "/local"],
        0,
        "offset 6, epoch 1, time 2023-11-14T22:13:24Z[UTC]\nversion:\n  0.1.0\n",
        "",
    ),
    (["history"], 0, "    0  history\n", ""),
    (
        ["history", "/acl/by-principal/User:alice", A, "99999999-9999-9999-9999-999999999999"],
        0,
        f"{F}\n  offset 6  epoch 1  2023-11-14T22:13:24.000+00:00  added  {ACL_F}\n"
        f"{A}\n  offset 0  epoch 1  2023-11-14T22:13:20.000+00:00  added    {ACL_F}\n"
        "  offset 5  epoch 1  2023-11-14T22:13:23.000+00:00  removed\n"
        "mZmZmZmZmZmZmZmZmZmZmQ\n  no record at offsets 0..6 names this id\n",
        "",
    ),
    (
        ["help"],
        0,
        "Welcome to the kraft-acl metadata shell.\n\n"
        "usage:  {at,authorize,cat,cd,exit,find,help,history,ls,man,pwd,tree,who-can} ...\n\n"
        "positional arguments:\n  {at,authorize,cat,cd,exit,find,help,history,ls,man,pwd,tree,who-can}\n"
        "    at                   Move the whole tree to the state at an offset.\n"
        "    authorize            Decide one request as the StandardAuthorizer would, and name the rule.\n"
        "    cat                  Show the contents of metadata files.\n"
        "    cd                   Set the current working directory.\n"
        "    exit                 Exit the metadata shell.\n"
        "    find                 Search for nodes in the directory hierarchy.\n"
        "    help                 Display this help message.\n"
        "    history              Print command history, or when ACLs were added and removed.\n"
        "    ls                   List metadata nodes.\n"
        "    man                  Show the help text for a specific command.\n"
        "    pwd                  Print the current working directory.\n"
        "    tree                 Show the contents of metadata nodes in a tree structure.\n"
        "    who-can              List every principal and host allowed or denied an operation on a resource, and by "
        "which ACLs.\n",
        "",
    ),
    (
        ["man", "authorize"],
        0,
        "authorize: Decide one request as the StandardAuthorizer would, and name the rule.\n\n"
        "usage: authorize principal [host] operation resource\n\npositional arguments:\n"
        "  principal              The principal, Type:name (User:alice).\n"
        "  host                   The client address (default: an address no host-specific ACL names).\n"
        "  operation              The operation (READ, Write, DescribeConfigs, ...).\n"
        "  resource               TYPE:name (TOPIC:orders, GROUP:app, CLUSTER).\n",
        "",
    ),
    (["exit"], 0, "", ""),
    (
        ["authorize", "User:alice", "READ", "TOPIC:orders"],
        0,
        f"ALLOWED\nrule: MatchingAcl(acl={ACL_F})\nacl: /acl/id/{F}\n",
        "",
    ),
    (
        ["authorize", "User:mallory", "10.0.0.9", "Read", "topic:orders"],
        0,
        f"DENIED\nrule: MatchingAcl(acl={ACL_C})\nacl: /acl/id/{C}\n",
        "",
    ),
    (
        ["authorize", "User:bob", "::ffff:10.0.0.1", "READ", "GROUP:"],
        0,
        f"ALLOWED\nrule: MatchingAcl(acl={ACL_D})\nacl: /acl/id/{D}\n",
        "",
    ),
    (
        ["who-can", "DESCRIBE", "TOPIC:orders"],
        0,
        "who-can DESCRIBE TOPIC:orders at offset 7\n"
        f"ALLOWED  User:alice           any host  MatchingAcl {B}  also applying: {F}\n"
        f"DENIED   User:mallory         any host  MatchingAcl {C}  also applying: {B}\n"
        f"ALLOWED  any other principal  any host  MatchingAcl {B}\n\n"
        f"{B}  {ACL_B}\n{C}  {ACL_C}\n{F}  {ACL_F}\n",
        "",
    ),
    (
        ["who-can", "read", "GROUP:"],
        0,
        "who-can READ GROUP: at offset 7\n"
        f"ALLOWED  User:bob             10.0.0.1        MatchingAcl {D}\n"
        "DENIED   User:bob             any other host  DefaultDeny\n"
        "DENIED   any other principal  any host        DefaultDeny\n\n"
        f"{D}  {ACL_D}\n",
        "",
    ),
    (["at"], 0, "offset 7 (high-water mark 7; the newest state)\n", ""),
    (["at", "3"], 0, "offset 3 (high-water mark 7; pinned: `at latest` returns to the newest state)\n", ""),
    (["bogus"], 2, "", INVALID.format("bogus")),
]


@pytest.mark.parametrize(("words", "status", "stdout", "stderr"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_one_command(
    kraft_acl: list[str], log_dir: Path, words: list[str], status: int, stdout: str, stderr: str
) -> None:
    assert shell(kraft_acl, ["--log-dir", str(log_dir)], *words) == (status, stdout, stderr)


def test_errors_and_variants_from_standard_input(kraft_acl: list[str], log_dir: Path) -> None:
    """The other messages of each command, as a script: Kafka's on stderr, the exit status the worst seen."""
    script = "\n".join(
        [
            "cd /local/version",
            "cd /nope",
            "history /nope",
            "man nope",
            "man ls",
            "authorize User:carol DescribeConfigs TOPIC:ord-x",
            "authorize alice READ TOPIC:orders",
            "authorize User:alice notanip READ TOPIC:orders",
            "authorize User:alice READ orders",
            "who-can READ",
            "who-can describe-configs TRANSACTIONAL_ID:tx/1",
            "at 4",
            "at 99",
            "at soon",
            "l",
            "c x",
            "pwd extra -x",
            "cat",
            f"cat /acl/id/{E}",
            "cat 'unclosed",
        ]
    )
    code, out, err = shell(kraft_acl, ["--log-dir", str(log_dir)], stdin=script)
    assert out == (
        "ls: List metadata nodes.\n\nusage: ls [targets [targets ...]]\n\npositional arguments:\n"
        "  targets                The metadata node paths to list.\n"
        "DENIED\nrule: DefaultDeny\n"
        "who-can DESCRIBE_CONFIGS TRANSACTIONAL_ID:tx/1 at offset 7\n"
        "DENIED  User:svc             any host  DefaultDeny\nDENIED  any other principal  any host  DefaultDeny\n"
        f'{{\n  "id" : "{E}",\n  "resourceType" : 5,\n  "resourceName" : "tx/1",\n  "patternType" : 3,\n'
        '  "principal" : "User:svc",\n  "host" : "*",\n  "operation" : 4,\n  "permissionType" : 3\n}\n'
    )
    assert err == (
        "cd: /local/version: not a directory.\n"
        "cd: /nope: no such directory.\n"
        "history: /nope: no ACL id, and no path to ACLs.\n"
        "man: unknown command nope. Type help to get a list of commands.\n"
        "authorize: principal 'alice' is not Type:name (User:alice)\n"
        "authorize: host 'notanip' is not an IP address (a request comes from a client's address)\n"
        "authorize: unknown resource type 'orders' (one of TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, "
        "DELEGATION_TOKEN, USER)\n"
        "too few arguments\n"
        "at: offset 4 is inside the batch at offsets 3..4: its records apply together, so no state exists between "
        "them; use 3 or 5\n"
        "at: offset 99 is beyond the high-water mark 7 (the log holds offsets below 7)\n"
        "at: 'soon' is not an offset (a number, or latest)\n"
        "invalid choice: 'l': did you mean 'ls'?\n"
        "ambiguous command: c could match cat, cd\n"
        "unrecognized arguments: '-x extra'\n"
        "too few arguments\n"
        "cannot read the line 'cat 'unclosed': No closing quotation\n"
    )
    assert code == 2


def test_provenance(kraft_acl: list[str], log_dir: Path) -> None:
    code, out, err = shell(kraft_acl, ["--log-dir", str(log_dir)], "tree", "/provenance")
    assert (code, err) == (0, "")
    assert out == (
        "epoch:\n  1\nfollowing:\n  false\nhighWaterMark:\n  7\nlastOffset:\n  6\noffset:\n  7\nready:\n  true\n"
        f"snapshot:\n  none\nsource:\n  log directory {log_dir}\ntime:\n  2023-11-14T22:13:24Z[UTC]\n"
    )


def test_commands_from_standard_input(kraft_acl: list[str], log_dir: Path) -> None:
    """One command per line (blank lines and # comments skipped); relative paths, `..`, `.`; errors on stderr."""
    script = (
        "cd /acl/by-resource/TOPIC\nls\ncd LITERAL/../PREFIXED/./ord\npwd\nls ..\n\n# a comment\n"
        "cat ../../LITERAL/orders/*\ncd ..\npwd\nls /image/acls/M* /image/acls/{I,R}*\nbogus\nhistory 3\nexit\nls\n"
    )
    code, out, err = shell(kraft_acl, ["--log-dir", str(log_dir)], stdin=script)
    assert out == (
        "LITERAL\nPREFIXED\n/acl/by-resource/TOPIC/PREFIXED/ord\nord\n"
        f"{ACL_F}\n/acl/by-resource/TOPIC/PREFIXED\n{C}\n{B}\n{D}\n"
        "    8  ls /image/acls/M* /image/acls/{I,R}*\n    9  bogus\n   10  history 3\n"
    )
    assert (code, err) == (2, INVALID.format("bogus"))


def test_at_offset_and_moving_in_time(kraft_acl: list[str], log_dir: Path) -> None:
    source = ["--log-dir", str(log_dir), "--at-offset", "3"]
    assert shell(kraft_acl, source, "ls", "/acl/id") == (0, f"{A}\n{B}\n{C}\n", "")
    script = f"at 5\nls /acl/id\nat 2\nls /acl/id\nat latest\nls /acl/id\ncat /acl/id/{A}\n"
    code, out, err = shell(kraft_acl, source, stdin=script)
    assert out == (
        "offset 5 (high-water mark 7; pinned: `at latest` returns to the newest state)\n"
        f"{A}\n{B}\n{C}\n{D}\n{E}\n"
        "offset 2 (high-water mark 7; pinned: `at latest` returns to the newest state)\n"
        f"{A}\n{B}\n"
        f"offset 7 (high-water mark 7; the newest state)\n{IDS}"
    )
    assert (code, err) == (1, f"cat: /acl/id/{A}: No such file or directory.\n")


def test_snapshot_source(kraft_acl: list[str], log_dir: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(log_dir, tmp_path / "log"))
    created = subprocess.run([*kraft_acl, "snapshot", "create", "--log-dir", str(copy)], capture_output=True, text=True)
    snapshot = Path(created.stdout.strip())
    source = ["--snapshot", str(snapshot)]
    assert shell(kraft_acl, source, "ls", "/image/acls") == (0, IDS, "")
    assert shell(kraft_acl, source, "at") == (0, f"offset 7 (snapshot {snapshot}: one fixed state)\n", "")
    assert shell(kraft_acl, source, "at", "3") == (
        1,
        "",
        "at: a snapshot file holds one state (offset 7); moving in time needs a log (--log-dir or "
        "--bootstrap-server)\n",
    )
    assert shell(kraft_acl, source, "history", B)[2] == (
        "history: a snapshot file keeps no history (it holds the state at offset 7); the history of an ACL needs its"
        " log (--log-dir or --bootstrap-server)\n"
    )
    # The log directory with that snapshot: the state comes from the snapshot (and the tail after it, none here).
    assert shell(kraft_acl, ["--log-dir", str(copy)], "cat", "/provenance/snapshot") == (0, f"{snapshot}\n", "")


def test_super_users_from_the_config(kraft_acl: list[str], log_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("super.users=User:root;User:mallory\nallow.everyone.if.no.acl.found=true\n")
    source = ["--log-dir", str(log_dir), "--config", str(config)]
    assert shell(kraft_acl, source, "who-can", "WRITE", "TOPIC:orders") == (
        0,
        "who-can WRITE TOPIC:orders at offset 7\nDENIED   User:alice           any host  DefaultDeny\n"
        "ALLOWED  User:mallory         any host  SuperUser\nALLOWED  User:root            any host  SuperUser\n"
        "DENIED   any other principal  any host  DefaultDeny\n",
        "",
    )
    assert shell(kraft_acl, source, "authorize", "User:x", "READ", "GROUP:other")[1] == "ALLOWED\nrule: DefaultAllow\n"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ([], "give exactly one of --log-dir DIR, --snapshot FILE, --bootstrap-server HOST:PORT and --server URL"),
        (["--log-dir", "LOG", "--snapshot", "x"], "give exactly one of --log-dir DIR"),
        (["--log-dir", "/nonexistent/dir"], "log directory /nonexistent/dir does not exist"),
        (["--log-dir", "LOG", "--at-offset", "4"], "--at-offset: offset 4 is inside the batch at offsets 3..4"),
        (["--log-dir", "LOG", "--at-offset", "8"], "--at-offset: offset 8 is beyond the high-water mark 7"),
        (["--snapshot", "/nonexistent.checkpoint"], "/nonexistent.checkpoint: no such snapshot file"),
        (
            ["--snapshot", "NOT_A_SNAPSHOT"],
            "neither a metadata log directory nor a snapshot (kraft-acl's or Apache Kafka's `.checkpoint`)",
        ),
        (["--snapshot", "GOLDEN", "--at-offset", "9"], "--at-offset 9: "),
        (["--log-dir", "LOG", "--config", "/nonexistent.properties"], "/nonexistent.properties"),
    ],
)
def test_source_errors(kraft_acl: list[str], log_dir: Path, source: list[str], message: str) -> None:
    golden = Path(__file__).parent / "data/kafka-golden/00000000000000000004-0000000001.checkpoint"
    named = {"LOG": str(log_dir), "GOLDEN": str(golden), "NOT_A_SNAPSHOT": __file__}
    args = [named.get(a, a) for a in source]
    code, out, err = shell(kraft_acl, args, "ls")
    assert (code, out) == (2, "")
    assert err.startswith("kraft-acl: error: ") and message in err and err.count("\n") == 1, err


def test_kafka_metadata_is_recognised_before_any_kraft_acl_reader(kraft_acl: list[str], tmp_path: Path) -> None:
    """Apache Kafka's own files are recognised before any kraft-acl reader opens them (never "not a segment")."""
    golden = Path(__file__).parent / "data/kafka-golden/00000000000000000004-0000000001.checkpoint"
    kafka_dir = tmp_path / "__cluster_metadata-0"
    kafka_dir.mkdir()
    shutil.copy(golden, kafka_dir / golden.name)
    for source in (["--snapshot", str(golden)], ["--log-dir", str(kafka_dir)]):
        code, out, err = shell(kraft_acl, source, "authorize", "User:bob", "READ", "TOPIC:foo")
        assert code == 0 and out.startswith("ALLOWED\nrule: MatchingAcl(") and "resourceName=foo" in out, err
    # Only the snapshot's end exists in a directory holding nothing but a snapshot: no state at 2 to move to.
    code, _, err = shell(kraft_acl, ["--log-dir", str(kafka_dir)], "at", "2")
    assert code == 1 and err.startswith("at: ") and "no snapshot ends at or below offset 2" in err, err


def test_json_output_one_answer_per_command(kraft_acl: list[str], log_dir: Path) -> None:
    """`-o json`: each command's answer as one JSON object (the command, its status, its values or its text), for
    one command and for commands read from standard input; the same decisions as the text form."""
    source = ["--log-dir", str(log_dir), "-o", "json"]
    code, out, err = shell(kraft_acl, source, "authorize", "User:alice", "READ", "TOPIC:orders")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "command": "authorize User:alice READ TOPIC:orders",
        "status": 0,
        "result": "ALLOWED",
        "rule": f"MatchingAcl(acl={ACL_F})",
        "acl_id": F,
        "offset": 7,
    }
    code, out, err = shell(kraft_acl, source, stdin="ls /acl\nwho-can DESCRIBE TOPIC:orders\nls /nope\nman pwd\n")
    answers = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and err == "" and [a["status"] for a in answers] == [0, 0, 1, 0]
    assert answers[0]["directories"] == {"acl": ["by-principal", "by-resource", "id"]}
    rows = answers[1]["rows"]
    assert rows[0] == {
        "result": "ALLOWED",
        "principal": "User:alice",
        "host": "any host",
        "rule": f"MatchingAcl {B}",
        "also": f"also applying: {F}",
    }
    assert set(answers[1]["acls"]) >= {B, F} and answers[1]["offset"] == 7
    assert answers[2]["errors"] == ["ls: /nope: no such file or directory."]
    assert answers[3]["output"][0].startswith("pwd: ")  # a command without values of its own: its text, as lines
