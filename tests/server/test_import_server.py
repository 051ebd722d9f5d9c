"""`kraft-acl import` / `export` through a running serve (`--server URL`) and its POST /v1/acls/import: one
atomic batch written by serve's controller, counts as for a log, every refusal naming the element and field."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftacl.api.endpoints import IMPORT_ACLS
from kraftacl.authorizer.inputs.acls_json import acls_json_text
from kraftacl.authorizer.inputs.whatif import load_acls
from kraftacl.harness.serve_process import kraft_acl_command
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.server.http import GATHER_ABOVE
from tests.cli.test_log_cmds import assert_one_line_error
from tests.server.serve_process import ADMIN_TOKEN, ALICE_TOKEN, ServeProcess, base_properties

ACLS: list[dict[str, str]] = [
    {
        "resource_type": "TOPIC",
        "resource_name": f"orders-{n}",
        "pattern_type": "PREFIXED" if n % 2 else "LITERAL",
        "principal": f"User:u{n % 3}",
        "host": "*",
        "operation": "READ" if n % 4 else "WRITE",
        "permission_type": "DENY" if n == 5 else "ALLOW",
    }
    for n in range(12)
]


def _run(*args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*kraft_acl_command(), *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )


def _count(serve: ServeProcess) -> int:
    with serve.client(token=ADMIN_TOKEN) as http:
        return int(http.get("/v1/acls/count").json()["count"])


def _remote(serve: ServeProcess, token: str = ADMIN_TOKEN) -> list[str]:
    return ["--server", serve.url("CLIENT"), "--token", token]


@pytest.fixture(scope="module")
def broker_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A broker-role serve with small body limits: import.max.bytes is the import route's own."""
    work: Path = tmp_path_factory.mktemp("broker-serve")
    FileLog(work / "log").close()  # a broker-role serve reads the log its controller created
    props = base_properties(work, process_roles="broker", request_max_bytes="1024", import_max_bytes="20000")
    process = ServeProcess(work, props).start()
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output()


def test_import_through_serve_reports_like_a_log_and_writes_one_batch(serve: ServeProcess, tmp_path: Path) -> None:
    source = tmp_path / "acls.json"
    source.write_text(json.dumps([*ACLS, ACLS[3], ACLS[0]]))
    before = _count(serve)
    dry = _run("import", "--from-json", source, *_remote(serve), "--dry-run", "-o", "json")
    local_dry = _run("import", "--from-json", source, "--log-dir", tmp_path / "log", "--dry-run", "-o", "json")
    assert dry.returncode == local_dry.returncode == 0, dry.stderr + local_dry.stderr
    remote_report, local_report = json.loads(dry.stdout), json.loads(local_dry.stdout)
    assert remote_report["target"] == f"the kraft-acl serve at {serve.url('CLIENT')}"
    for key in ("read", "added", "present", "repeated", "offsets", "would_add"):
        assert remote_report[key] == local_report[key], key
    assert _count(serve) == before  # a dry run writes nothing

    done = _run("import", "--from-json", source, *_remote(serve), "--check")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith(f"Added 12 ACL(s) to the kraft-acl serve at {serve.url('CLIENT')} in one batch")
    assert lines[1].endswith("(0 already present, 2 repeated in the source)")
    assert lines[2].startswith("Check: ") and "holds exactly the 12 ACL(s)" in lines[2]
    assert _count(serve) == before + 12

    # the batch is one record batch of serve's log, read (read-only) while serve holds the writer lock
    first, last = (int(n) for n in lines[1].split(" at offsets ")[1].split(" ")[0].split(".."))
    dump = _run("log", "dump", "--log-dir", serve.properties["metadata.log.dir"], "--from-offset", first, "-o", "json")
    assert dump.returncode == 0, dump.stderr
    batch = json.loads(dump.stdout.splitlines()[0])
    assert (batch["baseOffset"], batch["lastOffset"], batch["count"]) == (first, last, 12)

    again = json.loads(_run("import", "--from-json", source, *_remote(serve), "-o", "json").stdout)
    assert (again["added"], again["present"], again["repeated"], again["offsets"]) == (0, 12, 2, None)


def test_an_import_body_of_megabytes_is_gathered_as_it_arrives(serve: ServeProcess) -> None:
    """A body past GATHER_ABOVE grows in one buffer as its pieces arrive: every ACL of it is read and imported."""
    acls = [{**ACLS[0], "resource_name": f"gathered-{n}", "principal": f"User:g{n % 7}"} for n in range(16_000)]
    body = {"acls": [*acls, acls[7]]}
    assert len(json.dumps(body)) > 2 * GATHER_ABOVE
    before = _count(serve)
    status, out = serve.call(IMPORT_ACLS, ADMIN_TOKEN, body)
    assert status == 200, out
    assert (out["read"], out["added"], out["present"], out["repeated"]) == (16_001, 16_000, 0, 1)
    assert _count(serve) == before + 16_000


def test_export_through_serve_is_the_state_of_one_offset(serve: ServeProcess, tmp_path: Path) -> None:
    source = tmp_path / "acls.json"
    source.write_text(json.dumps(ACLS))
    assert _run("import", "--from-json", source, *_remote(serve)).returncode == 0
    exported = _run("export", *_remote(serve), "--out", tmp_path / "out.json")
    assert exported.returncode == 0, exported.stderr
    assert "from the kraft-acl serve at" in exported.stderr
    text = (tmp_path / "out.json").read_text()
    with serve.client(token=ADMIN_TOKEN) as http:
        everything = http.post("/v1/acls/describe", json={}).json()
    assert len(json.loads(text)) == len(everything["acls"]) == _count(serve)
    assert set(map(json.dumps, json.loads(acls_json_text(load_acls(source))))) <= set(map(json.dumps, json.loads(text)))
    assert text == _run("export", *_remote(serve)).stdout  # stable bytes
    assert_one_line_error(*_stderr(_run("export", *_remote(serve), "--at-offset", "3")), "--at-offset reads a log")


