"""The CLI on Apache Kafka's own KRaft files (golden snapshot, synthetic logs) and `import` / `export`."""

from __future__ import annotations

import json
from pathlib import Path

from kraftacl.metadata_log.kafka_files.files import PARTITION_DIR
from tests.authorizer.history.test_kafka_state import LOG, A, B, D
from tests.cli.test_log_cmds import assert_one_line_error, cli
from tests.metadata_log.kafka_files import write_snapshot
from tests.metadata_log.test_kafka_files import GOLDEN

ACLS: list[dict[str, str | int]] = [
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
        "resource_type": "topic",  # spellings the what-if format accepts go through its validator
        "resource_name": "orders",
        "pattern_type": "LITERAL",
        "principal": "User:bob",
        "host": "*",
        "operation": 4,
        "permission_type": "DENY",
    },
]


def test_golden_snapshot_verify_inspect_dump_replay(tmp_path: Path) -> None:
    code, out, _ = cli("snapshot", "verify", GOLDEN)
    assert code == 0 and out.startswith("OK: 2 records (end offset 4, epoch 1; Apache Kafka KRaft snapshot")
    verified = json.loads(cli("snapshot", "verify", GOLDEN, "-o", "json")[1])
    assert verified["ok"] and verified["format"] == "Apache Kafka KRaft snapshot"
    assert (verified["records"], verified["end_offset"], verified["epoch"]) == (2, 4, 1)
    inspected = json.loads(cli("snapshot", "inspect", GOLDEN, "-o", "json")[1])
    assert inspected["format"] == "Apache Kafka KRaft snapshot" and inspected["timestamp_ms"] == 1_700_000_000_000
    assert [(a["resource_name"], a["operation"]) for a in inspected["acls"]] == [("foo", "READ"), ("grp-", "DESCRIBE")]
    code, out, err = cli("log", "dump", "--log-dir", GOLDEN)
    assert code == 0 and "reading Apache Kafka KRaft snapshot" in err
    assert out.splitlines()[1] == '| offset: 0 SnapshotHeader {"Version":0,"LastContainedLogTimestamp":1700000000000}'
    replayed = json.loads(cli("replay", "--log-dir", GOLDEN, "-o", "json")[1])
    assert replayed["format"] == "Apache Kafka KRaft snapshot" and replayed["offset"] == 4
    requests = tmp_path / "requests.jsonl"
    lines = [
        {
            "principal": "User:bob",
            "host": "1.2.3.4",
            "operation": "READ",
            "resource_type": "TOPIC",
            "resource_name": "foo",
        },
        {
            "principal": "User:x",
            "host": "10.0.0.1",
            "operation": "DESCRIBE",
            "resource_type": "GROUP",
            "resource_name": "grp-1",
        },
    ]
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, _ = cli("authorize", "--requests", requests, "--log-dir", GOLDEN)
    assert code == 0 and [json.loads(line)["result"] for line in out.splitlines()] == ["ALLOWED", "DENIED"]


def test_log_commands_on_a_kafka_directory(tmp_path: Path) -> None:
    kf_dir = tmp_path / "meta"
    (kf_dir / PARTITION_DIR).mkdir(parents=True)
    (kf_dir / PARTITION_DIR / f"{0:020d}.log").write_bytes(b"".join(LOG))
    code, out, err = cli("diff", "--log-dir", kf_dir, "--from-offset", "5", "--to-offset", "13")
    assert code == 0 and "reading Apache Kafka KRaft metadata log" in err
    assert out.splitlines()[0] == "Offsets 5 -> 13: 2 added, 1 removed"
    assert {line.split()[1] for line in out.splitlines()[1:]} == {A.id, B.id, D.id}
    assert_one_line_error(*cli("replay", "--log-dir", kf_dir, "--to-offset", "3")[::2], "--to-offset 3", "use 2 or 5")
    # damage: the batches before it are dumped, then one line naming the file and the byte
    damaged = bytearray(b"".join(LOG))
    position = len(b"".join(LOG[:3]))
    damaged[position + 30] ^= 0xFF
    (kf_dir / PARTITION_DIR / f"{0:020d}.log").write_bytes(bytes(damaged))
    code, out, err = cli("log", "dump", "--log-dir", kf_dir)
    assert [line.split()[1] for line in out.splitlines() if line.startswith("baseOffset")] == ["0", "1", "2"]
    error = [line for line in err.splitlines() if "error" in line]
    assert code == 2 and len(error) == 1 and f"at byte position {position}: batch CRC-32C mismatch" in error[0]
    assert_one_line_error(*cli("replay", "--log-dir", kf_dir)[::2], f"{PARTITION_DIR}/{0:020d}.log", str(position))


