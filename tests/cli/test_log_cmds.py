"""Tests of `kraft-acl log dump`, `replay`, `diff` and `snapshot ...` over a small log the library writes."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.model.filters import AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter
from kraftacl.authorizer.state.node import AclNode
from kraftacl.cli.app import app
from kraftacl.metadata_log.backends.file.format import encode_frame, iter_frames, read_segment_header
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec.avro import uuid_to_text
from tests.metadata_log.factories import records_for

T0 = 1_700_000_000_000
IDS = {name: uuid_to_text(bytes([byte] * 16)) for name, byte in (("A", 0x11), ("B", 0x22), ("C", 0x33), ("D", 0x44))}
ALICE_READ = StandardAcl(
    ResourceType.TOPIC,
    "foo",
    PatternType.LITERAL,
    "User:alice",
    "*",
    AclOperation.READ,
    AclPermissionType.ALLOW,
)
GROUP_DESCRIBE = StandardAcl(
    ResourceType.GROUP,
    "grp-",
    PatternType.PREFIXED,
    "User:*",
    "10.0.0.1",
    AclOperation.DESCRIBE,
    AclPermissionType.ALLOW,
)
ALICE_DENY = StandardAcl(
    ResourceType.TOPIC,
    "foo",
    PatternType.LITERAL,
    "User:alice",
    "*",
    AclOperation.READ,
    AclPermissionType.DENY,
)
# The log: batch [0..1] adds A, B; [2] adds the DENY C; [3] removes B; [4] adds B's content again as D.
# States exist only between batches: offset 1 is inside batch [0..1], where no state ever existed.
STATES = {0: set(), 2: {"A", "B"}, 3: {"A", "B", "C"}, 4: {"A", "C"}, 5: {"A", "C", "D"}}
# A real KRaft snapshot written by Kafka's own code (a copy of ../shared/spec/golden/, kept as test data).
GOLDEN_KAFKA_SNAPSHOT = Path(__file__).parents[1] / "shell/data/kafka-golden/00000000000000000004-0000000001.checkpoint"


def build_log(directory: Path) -> None:
    """Write the log above with fixed ids and CreateTimes (T0, T0+1000, ...), through the controller."""
    ids, times = iter(IDS.values()), iter(range(T0, T0 + 10_000, 1000))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("kraftacl.metadata_log.backends.file.log.now_ms", lambda: next(times))
        node = AclNode(FileLog(directory), snapshot_dir=directory)
        node.controller.new_id = lambda: next(ids)
        try:
            node.start()
            node.controller.create_acls([ALICE_READ, GROUP_DESCRIBE])
            node.controller.create_acls([ALICE_DENY])
            groups = ResourcePatternFilter(ResourceType.GROUP, None, PatternType.ANY)
            node.controller.delete_acls([AclBindingFilter(groups, AccessControlEntryFilter())])
            node.controller.create_acls([GROUP_DESCRIBE])
        finally:
            node.close()


def snapshot_at(directory: Path, offset: int) -> Path:
    """Write the snapshot of the state at `offset` (a batch boundary) into the log directory, as a node would."""
    node = AclNode(FileLog(directory, read_only=True), snapshot_dir=directory, retain_snapshots=0)
    try:
        node.start(to_offset=offset)
        return node.take_snapshot()
    finally:
        node.close()


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared, read-only log (tests that write work on a copy)."""
    directory = tmp_path_factory.mktemp("log")
    build_log(directory)
    return directory


