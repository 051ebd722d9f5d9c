"""`kraft-acl shell` on Apache Kafka's own KRaft files: `--snapshot` of Kafka's golden `.checkpoint`, and
`--log-dir` of a Kafka-format metadata.log.dir written byte by byte (transactions, a snapshot plus tail), with
Kafka's offsets in the prompt and `/provenance`, `at` and `--at-offset`, and the prompt following a growing log."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kraftacl.authorizer.state.records import acl_from_record
from kraftacl.metadata_log.kafka_files.files import PARTITION_DIR
from kraftacl.metadata_log.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from tests.metadata_log import kafka_files as kf
from tests.shell.terminal import Terminal

GOLDEN = Path(__file__).parent / "data/kafka-golden/00000000000000000004-0000000001.checkpoint"


def _acl(n: int, principal: str) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(f"AAAAAAAAQACAAAAAAAAAA{'AQgw'[n]}", 2, f"t{n}", 3, principal, "*", 3, 3)


A, B, C, D = (_acl(n, p) for n, p in enumerate(["User:a", "User:b", "User:c", "User:d"]))
# offset: 0 leader change | 1 A | 2 Begin, 3 B, 4 NoOp | 5 End | 6 Begin, 7 C | 8 Abort
#         9 remove A, 10 D | 11 Begin, 12 C (never ended)
LOG = [
    kf.batch(0, [kf.LEADER_CHANGE], is_control=True),
    kf.batch(1, [(None, kf.ace(A))]),
    kf.batch(2, [(None, kf.BEGIN), (None, kf.ace(B)), (None, kf.NO_OP)]),
    kf.batch(5, [(None, kf.END)]),
    kf.batch(6, [(None, kf.BEGIN), (None, kf.ace(C))]),
    kf.batch(8, [(None, kf.ABORT)]),
    kf.batch(9, [(None, kf.remove(RemoveAccessControlEntryRecord(A.id))), (None, kf.ace(D))], epoch=2),
    kf.batch(11, [(None, kf.BEGIN), (None, kf.ace(C))], epoch=2),
]
UNFINISHED = "the metadata transaction begun at offset 11 is not finished: not applied"


def shell(kraft_acl: list[str], source: list[str], *words: str) -> tuple[int, str, str]:
    done = subprocess.run([*kraft_acl, "shell", *source, *words], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def kafka_dir(tmp_path: Path) -> Path:
    """A metadata.log.dir: `__cluster_metadata-0` holding one segment of LOG."""
    kf.write_log(tmp_path / "meta" / PARTITION_DIR, LOG)
    return tmp_path / "meta"


def test_kafkas_golden_checkpoint(kraft_acl: list[str]) -> None:
    source = ["--snapshot", str(GOLDEN)]
    assert shell(kraft_acl, source, "ls", "/acl/id") == (0, "QZDDv-R7SyaPgetDPGd0Mw\nSdDjEdlbRmy2__WFKe3RMg\n", "")
    assert shell(kraft_acl, source, "cat", "/image/acls/QZDDv-R7SyaPgetDPGd0Mw", "/image/provenance") == (
        0,
        "StandardAcl(resourceType=TOPIC, resourceName=foo, patternType=LITERAL, principal=User:bob, host=*, "
        "operation=READ, permissionType=ALLOW)\noffset 3, epoch 1, time 2023-11-14T22:13:20Z[UTC]\n",
        "",
    )
    provenance = ["offset", "lastOffset", "epoch", "highWaterMark", "snapshot", "source", "following"]
    assert shell(kraft_acl, source, "cat", *(f"/provenance/{name}" for name in provenance)) == (
        0,
        f"4\n3\n1\n4\n{GOLDEN}\nApache Kafka KRaft snapshot {GOLDEN}\nfalse\n",
        "",
    )
    assert shell(kraft_acl, source, "authorize", "User:bob", "READ", "TOPIC:foo")[1].startswith("ALLOWED\n")
    assert shell(kraft_acl, source, "at", "2") == (
        1,
        "",
        "at: a snapshot file holds one state (offset 4); moving in time needs the log (--log-dir of the "
        "metadata.log.dir)\n",
    )


def test_a_kafka_metadata_dir_in_kafkas_offsets(kraft_acl: list[str], kafka_dir: Path) -> None:
    source = ["--log-dir", str(kafka_dir)]
    assert shell(kraft_acl, source, "ls", "/acl/by-principal") == (0, "User:b\nUser:d\n", "")
    assert shell(kraft_acl, source, "cat", "/image/provenance", "/provenance/notes") == (
        0,
        f"offset 12, epoch 2, time 2023-11-14T22:13:20Z[UTC]\n{UNFINISHED}\n",
        "",
    )
    assert shell(kraft_acl, source, "at") == (0, "offset 13 (high-water mark 13; the newest state)\n", "")
    # Inside the committed transaction (2..5) nothing of it applies; after its End, B does.
    assert shell(kraft_acl, [*source, "--at-offset", "5"], "ls", "/acl/by-principal") == (0, "User:a\n", "")
    assert shell(kraft_acl, [*source, "--at-offset", "6"], "ls", "/acl/by-principal") == (0, "User:a\nUser:b\n", "")
    lines = "at 9\nls /acl/by-principal\nat 3\nat latest\nls /acl/by-principal\n"
    done = subprocess.run([*kraft_acl, "shell", *source], input=lines, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (
        1,
        "offset 9 (high-water mark 13; pinned: `at latest` returns to the newest state)\nUser:a\nUser:b\n"
        "offset 13 (high-water mark 13; the newest state)\nUser:b\nUser:d\n",
    )
    assert done.stderr == "at: offset 3 is inside the batch at offsets 2..4: its records apply together; use 2 or 5\n"


def test_history_in_kafkas_log_honours_its_transactions(kraft_acl: list[str], kafka_dir: Path) -> None:
    time, a, b = "2023-11-14T22:13:20.000+00:00", _text(A), _text(B)
    assert shell(kraft_acl, ["--log-dir", str(kafka_dir)], "history", A.id, B.id, C.id) == (
        0,
        f"{A.id}\n  offset 1  epoch 1  {time}  added    {a}\n  offset 9  epoch 2  {time}  removed\n"
        f"{B.id}\n  offset 3  epoch 1  {time}  added  {b}\n"  # in the transaction committed at 5
        f"{C.id}\n  no record at offsets 0..12 names this id\n",  # aborted at 8; never ended after 11
        "",
    )
    code, _, err = shell(kraft_acl, ["--snapshot", str(GOLDEN)], "history", "QZDDv-R7SyaPgetDPGd0Mw")
    assert (code, err) == (
        1,
        "history: a snapshot file keeps no history (it holds the state at offset 4); the history of an ACL needs "
        "the log (--log-dir of the metadata.log.dir)\n",
    )


def _text(record: AccessControlEntryRecord) -> str:
    return str(acl_from_record(record))


def test_a_snapshot_plus_tail_and_the_prompt_following_a_growing_log(
    kraft_acl: list[str], tmp_path: Path, kafka_dir: Path
) -> None:
    partition = kafka_dir / PARTITION_DIR
    kf.write_snapshot(partition, 11, [B, D], epoch=2)
    assert shell(kraft_acl, ["--log-dir", str(kafka_dir)], "cat", "/provenance/snapshot") == (
        0,
        f"{partition}/00000000000000000011-0000000002.checkpoint\n",
        "",
    )
    argv = [*kraft_acl, "shell", "--history-file", str(tmp_path / "history"), "--log-dir", str(kafka_dir)]
    term = Terminal(argv, columns=200, env={"HOME": str(tmp_path), "PAGER": ""})
    try:
        term.wait_lines("[offset 13] >>")
        with (partition / "00000000000000000000.log").open("ab") as segment:  # the broker appends: End, then A
            segment.write(kf.batch(13, [(None, kf.END)], epoch=2) + kf.batch(14, [(None, kf.ace(A))], epoch=2))
        term.wait_lines("[offset 15] >>")
        term.send("ls /acl/by-principal\r")
        term.wait_lines("[offset 15] >> ls /acl/by-principal", "User:a  User:b  User:c  User:d", "[offset 15] >>")
        term.send("exit\r")
        assert term.exit_status() == 0
    finally:
        term.close()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (["--log-dir", "KAFKA", "--at-offset", "3"], "offset 3 is inside the batch at offsets 2..4"),
        (["--log-dir", "KAFKA", "--at-offset", "14"], "offset 14 is outside 0..13 (its high-water mark)"),
    ],
)
def test_source_errors(kraft_acl: list[str], kafka_dir: Path, source: list[str], message: str) -> None:
    segment = kafka_dir / PARTITION_DIR / "00000000000000000000.log"
    args = [str(kafka_dir) if a == "KAFKA" else str(segment) if a == "SEGMENT" else a for a in source]
    code, out, err = shell(kraft_acl, args, "ls")
    assert (code, out) == (2, "")
    assert err.startswith("kraft-acl: error: ") and message in err and err.count("\n") == 1, err
