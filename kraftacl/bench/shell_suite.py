"""The `shell` benchmark suite: `kraft-acl shell` answering on a 1M-ACL snapshot, each command a fresh process.

The snapshot is written once into a temporary directory (removed afterwards); every timed run is
the real command line (`kraft-acl shell --snapshot FILE COMMAND`, its output read through a pipe as
`| wc -l` would), so a figure includes interpreter start-up, imports and loading the snapshot, as an
operator waits for it. The lines each command printed are reported, to show what it answered.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kraftacl.bench.timing import at_reference, compiled_loops, cpu_probe_us, progress
from kraftacl.harness.acl_data import PROBE_ID, write_snapshot


def timed_command(snapshot: Path, words: list[str]) -> dict[str, Any]:
    """Seconds for one `kraft-acl shell --snapshot FILE WORDS...` process, with the probe read around it.

    The process gets this one's `sys.path` and must use the same compiled loops (as `timing.in_child`).
    """
    path = [entry or os.getcwd() for entry in sys.path]
    code = (
        f"import sys\nsys.path[:] = {path!r}\n"
        f"from kraftacl.bench.timing import compiled_loops\nif compiled_loops() != {compiled_loops()!r}:\n"
        "    raise SystemExit('the compiled loops differ from those of the parent: run make setup')\n"
        "from kraftacl.cli.app import main\nmain()"
    )
    argv = [sys.executable, "-c", code, "shell", "--snapshot", str(snapshot), *words]
    progress(f"shell {' '.join(words)} (new process)")
    before = cpu_probe_us(2000)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, timeout=600)
    seconds = time.perf_counter() - start
    probe = (before + cpu_probe_us(2000)) / 2
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip()
        raise RuntimeError(f"kraft-acl shell {' '.join(words)} exited {done.returncode}: {why}")
    return {
        "seconds": round(seconds, 2),
        "probe_us": round(probe, 2),
        "seconds_at_reference": round(at_reference(seconds, probe), 2),
        "lines": done.stdout.count(b"\n"),
    }


COMMANDS = {
    "ls_acl_id": ["ls", "/acl/id"],
    "cat_one_acl": ["cat", f"/acl/id/{PROBE_ID}"],
    "who_can": ["who-can", "READ", "TOPIC:svc1.events-1"],  # the second ACL's resource
    "ls_by_principal": ["ls", "/acl/by-principal/User:u1"],
}


def run(quick: bool = False) -> dict[str, Any]:
    """Each command 3 times on a 1M-ACL snapshot (once on 100k with --quick): the median run, every run's seconds."""
    count, runs = (100_000, 1) if quick else (1_000_000, 3)
    out: dict[str, Any] = {"suite": "shell", "cpu_probe_us": round(cpu_probe_us(), 2), "acls": count}
    out.update(compiled_loops())
    with tempfile.TemporaryDirectory() as tmp:
        progress(f"shell: writing a snapshot of {count} ACLs")
        snapshot = write_snapshot(Path(tmp), count)
        out["snapshot_bytes"] = snapshot.stat().st_size
        os.sync()
        for name, words in COMMANDS.items():
            results = sorted((timed_command(snapshot, words) for _ in range(runs)), key=lambda r: float(r["seconds"]))
            median = dict(results[len(results) // 2])
            median["runs_seconds"] = [r["seconds"] for r in results]
            out[name] = median
    return out