@pytest.fixture
def log_copy(log_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the log, for tests that write snapshots or damage files."""
    return Path(shutil.copytree(log_dir, tmp_path / "log", ignore=shutil.ignore_patterns(".lock")))


def cli(*args: str | Path) -> tuple[int, str, str]:
    """Run the CLI in this process: (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def run(kraft_acl: list[str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the installed `kraft-acl` as a subprocess."""
    return subprocess.run([*kraft_acl, *map(str, args)], capture_output=True, text=True, timeout=60, check=False)


def assert_one_line_error(code: int, stderr: str, *fragments: str) -> None:
    """Exit 2 and exactly one `kraft-acl: error:` line holding every fragment."""
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kraft-acl: error: "), stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def ids_of(acls: list[dict[str, str]]) -> set[str]:
    names = {v: k for k, v in IDS.items()}
    return {names[a["id"]] for a in acls}


def payload(acl_id: str, acl: StandardAcl) -> str:
    """Kafka's JSON of an AccessControlEntryRecord, written out by hand."""
    return (
        '{"type":"ACCESS_CONTROL_ENTRY_RECORD","version":0,"data":{'
        f'"id":"{acl_id}","resourceType":{acl.resource_type:d},"resourceName":"{acl.resource_name}",'
        f'"patternType":{acl.pattern_type:d},"principal":"{acl.principal}","host":"{acl.host}",'
        f'"operation":{acl.operation:d},"permissionType":{acl.permission_type:d}}}}}'
    )


EXPECTED_DUMP = (
    "\n".join(
        [
            f"baseOffset: 0 lastOffset: 1 count: 2 epoch: 1 CreateTime: {T0}",
            f"| offset: 0 payload: {payload(IDS['A'], ALICE_READ)}",
            f"| offset: 1 payload: {payload(IDS['B'], GROUP_DESCRIBE)}",
            f"baseOffset: 2 lastOffset: 2 count: 1 epoch: 1 CreateTime: {T0 + 1000}",
            f"| offset: 2 payload: {payload(IDS['C'], ALICE_DENY)}",
            f"baseOffset: 3 lastOffset: 3 count: 1 epoch: 1 CreateTime: {T0 + 2000}",
            '| offset: 3 payload: {"type":"REMOVE_ACCESS_CONTROL_ENTRY_RECORD","version":0,"data":{"id":"'
            + IDS["B"]
            + '"}}',
            f"baseOffset: 4 lastOffset: 4 count: 1 epoch: 1 CreateTime: {T0 + 3000}",
            f"| offset: 4 payload: {payload(IDS['D'], GROUP_DESCRIBE)}",
        ]
    )
    + "\n"
)


# -- log dump ------------------------------------------------------------------------------------------


def test_dump_text_is_exact(kraft_acl: list[str], log_dir: Path) -> None:
    proc = run(kraft_acl, "log", "dump", "--log-dir", log_dir)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == EXPECTED_DUMP


def test_dump_json_one_object_per_batch_from_an_offset(log_dir: Path) -> None:
    code, out, _ = cli("log", "dump", "--log-dir", log_dir, "--from-offset", "1", "--output", "json")
    batches = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [(b["baseOffset"], b["lastOffset"], b["count"]) for b in batches] == [
        (0, 1, 2),
        (2, 2, 1),
        (3, 3, 1),
        (4, 4, 1),
    ]
    assert batches[0]["createTime"] == T0 and batches[0]["epoch"] == 1
    assert batches[2]["records"] == [
        {
            "offset": 3,
            "payload": {"type": "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", "version": 0, "data": {"id": IDS["B"]}},
        }
    ]
    assert batches[1]["records"][0]["payload"]["data"] == {
        "id": IDS["C"],
        "resourceType": 2,
        "resourceName": "foo",
        "patternType": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permissionType": 2,
    }


def _frames(segment: Path) -> list[tuple[int, int, bytes]]:
    """(position, base offset, payload) of every frame of a segment."""
    with segment.open("rb") as f:
        _, start = read_segment_header(f)
        return [(fr.position, fr.base_offset, fr.payload) for fr in iter_frames(f, start, segment.stat().st_size, 0)]


def test_dump_stops_at_an_undecodable_batch(log_copy: Path) -> None:
    segment = log_copy / "00000000000000000000.log"
    data = segment.read_bytes()
    position, base, body = _frames(segment)[1]  # batch [2]: a valid frame whose payload is not Avro
    bad = encode_frame(base, 1, 1, T0 + 1000, b"\xff" * len(body))
    segment.write_bytes(data[:position] + bad + data[position + len(bad) :])
    code, out, err = cli("log", "dump", "--log-dir", log_copy)
    assert out == "\n".join(EXPECTED_DUMP.splitlines()[:3]) + "\n"
    assert_one_line_error(code, err, "cannot decode the batch at base offset 2")


def test_dump_salvages_the_batches_before_mid_log_corruption(log_copy: Path) -> None:
    segment = log_copy / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    position = _frames(segment)[2][0]  # batch [3]: flip a payload byte, so the CRC fails; [4] stays valid
    data[position + 40] ^= 0xFF
    segment.write_bytes(bytes(data))
    code, out, err = cli("log", "dump", "--log-dir", log_copy)
    assert out == "\n".join(EXPECTED_DUMP.splitlines()[:5]) + "\n"
    assert_one_line_error(code, err, "from offset 3", f"byte position {position}", "CRC mismatch")


# -- replay and diff ------------------------------------------------------------------------------------


def test_replay_json_subprocess(kraft_acl: list[str], log_dir: Path) -> None:
    proc = run(kraft_acl, "replay", "--log-dir", log_dir, "--to-offset", "3", "--output", "json")
    assert proc.returncode == 0, proc.stderr
    state = json.loads(proc.stdout)
    assert state["offset"] == 3 and state["high_watermark"] == 5 and state["snapshot"] is None
    assert state["provenance"] == {"last_offset": 2, "epoch": 1, "timestamp_ms": T0 + 1000}
    assert ids_of(state["acls"]) == {"A", "B", "C"}
    deny = next(a for a in state["acls"] if a["id"] == IDS["C"])
    assert deny == {
        "id": IDS["C"],
        "resource_type": "TOPIC",
        "resource_name": "foo",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "READ",
        "permission_type": "DENY",
    }


@pytest.mark.parametrize("offset", sorted(STATES))
def test_replay_at_every_offset(log_dir: Path, offset: int) -> None:
    code, out, err = cli("replay", "--log-dir", log_dir, "--to-offset", str(offset), "-o", "json")
    assert code == 0, err
    state = json.loads(out)
    assert ids_of(state["acls"]) == STATES[offset]
    assert state["offset"] == offset and state["provenance"]["last_offset"] == offset - 1


@pytest.mark.parametrize(
    "args",
    [
        ["replay", "--to-offset", "1"],
        ["diff", "--from-offset", "1", "--to-offset", "4"],
        ["diff", "--from-offset", "0", "--to-offset", "1"],
    ],
)
def test_an_offset_inside_a_batch_is_refused(log_dir: Path, args: list[str]) -> None:
    code, _, err = cli(args[0], "--log-dir", log_dir, *args[1:])
    option = args[-2] if args[-1] == "1" else args[1]
    assert_one_line_error(
        code, err, f"{option} 1 is inside the batch at offsets 0..1", "no state exists between them", "use 0 or 2"
    )


def test_dump_into_a_closed_pipe_is_not_reported_as_a_log_error(kraft_acl: list[str], tmp_path: Path) -> None:
    with FileLog(tmp_path) as log:
        for base in range(0, 3000, 10):
            log.append(records_for(base, 10))
    command = [*kraft_acl, "log", "dump", "--log-dir", str(tmp_path)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith("baseOffset: 0 ")
        proc.stdout.close()  # like `| head -1`: the reader goes away while the dump is still writing
        stderr = proc.stderr.read()
        proc.wait(timeout=60)
    assert "kraft-acl: error" not in stderr and "Traceback" not in stderr, stderr


def test_replay_defaults_to_the_high_watermark_and_prints_a_table(log_dir: Path) -> None:
    code, out, _ = cli("replay", "--log-dir", log_dir)
    assert code == 0
    assert out.splitlines()[:3] == [
        "State at offset 5 (high-water mark 5)",
        f"Provenance: last offset 4, epoch 1, timestamp {T0 + 3000} (2023-11-14T22:13:23.000+00:00)",
        "Source: log offsets 0..4 (no snapshot)",
    ]
    assert "3 ACL(s)" in out and IDS["D"] in out and IDS["B"] not in out


def test_replay_sees_a_running_writer(log_copy: Path) -> None:
    node = AclNode(FileLog(log_copy))  # holds the writer lock while the read-only replay runs
    try:
        node.start()
        node.controller.create_acls(
            [
                StandardAcl(
                    ResourceType.TOPIC,
                    "bar",
                    PatternType.LITERAL,
                    "User:x",
                    "*",
                    AclOperation.WRITE,
                    AclPermissionType.ALLOW,
                )
            ]
        )
        code, out, err = cli("replay", "--log-dir", log_copy, "-o", "json")
    finally:
        node.close()
    assert code == 0, err
    assert json.loads(out)["offset"] == 6 and len(json.loads(out)["acls"]) == 4


def test_diff_subprocess(kraft_acl: list[str], log_dir: Path) -> None:
    proc = run(kraft_acl, "diff", "--log-dir", log_dir, "--from-offset", "2", "--to-offset", "5", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    diff = json.loads(proc.stdout)
    assert (diff["from_offset"], diff["to_offset"]) == (2, 5)
    assert ids_of(diff["added"]) == {"C", "D"} and ids_of(diff["removed"]) == {"B"}


def test_diff_text_shows_a_readded_acl_as_both(log_dir: Path) -> None:
    code, out, _ = cli("diff", "--log-dir", log_dir, "--from-offset", "3", "--to-offset", "5")
    assert code == 0
    assert out.splitlines() == [
        "Offsets 3 -> 5: 1 added, 1 removed",
        f"- {IDS['B']} {GROUP_DESCRIBE}",
        f"+ {IDS['D']} {GROUP_DESCRIBE}",
    ]
    assert cli("diff", "--log-dir", log_dir, "--from-offset", "4", "--to-offset", "4")[1] == (
        "Offsets 4 -> 4: 0 added, 0 removed\n"
    )


# -- snapshots ------------------------------------------------------------------------------------------


def test_snapshot_create_list_inspect_verify_subprocess(kraft_acl: list[str], log_copy: Path) -> None:
    created = run(kraft_acl, "snapshot", "create", "--log-dir", log_copy, "--output", "json")
    assert created.returncode == 0, created.stderr
    info = json.loads(created.stdout)
    path = log_copy / "00000000000000000005-0000000001.checkpoint"
    assert info == {"path": str(path), "end_offset": 5, "epoch": 1, "acls": 3, "deleted": []}

    listed = run(kraft_acl, "snapshot", "list", "--log-dir", log_copy, "-o", "json")
    assert json.loads(listed.stdout) == [
        {
            "file": path.name,
            "end_offset": 5,
            "epoch": 1,
            "size": path.stat().st_size,
            "valid": True,
            "records": 3,
            "error": None,
            "usable": True,
            "unusable": None,
        }
    ]

    inspected = json.loads(run(kraft_acl, "snapshot", "inspect", path, "-o", "json").stdout)
    assert (inspected["end_offset"], inspected["epoch"], inspected["records"]) == (5, 1, 3)
    assert inspected["timestamp_ms"] == T0 + 3000 and ids_of(inspected["acls"]) == STATES[5]

    verified = run(kraft_acl, "snapshot", "verify", path)
    assert (verified.returncode, verified.stdout) == (0, "OK: 3 records (end offset 5, epoch 1)\n")
    assert run(kraft_acl, "snapshot", "verify", path, "-o", "table").stdout == verified.stdout
    as_json = run(kraft_acl, "snapshot", "verify", path, "--log-dir", log_copy, "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == {
        "ok": True,
        "file": str(path),
        "format": "kraft-acl snapshot",
        "records": 3,
        "end_offset": 5,
        "epoch": 1,
        "timestamp_ms": inspected["timestamp_ms"],
        "log_dir": str(log_copy),
    }


def test_replay_uses_a_snapshot_at_or_below_the_offset(log_copy: Path) -> None:
    code, out, _ = cli("snapshot", "create", "--log-dir", log_copy)
    path = Path(out.strip())
    assert code == 0 and path.name == "00000000000000000005-0000000001.checkpoint"
    assert json.loads(cli("replay", "--log-dir", log_copy, "-o", "json")[1])["snapshot"] == str(path)
    below = json.loads(cli("replay", "--log-dir", log_copy, "--to-offset", "4", "-o", "json")[1])
    assert below["snapshot"] is None and ids_of(below["acls"]) == STATES[4]
    assert f"Source: snapshot {path}, then no log records" in cli("replay", "--log-dir", log_copy)[1]


def _damage_first_chunk(path: Path) -> int:
    """Flip a byte inside the first record chunk; returns the chunk's byte position."""
    data = bytearray(path.read_bytes())
    (header_length,) = struct.unpack_from(">I", data, 10)  # magic, u16 version, u32 length, u32 crc, JSON
    chunk: int = 18 + header_length
    data[chunk + 12 + 5] ^= 0xFF
    path.write_bytes(bytes(data))
    return chunk


def test_damaged_snapshot_is_reported_and_skipped(log_copy: Path) -> None:
    cli("snapshot", "create", "--log-dir", log_copy)
    path = log_copy / "00000000000000000005-0000000001.checkpoint"
    chunk = _damage_first_chunk(path)
    code, out, err = cli("snapshot", "verify", path)
    assert out == ""
    assert_one_line_error(code, err, str(path), f"at byte {chunk}", "chunk checksum mismatch")
    assert_one_line_error(*cli("snapshot", "inspect", path)[::2], f"at byte {chunk}")
    row = json.loads(cli("snapshot", "list", "--log-dir", log_copy, "-o", "json")[1])[0]
    assert not row["valid"] and row["error"] == f"byte {chunk}: chunk checksum mismatch"
    state = json.loads(cli("replay", "--log-dir", log_copy, "-o", "json")[1])  # falls back to the log
    assert state["snapshot"] is None and ids_of(state["acls"]) == STATES[5]


def test_misnamed_snapshot_is_unusable(log_copy: Path) -> None:
    cli("snapshot", "create", "--log-dir", log_copy)
    wrong = log_copy / "00000000000000000003-0000000001.checkpoint"
    shutil.copy(log_copy / "00000000000000000005-0000000001.checkpoint", wrong)
    assert_one_line_error(
        *cli("snapshot", "verify", wrong)[::2], "file name says end offset 3", "header says end offset 5"
    )
    # SnapshotStore skips a snapshot whose header disagrees with its name: replay uses the log instead
    code, out, _ = cli("replay", "--log-dir", log_copy, "--to-offset", "3")
    assert code == 0, out
    assert "State at offset 3" in out and "no snapshot" in out


def test_snapshot_create_retention_and_refusals(log_copy: Path, tmp_path: Path) -> None:
    for offset in (2, 3, 4):  # older snapshots of this log at its batch boundaries: retention keeps the newest
        snapshot_at(log_copy, offset)
    code, out, err = cli("snapshot", "create", "--log-dir", log_copy, "--retain", "2", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["deleted"] == [f"{end:020d}-0000000001.checkpoint" for end in (2, 3)]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line_error(*cli("snapshot", "create", "--log-dir", empty)[::2], "is empty")
    assert_one_line_error(*cli("snapshot", "create", "--log-dir", tmp_path / "missing")[::2], "does not exist")
    assert not (tmp_path / "missing").exists()
    writer = FileLog(log_copy)
    try:
        code, _, err = cli("snapshot", "create", "--log-dir", log_copy)
    finally:
        writer.close()
    assert code == 1 and re.fullmatch(r"kraft-acl: error: log directory .* is locked by .*\n", err)


# -- malformed usage ------------------------------------------------------------------------------------


def test_malformed_usage_gives_one_line_and_exit_2(log_dir: Path, tmp_path: Path) -> None:
    cases: list[tuple[list[str | Path], tuple[str, ...]]] = [
        (["replay", "--log-dir", log_dir, "--to-offset", "9"], ("--to-offset 9", "high-water mark 5")),
        (["replay", "--log-dir", tmp_path / "nope"], ("log directory", "does not exist")),
        (["replay", "--log-dir", log_dir, "--to-offset", "-1"], ("--to-offset -1 is negative",)),
        (
            ["diff", "--log-dir", log_dir, "--from-offset", "4", "--to-offset", "2"],
            ("--from-offset 4", "above"),
        ),
        (
            ["diff", "--log-dir", log_dir, "--from-offset", "2", "--to-offset", "6"],
            ("--to-offset 6", "mark 5"),
        ),
        (
            ["log", "dump", "--log-dir", log_dir, "--from-offset", "6"],
            ("--from-offset 6", "high-water mark 5"),
        ),
        (["log", "dump", "--log-dir", tmp_path / "nope"], ("does not exist",)),
        (["snapshot", "verify", tmp_path / "nope.checkpoint"], ("no such snapshot file",)),
        (["snapshot", "list", "--log-dir", tmp_path / "nope"], ("does not exist",)),
    ]
    for args, fragments in cases:
        code, out, err = cli(*args)
        assert out == "", args
        assert_one_line_error(code, err, *fragments)


def test_a_directory_that_holds_no_kraft_acl_log_is_refused_by_the_readers(tmp_path: Path) -> None:
    """A mistyped --log-dir (a config directory) is named in one line, exit 2, rather than read as an empty log;
    an empty directory is an empty log."""
    wrong = tmp_path / "config"
    wrong.mkdir()
    (wrong / "server.properties").write_text("a=b\n")
    (wrong / "acls.json").write_text("[]")
    for args in (
        ["log", "dump"],
        ["replay"],
        ["authorize", "--principal", "User:a", "--host", "10.0.0.1", "--operation", "READ", "--topic", "t"],
    ):
        code, out, err = cli(*args, "--log-dir", wrong)
        assert out == "", args
        assert_one_line_error(code, err, f"{wrong} holds no kraft-acl metadata log", "acls.json, server.properties")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("replay", "--log-dir", empty, "-o", "json")[0] == 0
    assert list(empty.iterdir()) == [], "a reader creates nothing"


def test_snapshot_list_shows_files_that_are_not_snapshots(log_copy: Path) -> None:
    (log_copy / "notes.checkpoint").write_text("hello")
    code, out, _ = cli("snapshot", "list", "--log-dir", log_copy, "-o", "json")
    assert code == 0
    assert json.loads(out) == [
        {
            "file": "notes.checkpoint",
            "end_offset": None,
            "epoch": None,
            "size": 5,
            "valid": False,
            "records": None,
            "error": "not a snapshot file name",
            "usable": False,
            "unusable": None,
        }
    ]
    assert cli("snapshot", "list", "--log-dir", log_copy.parent)[1] == f"no snapshots in {log_copy.parent}\n"
