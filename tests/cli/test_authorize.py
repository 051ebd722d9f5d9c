"""`kraft-acl authorize` against an acls.json: the flag form, standard input, the table, and bad input files
(each refused in one line naming file, line and field; random garbage never ends in a traceback)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.test_cli_conventions import invoke
from tests.cli.test_log_cmds import assert_one_line_error, run

ACLS = [
    {
        "resource_type": "TOPIC",
        "resource_name": "orders-",
        "pattern_type": "PREFIXED",
        "principal": "User:alice",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    },
    {
        "resource_type": "TOPIC",
        "resource_name": "orders-eu",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "10.0.0.66",
        "operation": "READ",
        "permission_type": "DENY",
    },
    {
        "resource_type": "GROUP",
        "resource_name": "billing",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "ALL",
        "permission_type": "ALLOW",
    },
]
ALICE_READ = {
    "principal": "User:alice",
    "host": "10.0.0.1",
    "operation": "READ",
    "resource_type": "TOPIC",
    "resource_name": "orders-eu",
}
QUESTION = ("--principal", "User:alice", "--host", "10.0.0.1", "--operation", "Read", "--topic", "orders-eu")


@pytest.fixture
def acls(tmp_path: Path) -> Path:
    path = tmp_path / "acls.json"
    path.write_text(json.dumps(ACLS))
    return path


def write_lines(path: Path, *requests: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in requests))
    return path


# ---- the flag form and standard input ----------------------------------------------------------------------


def test_one_question_with_flags(acls: Path) -> None:
    assert invoke("authorize", "--acls", acls, *QUESTION) == (0, '{"result": "ALLOWED"}\n', "")
    denied = ("--principal", "User:alice", "--host", "10.0.0.66", "--operation", "READ", "--topic", "orders-eu")
    assert invoke("authorize", "--acls", acls, *denied)[1] == '{"result": "DENIED"}\n'
    group = ("--principal", "User:alice", "--host", "10.0.0.1", "--operation", "delete", "--group", "billing")
    assert invoke("authorize", "--acls", acls, *group, "--explain")[1].startswith(
        '{"result": "ALLOWED", "rule": "MatchingAcl(acl=StandardAcl(resourceType=GROUP'
    )
    cluster = ("--principal", "User:alice", "--host", "10.0.0.1", "--operation", "IdempotentWrite", "--cluster")
    assert invoke("authorize", "--acls", acls, *cluster)[1] == '{"result": "DENIED"}\n'


def test_the_installed_command_answers_one_question(kraft_acl: list[str], acls: Path) -> None:
    proc = run(kraft_acl, "authorize", "--acls", acls, *QUESTION, "-o", "table")
    assert proc.returncode == 0, proc.stderr
    assert "authorize: User:alice from 10.0.0.1" in proc.stdout and "READ on TOPIC:orders-eu" in proc.stdout
    assert "ALLOWED" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give --requests FILE, or one question: --principal, --host, --operation and a resource"),
        (QUESTION[:6], "a question names exactly one resource"),
        ((*QUESTION, "--group", "g"), "a question names exactly one resource: --topic, --group, --cluster"),
        (QUESTION[2:], "a question needs --principal"),
        (("--topic", "t"), "a question needs --principal"),
        ((*QUESTION[:5], "Reed", *QUESTION[6:]), "invalid operation 'Reed'"),
        (
            ("--principal", "alice", *QUESTION[2:]),
            "--principal: expected a string in format principalType:principalName",
        ),
        (("--host", "localhost", *QUESTION[:2], *QUESTION[4:]), "--host: 'localhost' is not an IP address"),
        ((*QUESTION, "--requests", "r.jsonl"), "give either --requests FILE or the options of one question"),
    ],
)
def test_a_bad_question_is_one_line(acls: Path, args: tuple[str, ...], message: str) -> None:
    code, out, err = invoke("authorize", "--acls", acls, *args)
    assert_one_line_error(code, err, message)
    assert out == ""


def test_acls_that_create_acls_would_refuse_are_decided_with_a_warning(tmp_path: Path) -> None:
    """An ACL no cluster could be given through its API (a principal without a type, an empty resource name) is
    decided as stored, as Kafka decides one that reached its log some other way, with one warning per ACL: the
    file may be a mistake that `import` refuses. Twelve of them: ten warnings, then how many more."""
    bad = [{**ACLS[0], "principal": "carol"}, {**ACLS[2], "resource_name": ""}]
    path = tmp_path / "acls.json"
    path.write_text(json.dumps([ACLS[0], *bad]))
    code, out, err = invoke("authorize", "--acls", path, *QUESTION)
    assert (code, out) == (0, '{"result": "ALLOWED"}\n')
    assert err.splitlines() == [
        f"kraft-acl: warning: {path}: element 1: Could not parse principal from `carol` (no colon is present "
        "separating the principal type from the principal name) (CreateAcls and import refuse this ACL; it is "
        "decided as stored)",
        f"kraft-acl: warning: {path}: element 2: Invalid empty resource name (CreateAcls and import refuse this "
        "ACL; it is decided as stored)",
    ]
    path.write_text(json.dumps([{**bad[0], "resource_name": f"t{n}"} for n in range(12)]))
    lines = invoke("authorize", "--acls", path, *QUESTION)[2].splitlines()
    assert len(lines) == 11 and lines[-1] == f"kraft-acl: warning: {path}: 2 more ACLs that CreateAcls would refuse"


def test_requests_from_standard_input(kraft_acl: list[str], acls: Path, tmp_path: Path) -> None:
    lines = json.dumps(ALICE_READ) + "\n" + json.dumps({**ALICE_READ, "host": "10.0.0.66"}) + "\n"
    code, out, err = invoke("authorize", "--acls", acls, "--requests", "-", stdin=lines)
    assert (code, out, err) == (0, '{"result": "ALLOWED"}\n{"result": "DENIED"}\n', "")
    code, _, err = invoke("authorize", "--acls", acls, "--requests", "-", stdin='{"kind": "nope"}\n')
    assert_one_line_error(code, err, "<stdin>: line 1: field 'kind': expected one of authorize")
    code, _, err = invoke("authorize", "--acls", "-", "--requests", "-", stdin="[]")
    assert_one_line_error(code, err, "--acls and --requests cannot both read standard input")
    proc = run_with_stdin(kraft_acl, lines, "authorize", "--acls", acls, "--requests", "-")
    assert proc == (0, '{"result": "ALLOWED"}\n{"result": "DENIED"}\n')
    stdin_acls = run_with_stdin(kraft_acl, json.dumps(ACLS), "authorize", "--acls", "-", *QUESTION)
    assert stdin_acls == (0, '{"result": "ALLOWED"}\n')


def run_with_stdin(kraft_acl: list[str], stdin: str, *args: str | Path) -> tuple[int, str]:
    import subprocess

    proc = subprocess.run(
        [*kraft_acl, *map(str, args)], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )
    return proc.returncode, proc.stdout


# ---- the table: ACLs and operation names, not counts and integers ------------------------------------------------


def test_the_table_shows_the_acls_a_filter_found_and_the_operations_by_name(acls: Path, tmp_path: Path) -> None:
    requests = write_lines(
        tmp_path / "r.jsonl",
        {
            "kind": "describe",
            "filter": {"resource_type": "TOPIC", "resource_name": "orders-eu", "pattern_type": "MATCH"},
        },
        {
            "kind": "authorized_operations",
            "principal": "User:alice",
            "host": "10.0.0.1",
            "resource_type": "GROUP",
            "resource_name": "billing",
        },
        {"kind": "describe", "filter": {"principal": "User:nobody"}},
    )
    code, out, err = invoke("authorize", "--acls", acls, "--requests", requests, "-o", "table", env={"COLUMNS": "200"})
    assert code == 0, err
    assert "2 ACLs:" in out
    assert "TOPIC:orders- (PREFIXED) ALLOW User:alice READ from *" in out
    assert "TOPIC:orders-eu (LITERAL) DENY User:alice READ from 10.0.0.66" in out
    assert "READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (3400)" in out  # every GROUP operation
    assert "0 ACLs" in out
    code, json_out, _ = invoke("authorize", "--acls", acls, "--requests", requests)  # json stays the conformance form
    assert json.loads(json_out.splitlines()[1]) == {"authorized_operations": 3400}


# ---- what Kafka refuses, and bad input files ---------------------------------------------------------------------


def test_a_non_literal_request_pattern_is_refused_as_kafka_refuses_it(acls: Path, tmp_path: Path) -> None:
    requests = write_lines(
        tmp_path / "r.jsonl",
        ALICE_READ,
        {**ALICE_READ, "pattern_type": "PREFIXED"},
        {**ALICE_READ, "pattern_type": "LITERAL"},
    )
    code, out, err = invoke("authorize", "--acls", acls, "--requests", requests)
    assert code == 1 and err == ""
    assert [json.loads(line) for line in out.splitlines()] == [
        {"result": "ALLOWED"},
        {"error": f"{requests}: line 2: Only literal resources are supported. Got: PREFIXED"},
        {"result": "ALLOWED"},
    ]


@pytest.mark.parametrize(
    ("acls_text", "fragments"),
    [
        ('[{"resource_type": "TOPIC"', ["not valid JSON", "line 1 column 27"]),
        (json.dumps([{**ACLS[0], "principle": "User:bob"}]), ["element 0: field 'principle': unknown field"]),
        (json.dumps([ACLS[0], {**ACLS[1], "pattern_type": "literal"}]), ["element 1: field 'pattern_type'", "LITERAL"]),
        ('[{"resource_type": "TOPIC", "resource_type": "GROUP"}]', ["element 0: duplicate key 'resource_type'"]),
        ('[{"resource_type": NaN}]', ["element 0: field 'resource_type': NaN is not a JSON number"]),
        ("[" * 5000 + "]" * 5000, ["JSON nested more than 64 levels deep"]),
        (json.dumps([{**ACLS[0], "resource_name": "x" * 40000}]), ["field 'resource_name': 40000 UTF-8 bytes"]),
        (json.dumps([{**ACLS[0], "operation": 2**63}]), ["field 'operation': the integer 9223372036854775808"]),
    ],
)
def test_a_bad_acls_file_is_one_line_naming_where(tmp_path: Path, acls_text: str, fragments: list[str]) -> None:
    path = tmp_path / "acls.json"
    path.write_text(acls_text)
    code, out, err = invoke("authorize", "--acls", path, *QUESTION)
    assert_one_line_error(code, err, str(path), *fragments)
    assert out == ""


@pytest.mark.parametrize(
    ("line", "fragments"),
    [
        ({**ALICE_READ, "resourceName": "x"}, ["line 2: field 'resourceName': unknown field"]),
        ({**ALICE_READ, "operation": "Read"}, []),  # fromString upper-cases: accepted
        ({**ALICE_READ, "pattern_type": "prefixed"}, ["line 2: field 'pattern_type'", "case-sensitive"]),
        ({"kind": "describe", "filter": {"pattern_type": "match"}}, ["line 2: field 'filter.pattern_type'"]),
        ({"kind": "by_resource_type", **ALICE_READ}, ["line 2: field 'resource_name': unknown field"]),
    ],
)
def test_the_same_enum_and_key_rules_in_request_files(
    acls: Path, tmp_path: Path, line: dict[str, Any], fragments: list[str]
) -> None:
    requests = write_lines(tmp_path / "r.jsonl", ALICE_READ, line)
    code, out, err = invoke("authorize", "--acls", acls, "--requests", requests)
    if fragments:
        assert_one_line_error(code, err, f"{requests}: ", *fragments)
    else:
        assert code == 0 and out.count("ALLOWED") == 2, err


def test_a_bad_config_file_is_one_line(acls: Path, tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("super.users=User:a\nsuper.users.extra=" + "y" * 33000 + "\n")
    code, _, err = invoke("authorize", "--acls", acls, "--config", config, *QUESTION)
    assert_one_line_error(code, err, f"{config}: line 2: key 'super.users.extra': 33000 UTF-8 bytes")


# ---- garbage in: one line or an answer, never a traceback ------------------------------------------------------------

FIELDS = [*ACLS[0], *ALICE_READ, "kind", "filter", "id", "why", "extra"]
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(
        ["TOPIC", "topic", "PREFIXED", "prefixed", "ANY", "READ", "ALLOW", "describe", "10.0.0.1", "User:a"]
    )
)
JSON_ISH = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=9),
    max_leaves=25,
)


def as_text(value: Any) -> str:
    return json.dumps(value, allow_nan=True)  # NaN and Infinity written as JavaScript would


GARBAGE = (
    st.binary(max_size=300).map(lambda b: b.decode("latin-1"))
    | JSON_ISH.map(as_text)
    | st.lists(JSON_ISH.map(as_text), max_size=4).map("\n".join)
)
KINDS = [
    ALICE_READ,
    {k: v for k, v in ALICE_READ.items() if k != "resource_name"} | {"kind": "by_resource_type"},
    {k: v for k, v in ALICE_READ.items() if k != "operation"} | {"kind": "authorized_operations"},
    {"kind": "describe", "filter": {"resource_type": "ANY", "pattern_type": "MATCH"}},
]
CHANGES: st.SearchStrategy[dict[str, object]] = st.just({}) | st.dictionaries(  # many stay valid
    st.sampled_from(FIELDS), LEAVES, max_size=1
)
NEAR_ACLS = st.lists(st.builds(lambda acl, change: {**acl, **change}, st.sampled_from(ACLS), CHANGES), max_size=5)
NEAR_REQUESTS = st.lists(st.builds(lambda req, change: {**req, **change}, st.sampled_from(KINDS), CHANGES), min_size=1)
# Two in three files are near-valid, so that many examples reach the decisions (exit 0 or 1), not only the parser.
ACLS_FILES = st.integers(0, 2).flatmap(lambda n: GARBAGE if n == 0 else NEAR_ACLS.map(as_text))
REQUESTS_FILES = st.integers(0, 2).flatmap(
    lambda n: GARBAGE if n == 0 else NEAR_REQUESTS.map(lambda reqs: "\n".join(map(as_text, reqs)))
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(acls_text=ACLS_FILES, requests_text=REQUESTS_FILES)
def test_garbage_input_files_never_end_in_a_traceback(acls_text: str, requests_text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        acls, requests = Path(tmp) / "acls.json", Path(tmp) / "r.jsonl"
        acls.write_bytes(acls_text.encode("utf-8", "surrogatepass"))
        requests.write_bytes(requests_text.encode("utf-8", "surrogatepass"))
        code, out, err = invoke("authorize", "--acls", acls, "--requests", requests, "-o", "table")
    assert "internal error" not in err and "Traceback" not in err + out
    if code == 2:
        assert_one_line_error(code, err)
    else:  # nothing on stderr but the warnings about ACLs that CreateAcls would refuse
        assert code in (0, 1) and all(line.startswith("kraft-acl: warning: ") for line in err.splitlines()), (code, err)


def test_garbage_through_the_installed_command(kraft_acl: list[str], tmp_path: Path) -> None:
    acls = tmp_path / "acls.json"
    for garbage in (b"\x00\xff\xfe", b'[{"a": 1e999}]', b"[" * 3000, b'[{"resource_type": "\\ud800"}]', b""):
        acls.write_bytes(garbage)
        proc = run(kraft_acl, "authorize", "--acls", acls, *QUESTION)
        assert_one_line_error(proc.returncode, proc.stderr, str(acls))