def _stderr(done: subprocess.CompletedProcess[str]) -> tuple[int, str]:
    return done.returncode, done.stderr


def test_import_check_through_serve_lists_differences(serve: ServeProcess, tmp_path: Path) -> None:
    source = tmp_path / "acls.json"
    source.write_text(json.dumps(ACLS[:2]))
    extra = ["--add", "--allow-principal", "User:eve", "--operation", "Write", "--topic", "only-in-serve"]
    assert _run("acls", *_remote(serve), *extra).returncode == 0
    checked = _run("import", "--from-json", source, *_remote(serve), "--check")
    assert checked.returncode == 1, checked.stderr
    assert "+ resource_type=TOPIC resource_name=only-in-serve" in checked.stdout and "(in serve only)" in checked.stdout


def test_import_refusals_name_the_element_and_field_and_write_nothing(serve: ServeProcess, tmp_path: Path) -> None:
    before = _count(serve)
    url = "/v1/acls/import"
    cases = [
        ({"acls": [ACLS[0], {**ACLS[1], "operation": "READD"}]}, "$.acls[1].operation", "'READD' is not one of"),
        ({"acls": [ACLS[0], {**ACLS[1], "principal": "alice"}]}, "$.acls[1].principal", "Could not parse principal"),
        (
            {"acls": [{**ACLS[0], "resource_type": "CLUSTER", "resource_name": "x"}]},
            "$.acls[0].resource_name",
            "The only valid name for the CLUSTER resource",
        ),
        ({"acls": [{**ACLS[0], "pattern_type": "MATCH"}]}, "$.acls[0].pattern_type", "Invalid patternType MATCH"),
        ({"acls": [{k: v for k, v in ACLS[0].items() if k != "host"}]}, "$.acls[0]", "missing required field `host`"),
        ({"acls": [{**ACLS[0], "host": 7}]}, "$.acls[0].host", "Expected `str`"),
        ({"acls": [], "dry_run": "yes"}, "$.dry_run", "Expected `bool`"),
        ({"acl": []}, "$", "unknown field `acl`"),
    ]
    with serve.client(token=ADMIN_TOKEN) as http:
        for body, field, message in cases:
            answer = http.post(url, json=body)
            assert answer.status_code == 400, (body, answer.text)
            error = answer.json()["error"]
            assert (error["code"], error["field"]) == ("INVALID_REQUEST", field), (body, error)
            assert message in error["message"], (body, error)
        malformed = http.post(url, content=b'{"acls": [', headers={"content-type": "application/json"})
        assert malformed.status_code == 400 and "malformed JSON" in malformed.json()["error"]["message"]
    assert _count(serve) == before

    # The CLI: one line, exit 2, the field serve named; nothing written
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([ACLS[0], {**ACLS[1], "principal": "alice"}]))
    assert_one_line_error(
        *_stderr(_run("import", "--from-json", bad, *_remote(serve))),
        str(bad),
        "HTTP 400 INVALID_REQUEST",
        "Could not parse principal",
        "field $.acls[1].principal",
    )
    assert _count(serve) == before
    assert_one_line_error(
        *_stderr(_run("import", "--from-json", bad, *_remote(serve), "--log-dir", tmp_path / "x")),
        "give one place to import into",
    )


def test_import_needs_alter_on_the_cluster_and_a_controller(
    serve: ServeProcess, broker_serve: ServeProcess, tmp_path: Path
) -> None:
    source = tmp_path / "acls.json"
    source.write_text(json.dumps(ACLS[:3]))
    before = _count(serve)
    refused = _run("import", "--from-json", source, *_remote(serve, ALICE_TOKEN))
    assert refused.returncode == 1 and "HTTP 403 CLUSTER_AUTHORIZATION_FAILED" in refused.stderr, refused.stderr
    with serve.client(token=None) as http:
        assert http.post("/v1/acls/import", json={"acls": ACLS[:3]}).status_code == 401
    assert _count(serve) == before

    not_controller = _run("import", "--from-json", source, *_remote(broker_serve))
    assert not_controller.returncode == 1 and "HTTP 421 NOT_CONTROLLER" in not_controller.stderr
    assert len(not_controller.stderr.strip().splitlines()) == 1, not_controller.stderr


def test_import_has_its_own_body_limit(broker_serve: ServeProcess, tmp_path: Path) -> None:
    """import.max.bytes (20,000 here) admits a body request.max.bytes (1,024) refuses elsewhere; both at the head."""
    body = json.dumps({"acls": ACLS}).encode()
    assert 1024 < len(body) < 20_000
    with broker_serve.client(token=ADMIN_TOKEN) as http:
        assert http.post("/v1/acls/import", content=body).status_code == 421  # a broker-role serve: at the head
    props = base_properties(tmp_path, request_max_bytes="1024", import_max_bytes="20000")
    with ServeProcess(tmp_path, props).start() as controller, controller.client(token=ADMIN_TOKEN) as http:
        assert http.post("/v1/acls/import", content=body).status_code == 200
        too_big = http.post("/v1/acls/create", content=body)
        assert too_big.status_code == 413 and "request.max.bytes (1024)" in too_big.json()["error"]["message"]
        huge = json.dumps({"acls": ACLS * 20}).encode()
        answer = http.post("/v1/acls/import", content=huge)
        assert answer.status_code == 413 and "import.max.bytes (20000)" in answer.json()["error"]["message"]
