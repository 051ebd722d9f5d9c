"""The `shell` benchmark suite: `kraft-acl shell` answering on a 1M-ACL snapshot, each command a fresh process.

The snapshot is written once into a temporary directory (removed afterwards); every timed run is
the real command line (`kraft-acl shell --snapshot FILE COMMAND`, its output read through a pipe as
`| wc -l` would), so a figure includes interpreter start-up, imports and loading the snapshot, as an
operator waits for it. The lines each command printed are reported, to show what it answered.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.image import AclsImage, Provenance
from kraftacl.bench.timing import at_reference, compiled_loops, cpu_probe_us, progress
from kraftacl.metadata_log.codec.avro import new_uuid
from kraftacl.snapshots.format import SnapshotHeader
from kraftacl.snapshots.store import SnapshotStore

PROBE_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # a fixed id the snapshot holds, for `cat`


def write_snapshot(directory: Path, count: int, seed: int = 11) -> Path:
    """A snapshot of `count` distinct ACLs (TOPIC/GROUP, literal and prefixed, 5,000 principals, 5% DENY)."""
    contents = acl_contents(count, seed)
    acls: dict[str, StandardAcl] = {PROBE_ID: next(contents)}
    acls.update((new_uuid(), acl) for acl in contents)
    image = AclsImage(OverlayMap(acls), Provenance(count - 1, 1, 1_700_000_000_000))
    return SnapshotStore(directory).write_chunks(SnapshotHeader(count, 1, 1_700_000_000_000), image.chunks())


def acl_contents(count: int, seed: int = 11) -> Iterator[StandardAcl]:
    """The snapshot's ACLs, in order (distinct: each has its own resource name)."""
    rng = random.Random(seed)
    for n in range(count):
        yield _acl(n, rng)


def _acl(n: int, rng: random.Random) -> StandardAcl:
    return StandardAcl(
        ResourceType.TOPIC if n % 4 else ResourceType.GROUP,
        f"svc{n % 997}.events-{n}",
        PatternType.PREFIXED if n % 7 == 0 else PatternType.LITERAL,
        f"User:u{rng.randrange(5000)}",
        "*",
        rng.choice((AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL)),
        AclPermissionType.DENY if n % 20 == 0 else AclPermissionType.ALLOW,
    )


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
