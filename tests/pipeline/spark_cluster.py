"""A real Spark standalone cluster on loopback for the audit jobs' tests: one master and two workers (one core each),
started with PySpark's own `bin/spark-class` (the pip package ships no sbin/start-*.sh for them), each a JVM in a
process group of its own, stopped (SIGTERM, then SIGKILL) by `stop` and when the test process exits.

Not thread-safe: one owner starts and stops it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pyspark

from kraftacl.harness.serve_process import free_port

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
SPARK_SUBMIT = SPARK_HOME / "bin" / "spark-submit"


class SparkClusterError(RuntimeError):
    """A daemon did not come up; the message holds its log."""


class StandaloneCluster:
    """`spark://127.0.0.1:<port>` with `workers` workers of one core and `memory` each."""

    def __init__(self, directory: Path, workers: int = 2, memory: str = "1g") -> None:
        self.directory = directory
        self.workers = workers
        self.memory = memory
        self.port = free_port()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    @property
    def url(self) -> str:
        """The master URL spark-submit takes."""
        return f"spark://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """Daemons and spark-submit bind loopback only."""
        return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}

    def _daemon(self, name: str, args: list[str]) -> Path:
        log = self.directory / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                ["bash", str(SPARK_CLASS), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env(),
                start_new_session=True,
            )
        self.procs.append(proc)
        self.logs.append(log)
        return log

    def start(self, timeout: float = 240.0) -> None:
        """Start the master, then the workers, and wait until every worker registered."""
        self.directory.mkdir(parents=True, exist_ok=True)
        atexit.register(self.stop)
        master_args = ["--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(free_port())]
        master = self._daemon("master", ["org.apache.spark.deploy.master.Master", *master_args])
        self._wait(master, re.compile(r"I have been elected leader|Starting Spark master at"), timeout)
        logs = []
        for number in range(self.workers):
            work = self.directory / f"worker-{number}"
            work.mkdir(exist_ok=True)
            worker_args = ["--host", "127.0.0.1", "--cores", "1", "--memory", self.memory, "--work-dir", str(work)]
            worker_args += ["--webui-port", str(free_port()), self.url]
            logs.append(self._daemon(f"worker-{number}", ["org.apache.spark.deploy.worker.Worker", *worker_args]))
        for log in logs:
            self._wait(log, re.compile(r"Successfully registered with master"), timeout)

    def _wait(self, log: Path, pattern: re.Pattern[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not pattern.search(log.read_text(errors="replace")):
            if any(proc.poll() is not None for proc in self.procs):
                self.stop()
                raise SparkClusterError(f"a Spark daemon exited while starting:\n{self.output()}")
            if time.monotonic() > deadline:
                self.stop()
                raise SparkClusterError(f"{log.name}: not up within {timeout:.0f}s:\n{self.output()}")
            time.sleep(0.3)

    def output(self) -> str:
        """The daemons' logs (the last lines of each)."""
        tails = ("\n".join(log.read_text(errors="replace").splitlines()[-30:]) for log in self.logs)
        return "\n".join(f"== {log.name}\n{tail}" for log, tail in zip(self.logs, tails, strict=True))

    def executor_logs(self) -> str:
        """Every executor's stderr under the workers' work directories (to show which processes ran tasks)."""
        return "\n".join(p.read_text(errors="replace") for p in self.directory.glob("worker-*/app-*/*/stderr"))

    def stop(self) -> None:
        """SIGTERM each daemon's process group, SIGKILL what is left after 20 s."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
