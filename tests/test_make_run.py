"""`make run` from a fresh checkout, as a new user runs it: it says what it is doing, installs what serve and the
CLI need and nothing else (no dev tools, no PySpark, no Maven), compiles the hot loops, and reaches serve's ready
line; on that plain install `kraft-acl audit` is one line saying how to add the spark extra (exit 2) while its
`--help` prints the help, and the
README's activation makes `kraft-acl` a command. (The time with empty caches is a benchmark: `kraft-acl bench
--suite first-hour`, BENCHMARKS.md; here pip's cache is the machine's.)
"""

from __future__ import annotations

import json
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from kraftacl.harness.checkout import MakeRun, clean_path_env, fresh_checkout
from kraftacl.harness.serve_process import free_port
from tests.readme_blocks import PORTS, with_ports

pytestmark = pytest.mark.slow


def test_make_run_from_a_fresh_checkout_installs_the_runtime_only(tmp_path: Path) -> None:
    root = fresh_checkout(tmp_path / "kraft-acl")
    ports = {name: free_port() for name in PORTS}
    config = root / "examples" / "serve" / "server.properties"
    config.write_text(with_ports(config.read_text(encoding="utf-8"), ports), encoding="utf-8")
    tokens = root / "examples" / "serve" / "tokens"
    tokens.chmod(0o644)  # as a fresh clone has it: git keeps no mode 600
    m2 = tmp_path / "m2"
    run = MakeRun(root, clean_path_env({"MAVEN_OPTS": f"-Dmaven.repo.local={m2}"}), tmp_path / "make-run.err")
    try:
        run.wait_ready(900)
    finally:
        # make reports the Ctrl-C: exit 2 or 130, or it re-raises SIGINT on itself (GNU make, a recipe it ran
        # without a shell); serve's own clean stop is its "stopped" line below
        stopped = run.stop()
        assert stopped in (0, 2, 130, -signal.SIGINT), (tmp_path / "make-run.err").read_text()
    said = [line for _, line in run.lines]
    steps = [line for line in said if line.startswith("kraft-acl: ")]
    assert steps[0].startswith("kraft-acl: creating .venv (Python virtual environment, Python 3."), said
    assert steps[1:3] == [
        "kraft-acl: installing kraft-acl and its runtime dependencies from PyPI and compiling its two hot loops "
        "with mypyc",
        "kraft-acl: loading the demo ACLs of examples/serve/acls.json into data/serve-demo",
    ], said
    assert f"listeners CONTROLLER http://127.0.0.1:{ports['serve_controller']} (early start)" in "\n".join(said)
    assert "kraft-acl serve: stopped" in said  # Ctrl-C stopped serve cleanly
    # make run made the demo's token file the owner's, so serve has nothing to warn about it
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    assert "readable by group or others" not in (tmp_path / "make-run.err").read_text(encoding="utf-8")

    python = root / ".venv" / "bin" / "python"
    listed = subprocess.run([python, "-m", "pip", "list", "--format", "json"], capture_output=True, text=True)
    packages = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert {"kraft-acl", "msgspec", "uvloop", "confluent-kafka", "typer"} <= packages
    assert not packages & {"pytest", "ruff", "mypy", "hypothesis", "pyspark", "pyarrow", "pandas", "schemathesis"}
    assert not (root / "kafka-plugin" / "target").exists() and not m2.exists()  # no Maven at all
    assert not (root / ".spark").exists()
    native = subprocess.run(
        [python, "-c", "from kraftacl.bench.timing import compiled_loops; print(compiled_loops())"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert native.stdout.count("native") == 2, native.stdout + native.stderr

    audit = subprocess.run(
        ["bash", "-c", "source .venv/bin/activate && kraft-acl audit fold --log-dir data/serve-demo --out x"],
        cwd=root,
        env=clean_path_env(),
        capture_output=True,
        text=True,
    )
    assert audit.returncode == 2 and audit.stdout == "", audit.stderr
    lines = audit.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kraft-acl: error: kraft-acl audit runs on Spark"), lines
    assert "pip install -e '.[spark]'" in lines[0] and "pyspark" in lines[0]
    assert not (root / "x").exists()

    helped = subprocess.run(
        ["bash", "-c", "source .venv/bin/activate && kraft-acl audit fold --help"],
        cwd=root,
        env=clean_path_env(),
        capture_output=True,
        text=True,
    )
    assert (helped.returncode, helped.stderr) == (0, ""), helped.stderr
    assert helped.stdout.startswith("usage: kraft-acl audit fold ") and "--to-offset N" in helped.stdout
