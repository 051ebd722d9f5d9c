"""The audit jobs on a real Spark cluster: a standalone master and two one-core workers on loopback (PySpark's own
`spark-class`), each job submitted with `spark-submit --master spark://...` as docs/audit.md tells a user to, so the
code and the tasks' data are shipped to executors in other JVMs and Python workers. Each job's results equal local
mode's (the same job run in this process's local[2] session).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from kraftacl.pipeline.cli_args import Args, parser
from kraftacl.pipeline.run_jobs import JOBS
from tests.conftest import REPO
from tests.pipeline.logs import GeneratedLog, random_log
from tests.pipeline.replay import replayed_node
from tests.pipeline.spark_cluster import SPARK_SUBMIT, SparkClusterError, StandaloneCluster
from tests.pipeline.test_usage import _write_decisions

pytestmark = [pytest.mark.spark, pytest.mark.slow]
DRIVER = REPO / "scripts" / "kraft-acl-audit.py"
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Iterator[StandaloneCluster]:
    """The standalone cluster (after the local session exists: its absence skips or fails as every Spark test)."""
    started = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        started.start()
    except SparkClusterError as exc:
        pytest.fail(f"SPARK CLUSTER DID NOT START: {exc}", pytrace=False)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedLog:
    """A randomized log over several segments (one task per segment), and a rotated decision log beside it."""
    directory = tmp_path_factory.mktemp("cluster-log")
    log = random_log(directory / "meta", seed=77, batches=40)
    node = replayed_node(log.directory, log.high_watermark)
    try:
        _write_decisions(node, directory / "decisions.log", 600)
    finally:
        node.close()
    return log


def submit(cluster: StandaloneCluster, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """`spark-submit --master spark://... scripts/kraft-acl-audit.py JOB ...`, executors running this Python (the
    shared install of docs/audit.md: the same path on every node)."""
    command = [
        "bash",
        str(SPARK_SUBMIT),
        "--master",
        cluster.url,
        "--deploy-mode",
        "client",
        "--conf",
        "spark.executor.memory=512m",
        "--conf",
        "spark.executor.cores=1",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        # small data on a busy 2-core machine: the JVMs start faster with C1 only and the serial collector
        "--conf",
        f"spark.driver.extraJavaOptions={QUICK_JVM}",
        "--conf",
        f"spark.executor.extraJavaOptions={QUICK_JVM}",
        str(DRIVER),
        *argv,
    ]
    env = {**cluster.env(), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, cwd=REPO, check=False)
    print(f"spark-submit {argv[0]}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    assert done.returncode == 0, f"spark-submit exited {done.returncode}:\n{done.stdout}\n{done.stderr[-6000:]}"
    return done


def local(spark: SparkSession, argv: list[str]) -> dict[str, Any]:
    """The same job in local mode, in this process's local[2] session."""
    args = Args.parse(parser().parse_args(argv))
    return JOBS[args.job](spark, args)


def _csv_rows(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [lines[0], *sorted(lines[1:])]


def test_every_job_on_a_standalone_cluster_equals_local_mode(
    cluster: StandaloneCluster, spark: SparkSession, generated: GeneratedLog, tmp_path: Path
) -> None:
    meta = str(generated.directory)
    middle = generated.boundaries()[len(generated.boundaries()) // 2]
    decisions = str(generated.directory.parent / "decisions.log")

    jobs: dict[str, Callable[[str], list[str]]] = {  # job -> its command line, given its output directory
        "fold": lambda out: ["fold", "--log-dir", meta, "--to-offset", str(middle), "--out", f"{out}/state.checkpoint"],
        "changes": lambda out: ["changes", "--log-dir", meta, "--from-offset", str(middle)],
        "permissions": lambda out: ["permissions", "--log-dir", meta, "--principal", "User:carol", "--out", out],
        "usage": lambda out: ["usage", "--log-dir", meta, "--decision-log", decisions, "--few", "2", "--out", out],
    }
    said: dict[str, list[str]] = {}
    for job, argv in jobs.items():
        for where in ("cluster", "local"):
            (tmp_path / where / job).mkdir(parents=True)
        submitted = submit(cluster, argv(str(tmp_path / "cluster" / job)))
        said[job] = submitted.stdout.splitlines()
        result = local(spark, argv(str(tmp_path / "local" / job)))
        expected = [line.replace(str(tmp_path / "local"), str(tmp_path / "cluster")) for line in result["lines"]]
        assert said[job] == expected, f"{job}: the cluster printed\n{submitted.stdout}\nlocal mode\n{expected}"

    cluster_dir, local_dir = tmp_path / "cluster", tmp_path / "local"
    folded = [(where / "fold" / "state.checkpoint").read_bytes() for where in (cluster_dir, local_dir)]
    assert folded[0] == folded[1]
    assert said["changes"][0].startswith(f"Offsets {middle} -> {generated.high_watermark}: ")
    for job in ("permissions", "usage"):
        reports = sorted(p.name for p in (local_dir / job).glob("*.csv"))
        assert reports and reports == sorted(p.name for p in (cluster_dir / job).glob("*.csv")), job
        for name in reports:
            assert _csv_rows(cluster_dir / job / name) == _csv_rows(local_dir / job / name), f"{job}/{name}"
    # the tasks ran in executors on both workers, not in the driver
    executors = list(cluster.directory.glob("worker-*/app-*/*/stderr"))
    assert {p.parts[-4] for p in executors} == {"worker-0", "worker-1"}, cluster.output()
    assert len({p.parts[-3] for p in executors}) == len(jobs)  # one application per submitted job
