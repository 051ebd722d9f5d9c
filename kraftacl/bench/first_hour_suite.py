"""`kraft-acl bench --suite first-hour`: what an operator waits for in the first hour.

* `make_run`: a fresh checkout (harness.checkout), `make run` with EMPTY pip, uv and Maven caches
  (`PIP_CACHE_DIR`, `UV_CACHE_DIR` and `-Dmaven.repo.local` pointed at new directories) until serve's ready line:
  the seconds of each phase (the virtualenv with uv in it, the PyPI install with the mypyc compile, loading the
  demo ACLs and starting serve), the size of the runtime .venv, and proof of what it did not do (no dev tools, no
  PySpark, nothing fetched by Maven).
* `audit_small`: `kraft-acl audit changes` on a 19-record log (the driver in local mode, its progress lines
  timed), with Spark's event log read back: how much of the wall time Spark spent running jobs, in how many
  jobs, stages and tasks, and how much before them (the JVM and the SparkContext) and between them.

Not in `all`: it installs from PyPI into a temporary directory. Stateless; each run builds its own files.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kraftacl.bench.timing import cpu_probe_us, progress
from kraftacl.harness.checkout import MakeRun, clean_path_env, fresh_checkout
from kraftacl.harness.serve_process import free_port
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.records import AccessControlEntryRecord
from kraftacl.metadata_log.uuids import new_uuid

TARGET_S = 120.0  # make run to serve's ready line with empty caches (issue #28)
NOT_FOR_RUN = ("pytest", "pyspark", "ruff", "hypothesis", "schemathesis", "pyarrow", "pandas")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def make_run(work: Path) -> dict[str, Any]:
    """`make run` from a fresh checkout with empty caches, timed to serve's ready line."""
    root = fresh_checkout(work / "kraft-acl")
    config = root / "examples" / "serve" / "server.properties"
    text = config.read_text(encoding="utf-8")
    for port in ("9190", "9191"):  # never meet a `make run` of this machine on the demo's ports
        text = re.sub(rf"127\.0\.0\.1:{port}\b", f"127.0.0.1:{free_port()}", text)
    config.write_text(text, encoding="utf-8")
    pip_cache, uv_cache, m2 = work / "pip-cache", work / "uv-cache", work / "m2"
    for empty in (pip_cache, uv_cache, m2):
        empty.mkdir()
    caches = {"PIP_CACHE_DIR": str(pip_cache), "UV_CACHE_DIR": str(uv_cache), "MAVEN_OPTS": f"-Dmaven.repo.local={m2}"}
    env = clean_path_env(caches)
    before = {"probe_us": round(cpu_probe_us(2000), 2), "load": _load()}
    progress("make_run: make run in a fresh checkout, empty pip and Maven caches")
    run = MakeRun(root, env, work / "make-run.err")
    try:
        ready = run.wait_ready(900)
    finally:
        run.stop()
    marks = {
        "install": run.first("kraft-acl: installing kraft-acl"),
        "demo_acls": run.first("kraft-acl: loading the demo ACLs"),
        "serve": run.first("kraft-acl: starting serve"),
    }
    installed = subprocess.run(
        [str(root / ".venv" / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    packages = {p["name"].lower() for p in json.loads(installed.stdout)}
    phases = {
        "venv_and_uv_s": marks["install"],
        "pip_install_and_mypyc_s": _span(marks["install"], marks["demo_acls"]),
        "demo_acls_and_config_check_s": _span(marks["demo_acls"], marks["serve"]),
        "serve_start_to_ready_s": _span(marks["serve"], ready),
    }
    return {
        "ready_s": round(ready, 1),
        "target_s": TARGET_S,
        "phases": {k: None if v is None else round(v, 1) for k, v in phases.items()},
        "venv_mb": round(_dir_bytes(root / ".venv") / 1e6),
        "packages": len(packages),
        "dev_or_spark_packages": sorted(p for p in packages if p in NOT_FOR_RUN),
        "compiled_modules": sorted(p.name.split(".")[0] for p in root.rglob("_*_native*.so")),
        "maven_fetched_files": sum(1 for p in m2.rglob("*") if p.is_file()),
        "cache_mb_after": {"pip": round(_dir_bytes(pip_cache) / 1e6), "uv": round(_dir_bytes(uv_cache) / 1e6)},
        "before": before,
        "after": {"probe_us": round(cpu_probe_us(2000), 2), "load": _load()},
    }


def _span(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else end - start


def _small_log(directory: Path, records: int = 19) -> None:
    """`records` one-ACL batches, as 19 `kraft-acl acls --add` would write them."""
    with FileLog(directory) as log:
        for n in range(records):
            log.append([AccessControlEntryRecord(new_uuid(), 2, f"t{n}", 3, f"User:u{n}", "*", 3, 3)])


def audit_small(work: Path) -> dict[str, Any]:
    """`kraft-acl audit changes` on a 19-record log in local mode: where the fixed cost goes."""
    meta, events = work / "meta", work / "spark-events"
    _small_log(meta)
    events.mkdir()
    argv = [sys.executable, "-m", "kraftacl.pipeline", "changes", "--log-dir", str(meta), "--from-offset", "0"]
    argv += ["--progress", "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir=file://{events}"]
    argv += ["--conf", "spark.eventLog.compress=false", "--conf", "spark.eventLog.rolling.enabled=false"]
    before = {"probe_us": round(cpu_probe_us(2000), 2), "load": _load()}
    progress("audit_small: kraft-acl audit changes on a 19-record log")
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    marks: dict[str, float] = {}
    assert proc.stderr is not None
    for line in proc.stderr:
        for key, pattern in (("jvm", "starting Spark"), ("up", " is up "), ("read", "reading the log")):
            if pattern in line and key not in marks:
                marks[key] = time.monotonic() - started
    if proc.wait() != 0:
        raise RuntimeError(f"kraft-acl audit changes exited {proc.returncode}")
    wall = time.monotonic() - started
    spark = _event_log(next(events.iterdir()))
    return {
        "wall_s": round(wall, 1),
        "python_and_pyspark_import_s": round(marks.get("jvm", 0.0), 1),
        "jvm_and_spark_context_s": round(marks.get("up", 0.0) - marks.get("jvm", 0.0), 1),
        "after_spark_is_up_s": round(wall - marks.get("up", 0.0), 1),
        "spark": spark,
        "before": before,
        "after": {"probe_us": round(cpu_probe_us(2000), 2), "load": _load()},
    }


def _event_log(path: Path) -> dict[str, Any]:
    """Jobs, stages and tasks from Spark's event log, and how the time inside jobs splits."""
    jobs: dict[int, list[int]] = {}
    stages = tasks = 0
    run_ms = deserialize_ms = gc_ms = 0
    app_start = app_end = 0
    files = sorted(path.glob("events_*")) if path.is_dir() else [path]  # a rolling log is a directory of parts
    for raw in (line for part in files for line in part.read_text(encoding="utf-8").splitlines()):
        event = json.loads(raw)
        kind = event.get("Event")
        if kind == "SparkListenerApplicationStart":
            app_start = event["Timestamp"]
        elif kind == "SparkListenerApplicationEnd":
            app_end = event["Timestamp"]
        elif kind == "SparkListenerJobStart":
            jobs[event["Job ID"]] = [event["Submission Time"], 0]
        elif kind == "SparkListenerJobEnd":
            jobs[event["Job ID"]][1] = event["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            stages += 1
        elif kind == "SparkListenerTaskEnd":
            tasks += 1
            metrics = event.get("Task Metrics") or {}
            run_ms += metrics.get("Executor Run Time", 0)
            deserialize_ms += metrics.get("Executor Deserialize Time", 0)
            gc_ms += metrics.get("JVM GC Time", 0)
    in_jobs = sum(end - start for start, end in jobs.values() if end)
    return {
        "jobs": len(jobs),
        "stages": stages,
        "tasks": tasks,
        "application_s": round((app_end - app_start) / 1000, 1) if app_end else None,
        "in_jobs_s": round(in_jobs / 1000, 1),
        "task_run_s": round(run_ms / 1000, 1),
        "task_deserialize_s": round(deserialize_ms / 1000, 1),
        "task_gc_s": round(gc_ms / 1000, 1),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Both figures (`quick` changes nothing: each is one run of the real thing)."""
    with tempfile.TemporaryDirectory(prefix="kraft-acl-first-hour-") as tmp:
        work = Path(tmp)
        (work / "make").mkdir()
        (work / "audit").mkdir()
        return {"make_run": make_run(work / "make"), "audit_small": audit_small(work / "audit")}
