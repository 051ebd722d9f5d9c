"""The integrity commands as a user runs them: `log check`, `log recover`, `snapshot list|verify --log-dir`,
writers on a Kafka metadata directory (every Kafka file left byte-identical), `--lock-timeout`, one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.backends.file.meta import META_FILE
from tests.cli.test_log_cmds import (
    GOLDEN_KAFKA_SNAPSHOT,
    STATES,
    assert_one_line_error,
    build_log,
    cli,
    ids_of,
    run,
    snapshot_at,
)

SEGMENT = f"{0:020d}.log"
ADD = ["--add", "--allow-principal", "User:carol", "--operation", "Read", "--topic", "payments"]


@pytest.fixture
def log_copy(tmp_path: Path) -> Path:
    directory = tmp_path / "log"
    build_log(directory)
    return directory


def kafka_metadata_dir(directory: Path) -> Path:
    """A `__cluster_metadata-0` directory as Kafka lays it out (spec §14.4): a record-batch segment (the golden
    checkpoint's batches are Kafka record batches v2 with CRC-32C) and its companions, the checkpoint, the
    quorum state."""
    directory.mkdir(parents=True)
    golden = GOLDEN_KAFKA_SNAPSHOT.read_bytes()
    (directory / SEGMENT).write_bytes(golden)
    (directory / f"{0:020d}.index").write_bytes(bytes(8))
    (directory / f"{0:020d}.timeindex").write_bytes(bytes(12))
    (directory / GOLDEN_KAFKA_SNAPSHOT.name).write_bytes(golden)
    (directory / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")
    (directory / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    (directory / "quorum-state").write_text('{"leaderId":1,"leaderEpoch":1,"votedId":-1,"data_version":1}')
    return directory


def contents(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


# ---- log check ----------------------------------------------------------------------------------------------


def test_log_check_of_a_consistent_log(kraft_acl: list[str], log_copy: Path) -> None:
    snapshot_at(log_copy, 3)
    proc = run(kraft_acl, "log", "check", "--log-dir", log_copy)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "OK: one consistent history, offsets 0..4"
    assert "Offsets: log start 0, end 5, durable end 5" in lines
    assert "  00000000000000000003-0000000001.checkpoint  usable, 3 records" in lines
    assert len(lines) <= 25, "one screen"
    report = json.loads(run(kraft_acl, "log", "check", "--log-dir", log_copy, "-o", "json").stdout)
    assert report["consistent"] and report["problems"] == [] and report["high_watermark"] == 5
    assert [s["batches"] for s in report["segments"]] == [4]


def test_log_check_names_every_problem_and_exits_1(log_copy: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    build_log(other)
    foreign_snapshot = snapshot_at(other, 3)
    shutil.copy(foreign_snapshot, log_copy / foreign_snapshot.name)  # copied from another log
    snapshot_at(log_copy, 2)
    wrong_epoch = log_copy / "00000000000000000002-0000000001.checkpoint"
    shutil.copy(wrong_epoch, log_copy / "00000000000000000002-0000000007.checkpoint")  # misnamed copy
    (log_copy / "notes.txt").write_text("mine")
    code, out, _ = cli("log", "check", "--log-dir", log_copy, "-o", "json")
    report = json.loads(out)
    assert code == 1 and not report["consistent"]
    problems = {p["where"]: p["what"] for p in report["problems"]}
    assert problems["notes.txt"].startswith("not written by kraft-acl")
    assert problems[foreign_snapshot.name].startswith("foreign: it belongs to log")
    assert problems["00000000000000000002-0000000007.checkpoint"].startswith("misnamed:")
    assert report["foreign_files"] == ["notes.txt"]
    text = cli("log", "check", "--log-dir", log_copy)[1]
    assert "NOT one consistent history: 3 problem(s)" in text


# ---- lost batches end to end ----------------------------------------------------------------------------------


def test_a_cut_tail_is_refused_by_every_writer_and_node_then_recovered(log_copy: Path) -> None:
    snapshot_at(log_copy, 5)
    segment = log_copy / SEGMENT
    with FileLog(log_copy, read_only=True) as log:
        cut = next(iter(log.read(4))).size_bytes
    os.truncate(segment, segment.stat().st_size - cut)  # the last batch [4], cut at its boundary
    before = contents(log_copy)
    writers: tuple[list[str | Path], ...] = (
        ["acls", "--log-dir", log_copy, *ADD],
        ["snapshot", "create", "--log-dir", log_copy],
    )
    for args in writers:
        code, _, err = cli(*args)
        assert code in (1, 2) and "acknowledged batches [4, 5) were lost" in err and "log recover" in err, err
    assert_one_line_error(*cli("replay", "--log-dir", log_copy)[::2], "were lost")
    assert contents(log_copy) == before, "no command changed anything"
    code, out, _ = cli("log", "check", "--log-dir", log_copy)
    assert code == 1 and "acknowledged batches [4, 5) were lost" in out
    code, out, err = cli("log", "recover", "--log-dir", log_copy, "-o", "json")
    assert code == 0, err
    outcome = json.loads(out)
    assert (outcome["log_end"], outcome["new_start"], outcome["lost_effect"]) == (4, 5, None)
    assert outcome["state_from"] == "00000000000000000005-0000000001.checkpoint"
    assert (log_copy / f"recovered-{5:020d}" / SEGMENT).read_bytes() == before[SEGMENT]
    assert ids_of(json.loads(cli("replay", "--log-dir", log_copy, "-o", "json")[1])["acls"]) == STATES[5]
    assert cli("acls", "--log-dir", log_copy, *ADD)[0] == 0
    dump = [json.loads(line) for line in cli("log", "dump", "--log-dir", log_copy, "-o", "json")[1].splitlines()]
    assert [b["baseOffset"] for b in dump] == [5], "offset 4 is never reused"
    assert cli("log", "check", "--log-dir", log_copy)[0] == 0


def test_recover_refuses_to_lose_state_without_accept_loss(log_copy: Path) -> None:
    segment = log_copy / SEGMENT
    with FileLog(log_copy, read_only=True) as log:
        cut = next(iter(log.read(4))).size_bytes
    os.truncate(segment, segment.stat().st_size - cut)
    before = contents(log_copy)
    code, _, err = cli("log", "recover", "--log-dir", log_copy)
    assert_one_line_error(code, err, "batches [4, 5) are lost", "--accept-loss")
    assert contents(log_copy) == before
    code, out, _ = cli("log", "recover", "--log-dir", log_copy, "--accept-loss")
    assert code == 0 and "The changes of batches [4, 5) are lost (--accept-loss)." in out
    assert ids_of(json.loads(cli("replay", "--log-dir", log_copy, "-o", "json")[1])["acls"]) == STATES[4]
    assert "Nothing to recover" in cli("log", "recover", "--log-dir", log_copy)[1]


# ---- snapshot list / verify against the log -------------------------------------------------------------------


def test_snapshot_list_and_verify_say_whether_this_log_may_use_each_snapshot(log_copy: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    build_log(other)
    theirs = snapshot_at(other, 4)
    mine = snapshot_at(log_copy, 4)
    code, out, _ = cli("snapshot", "verify", theirs, "--log-dir", log_copy)
    assert_one_line_error(code, out + _, "cannot be used on the log", "(foreign)", "belongs to log")
    assert cli("snapshot", "verify", mine, "--log-dir", log_copy)[1].endswith(f"usable on the log in {log_copy}\n")
    assert cli("snapshot", "verify", theirs)[0] == 0, "on its own the file is whole"
    shutil.copy(theirs, log_copy / "00000000000000000003-0000000001.checkpoint")  # and misnamed too
    rows = json.loads(cli("snapshot", "list", "--log-dir", log_copy, "-o", "json")[1])
    assert [(r["file"][:20], r["valid"], r["usable"]) for r in rows] == [
        (f"{3:020d}", False, False),
        (f"{4:020d}", True, True),
    ]
    table = cli("snapshot", "list", "--log-dir", log_copy)[1]
    assert "DAMAGED: the file name says end offset 3" in table and "valid" in table


# ---- never touch a file that is not ours ------------------------------------------------------------------------


def test_writers_given_a_kafka_metadata_directory_change_nothing(tmp_path: Path) -> None:
    kafka = kafka_metadata_dir(tmp_path / "__cluster_metadata-0")
    before = contents(kafka)
    writers: tuple[list[str | Path], ...] = (
        ["acls", "--log-dir", kafka, *ADD],
        ["snapshot", "create", "--log-dir", kafka],
    )
    for args in writers:
        code, out, err = cli(*args)
        assert code in (1, 2) and out == "", (args, out)
        assert err.count("\n") == 1 and "holds files kraft-acl did not write" in err
        assert "(7 of them Apache Kafka's own KRaft metadata, which `log dump`, `replay`" in err
        for name in (SEGMENT, "quorum-state", "leader-epoch-checkpoint", GOLDEN_KAFKA_SNAPSHOT.name):
            assert name in err
    # the readers recognise Kafka's files before any kraft-acl reader opens them
    code, out, err = cli("acls", "--log-dir", kafka, "--list", "--topic", "foo")
    assert code == 0 and "principal=User:bob, host=*, operation=READ" in out and "reading Apache Kafka" in err
    assert cli("log", "dump", "--log-dir", kafka)[0] == 0
    listed = {r["file"]: r for r in json.loads(cli("snapshot", "list", "--log-dir", kafka, "-o", "json")[1])}
    assert listed[GOLDEN_KAFKA_SNAPSHOT.name]["error"].startswith("not kraft-acl's: Apache Kafka's own KRaft snapshot")
    assert contents(kafka) == before, "every Kafka file byte-identical, and nothing added"
    report = json.loads(cli("log", "check", "--log-dir", kafka, "-o", "json")[1])  # checked as Kafka's, read-only
    assert report["kind"] == "kafka" and report["consistent"] and [s["file"] for s in report["segments"]] == [SEGMENT]
    assert contents(kafka) == before


def test_retention_never_deletes_a_kafka_checkpoint_in_a_log_directory(log_copy: Path) -> None:
    kafka = log_copy / "00000000000000000001-0000000001.checkpoint"
    shutil.copy(GOLDEN_KAFKA_SNAPSHOT, kafka)
    code, _, err = cli("snapshot", "create", "--log-dir", log_copy, "--retain", "1")
    assert code == 2 and "did not write: 00000000000000000001-0000000001.checkpoint" in err
    assert kafka.read_bytes() == GOLDEN_KAFKA_SNAPSHOT.read_bytes()


# ---- the writer lock ----------------------------------------------------------------------------------------------


def test_lock_timeout_waits_for_the_other_writer(kraft_acl: list[str], log_copy: Path) -> None:
    holder = FileLog(log_copy)
    proc = run(kraft_acl, "acls", "--log-dir", log_copy, *ADD, "--lock-timeout", "0.2")
    assert proc.returncode == 1 and "waited 0.2 s" in proc.stderr and proc.stderr.count("\n") == 1
    threading.Timer(0.5, holder.close).start()
    proc = run(kraft_acl, "acls", "--log-dir", log_copy, *ADD)  # the default waits a few seconds
    assert proc.returncode == 0, proc.stderr
    assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=payments" in proc.stdout


# ---- input limits: one line, no traceback ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "content", "fragment"),
    [
        (META_FILE, '{"log_id": "AAAAAAAAAAAAAAAAAAAAAQ", "log_start_offset": 1e400}', "log_start_offset"),
        (META_FILE, '{"log_id": "AAAAAAAAAAAAAAAAAAAAAQ", "log_start_offset": 0, "legacy": "yes"}', "legacy"),
        ("writer-epoch", "4294967296\n", "not an integer in 0..2147483647"),
        ("durable-end", "garbage", "not a durable-end record"),
    ],
)
def test_bad_log_headers_give_one_line(
    kraft_acl: list[str], log_copy: Path, target: str, content: str, fragment: str
) -> None:
    (log_copy / target).write_text(content)
    readers: tuple[list[str | Path], ...] = (["replay", "--log-dir", log_copy], ["log", "dump", "--log-dir", log_copy])
    for args in readers:
        proc = run(kraft_acl, *args)
        assert "Traceback" not in proc.stderr
        assert_one_line_error(proc.returncode, proc.stderr, fragment)
    proc = run(kraft_acl, "acls", "--log-dir", log_copy, *ADD)
    assert proc.returncode in (1, 2) and proc.stderr.count("\n") == 1 and fragment in proc.stderr


def test_a_huge_header_length_in_a_snapshot_is_one_line(kraft_acl: list[str], tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000001-0000000001.checkpoint"
    path.write_bytes(b"KACLSNAP" + (2).to_bytes(2, "big") + (2**32 - 1).to_bytes(4, "big") + bytes(4) + b"{}")
    proc = run(kraft_acl, "snapshot", "verify", path)
    assert "Traceback" not in proc.stderr
    assert_one_line_error(proc.returncode, proc.stderr, "header checksum mismatch")
