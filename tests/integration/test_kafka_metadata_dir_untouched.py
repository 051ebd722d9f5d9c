"""A copy of a real broker's `__cluster_metadata-0` given to the writers: refused, every Kafka file byte-identical."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_log_cmds import GOLDEN_KAFKA_SNAPSHOT
from tests.kafka_broker import KafkaBroker, copy_live_dir

pytestmark = pytest.mark.kafka


def test_acls_add_and_snapshot_create_leave_a_real_kafka_metadata_dir_byte_identical(
    kafka_broker: KafkaBroker, kraft_acl: list[str], tmp_path: Path
) -> None:
    live = kafka_broker.data_dir / "data" / "__cluster_metadata-0"
    assert (live / f"{0:020d}.log").exists(), sorted(p.name for p in live.iterdir())
    copy = copy_live_dir(live, tmp_path / "__cluster_metadata-0")
    shutil.copy(GOLDEN_KAFKA_SNAPSHOT, copy / GOLDEN_KAFKA_SNAPSHOT.name)  # a checkpoint too, as retention would see
    before = {p.name: p.read_bytes() for p in copy.iterdir()}
    assert before[f"{0:020d}.log"][:8] == bytes(8), "Kafka's first batch: base offset 0"
    commands = [
        ["acls", "--log-dir", str(copy), "--add", "--allow-principal", "User:a", "--operation", "Read", "--topic", "t"],
        ["snapshot", "create", "--log-dir", str(copy)],
    ]
    for args in commands:
        proc = subprocess.run([*kraft_acl, *args], capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode in (1, 2) and proc.stdout == "", proc
        assert proc.stderr.startswith("kraft-acl: error: ") and proc.stderr.count("\n") == 1, proc.stderr
        assert "holds files kraft-acl did not write" in proc.stderr and f"{0:020d}.log" in proc.stderr
    after = {p.name: p.read_bytes() for p in copy.iterdir()}
    assert after == before, "no Kafka file changed and none was added (not even a lock file)"