def test_import_export_round_trip_dry_run_and_check(tmp_path: Path) -> None:
    source = tmp_path / "acls.json"
    source.write_text(json.dumps([*ACLS, ACLS[0]]))
    log = tmp_path / "meta"
    code, out, _ = cli("import", "--from-json", source, "--log-dir", log, "--dry-run")
    assert code == 0 and "would add 2 ACL(s)" in out and "1 repeated in the source" in out and not log.exists()
    report = json.loads(cli("import", "--from-json", source, "--log-dir", log, "--check", "--output", "json")[1])
    assert (report["added"], report["repeated"], report["offsets"], report["check"]["equal"]) == (2, 1, [0, 1], True)
    again = json.loads(cli("import", "--from-json", source, "--log-dir", log, "--output", "json")[1])
    assert (again["added"], again["present"], again["offsets"]) == (0, 2, None)
    code, exported, _ = cli("export", "--log-dir", log)
    assert code == 0 and exported.splitlines()[1].startswith('{"resource_type": "TOPIC", "resource_name": "orders",')
    assert json.loads(exported) == sorted(
        [{**ACLS[1], "resource_type": "TOPIC", "operation": "WRITE"}, ACLS[0]], key=lambda a: a["resource_name"]
    )
    cli("export", "--log-dir", log, "--out", tmp_path / "out.json")
    assert (tmp_path / "out.json").read_text() == exported  # stable: the same set gives the same bytes
    assert cli("export", "--log-dir", log, "-o", "json")[1] == exported
    assert_one_line_error(*cli("export", "--log-dir", log, "-o", "table")[::2], "export writes acls.json only")
    # -o is the format: text is table, and the report is the same either way
    assert (
        cli("import", "--from-json", source, "--log-dir", log, "-o", "text")[1]
        == cli("import", "--from-json", source, "--log-dir", log)[1]
    )
    cli("acls", "--log-dir", log, "--add", "--allow-principal", "User:eve", "--operation", "Write", "--topic", "x")
    code, out, _ = cli("import", "--from-json", source, "--log-dir", log, "--check")
    assert code == 1 and "+ resource_type=TOPIC resource_name=x" in out and "(in the log only)" in out


def test_import_refuses_invalid_acls_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([ACLS[0], {**ACLS[0], "resource_type": "CLUSTER", "resource_name": "x"}]))
    code, _, err = cli("import", "--from-json", bad, "--log-dir", tmp_path / "meta")
    assert_one_line_error(
        code, err, str(bad), "entry 1", "The only valid name for the CLUSTER resource is kafka-cluster"
    )
    assert not (tmp_path / "meta").exists() or not list((tmp_path / "meta").glob("*.log"))
    bad.write_text(json.dumps([ACLS[0], {**ACLS[0], "operation": "READD"}]))
    assert_one_line_error(
        *cli("import", "--from-json", bad, "--log-dir", tmp_path / "m")[::2], "element 1", "operation"
    )
    assert_one_line_error(*cli("import", "--log-dir", tmp_path / "m")[::2], "give exactly one source")
    assert_one_line_error(*cli("import", "--from-cluster", "--log-dir", tmp_path / "m")[::2], "--bootstrap-server")


def test_import_reads_acls_json_with_the_strict_parser(tmp_path: Path) -> None:
    """--from-json refuses what `authorize --acls` refuses, naming the file, the element and the field."""
    bad = tmp_path / "bad.json"
    one = json.dumps(ACLS[0])
    cases: list[tuple[str | bytes, str]] = [
        (f'[{one}, {one[:-1]}, "host": "*"}}]', "element 1: duplicate key 'host' in one object"),
        (f'[{one}, {one[:-1]}, "x": NaN}}]', "element 1: field 'x': NaN is not a JSON number"),
        (json.dumps([ACLS[0], {**ACLS[0], "id": "a"}]), "element 1: field 'id': unknown field"),
        (json.dumps([{**ACLS[0], "principal": "User:" + "a" * 32763}]), "element 0: field 'principal': 32768 UTF-8"),
        (
            json.dumps([{**ACLS[0], "operation": 2**63}]),
            "element 0: field 'operation': the integer 9223372036854775808",
        ),
        (b"[\xff]", "not UTF-8 text: byte 0xff at offset 1"),
    ]
    for text, fragment in cases:
        bad.write_bytes(text if isinstance(text, bytes) else text.encode())
        code, out, err = cli("import", "--from-json", bad, "--log-dir", tmp_path / "m")
        assert_one_line_error(code, err, f"{bad}: {fragment}")
        assert out == ""
    assert not (tmp_path / "m").exists()  # nothing was written, not even a directory


def test_import_from_a_kafka_directory(tmp_path: Path) -> None:
    kf_dir = tmp_path / "kafka"
    (kf_dir / PARTITION_DIR).mkdir(parents=True)
    (kf_dir / PARTITION_DIR / f"{0:020d}.log").write_bytes(b"".join(LOG))
    report = json.loads(
        cli("import", "--from-kafka-dir", kf_dir, "--log-dir", tmp_path / "m", "--check", "--output", "json")[1]
    )
    assert report["added"] == 2 and report["check"]["equal"]
    assert cli("export", "--log-dir", kf_dir)[1] == cli("export", "--log-dir", tmp_path / "m")[1]


def _kafka_dir(tmp_path: Path, segments: dict[int, list[bytes]]) -> Path:
    """A metadata.log.dir whose `__cluster_metadata-0` holds one segment per (base offset, batches)."""
    partition = tmp_path / "meta" / PARTITION_DIR
    partition.mkdir(parents=True)
    (partition / "quorum-state").write_text("{}")
    for base, batches in segments.items():
        (partition / f"{base:020d}.log").write_bytes(b"".join(batches))
    return tmp_path / "meta"


def test_log_check_reads_kafka_metadata_as_the_other_commands_do(tmp_path: Path) -> None:
    """`log check` on Kafka's own metadata says so, checks every batch across segments and snapshots, and is
    OK on a whole log (a log that the other commands read without complaint)."""
    meta = _kafka_dir(tmp_path, {0: LOG[:3], 5: LOG[3:]})
    write_snapshot(meta / PARTITION_DIR, 2, [A])
    code, out, _ = cli("log", "check", "--log-dir", meta)
    assert code == 0, out
    assert out.splitlines()[0].startswith(f"Log directory: {meta} (Apache Kafka's own KRaft metadata, read-only")
    assert "Segments: 2" in out and "Snapshots: 1 (1 valid)" in out
    assert out.splitlines()[-1] == "OK: one consistent history of Kafka's metadata, offsets 0..12"
    assert cli("replay", "--log-dir", meta)[0] == 0  # the readers agree that this is one whole log
    report = json.loads(cli("log", "check", "--log-dir", meta, "-o", "json")[1])
    assert report["kind"] == "kafka" and report["consistent"] and report["end"] == 13
    assert [s["batches"] for s in report["segments"]] == [3, len(LOG) - 3]
    own = tmp_path / "own"
    added = cli("acls", "--log-dir", own, "--add", "--allow-principal", "User:a", "--operation", "Read", "--topic", "t")
    assert added[0] == 0
    own_report = cli("log", "check", "--log-dir", own)
    assert own_report[0] == 0 and own_report[1].startswith(f"Log directory: {own} (kraft-acl's embedded log)")
    assert json.loads(cli("log", "check", "--log-dir", own, "-o", "json")[1])["kind"] == "kraft-acl"


def test_log_check_lists_every_problem_in_kafka_metadata(tmp_path: Path) -> None:
    """A damaged batch (CRC), a gap between segments, a damaged snapshot and a log start no snapshot covers are
    each named with their file (and byte), and the check goes on past each; exit 1. A torn tail of the newest
    segment is only a warning: a broker may be writing it."""
    damaged = bytearray(LOG[3])
    damaged[30] ^= 0xFF
    meta = _kafka_dir(tmp_path, {2: [LOG[2], bytes(damaged)], 6: [LOG[4]], 11: [LOG[7], LOG[7][:20]]})
    partition = meta / PARTITION_DIR
    snapshot = write_snapshot(partition, 1, [A])
    snapshot.write_bytes(snapshot.read_bytes()[:-5])
    code, out, _ = cli("log", "check", "--log-dir", meta)
    assert code == 1, out
    problems = out[out.index("Problems:") : out.index("Warnings:")]
    assert f"{2:020d}.log byte {len(LOG[2])}: batch CRC-32C mismatch" in problems
    assert f"{11:020d}.log byte 0: gap: expected a batch at offset 8, found 11" in problems
    assert f"{1:020d}-{1:010d}.checkpoint: damaged snapshot" in problems
    assert "the log starts at offset 2 and no whole snapshot ends at or after it" in problems
    assert f"{11:020d}.log byte {len(LOG[7])}: 20 bytes" in out[out.index("Warnings:") :] and "unfinished batch" in out
    assert out.splitlines()[-1].startswith("NOT one consistent history")
    report = json.loads(cli("log", "check", "--log-dir", meta, "-o", "json")[1])
    assert not report["consistent"] and len(report["problems"]) == 4 and len(report["warnings"]) == 1
