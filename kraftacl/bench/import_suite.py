"""`kraft-acl bench --suite import`: 1M ACLs from an acls.json into an empty embedded log, then exported back.

Runs in the calling process on temporary directories it removes; not thread-safe (it pauses `gc` as a
node's start does).

What is timed is what `kraft-acl import --from-json FILE --log-dir DIR` does after parsing its options:
read and validate the file, open the log as its writer, one controller import (validation, duplicate
check, ids, one batch appended and fsynced, the node publishing what it wrote) up to its report
(`import_s`), then until it exits (`import_exit_s`: the snapshot the default policy asks for after
that many records, close). `export` is the state read back and written as sorted acls.json.
"""

from __future__ import annotations

import gc
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from kraftacl.api.acl_targets import LogAclTarget
from kraftacl.api.targets import LogTarget
from kraftacl.authorizer.inputs.acls_json import acls_json_text
from kraftacl.authorizer.inputs.whatif import load_acls
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.gc_pause import paused_gc
from kraftacl.bench.datasets import mixed_set
from kraftacl.bench.timing import at_reference, cpu_probe_us


def run(quick: bool = False) -> dict[str, Any]:
    """Time one import of 1M ACLs (100k with `quick`) and one export; seconds raw and scaled by the probe."""
    count = 100_000 if quick else 1_000_000
    work = Path(tempfile.mkdtemp(prefix="kraft-acl-bench-import-"))
    try:
        source = work / "acls.json"
        acls: list[StandardAcl] = [acl for _, acl in mixed_set(count, keep_names=False).acls]
        source.write_text(acls_json_text(acls))
        del acls
        target = LogAclTarget(LogTarget(log_dir=work / "meta"))
        probe = cpu_probe_us()
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        with paused_gc():  # as `kraft-acl import` reads its source
            loaded = load_acls(source)
        read_s = time.perf_counter() - start
        result = target.import_acls(loaded, dry_run=False)
        import_s, import_cpu = time.perf_counter() - start, time.process_time() - cpu
        result.finish()
        exit_s, exit_cpu = time.perf_counter() - start, time.process_time() - cpu
        start, cpu = time.perf_counter(), time.process_time()
        exported = acls_json_text(target.acls_at(None).values())
        export_s, export_cpu = time.perf_counter() - start, time.process_time() - cpu
        same = exported == source.read_text()
        probe = (probe + cpu_probe_us()) / 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "acls": len(loaded),
        "added": result.added,
        "file_bytes": len(exported),
        "read_json_s": round(read_s, 2),
        "import_s": round(import_s, 2),
        "import_s_scaled": round(at_reference(import_s, probe), 2),
        "import_cpu_s": round(import_cpu, 2),  # this process's CPU time: less skewed by busy neighbours
        "import_exit_s": round(exit_s, 2),
        "import_exit_cpu_s": round(exit_cpu, 2),
        "export_s": round(export_s, 2),
        "export_s_scaled": round(at_reference(export_s, probe), 2),
        "export_cpu_s": round(export_cpu, 2),
        "export_equals_source": same,
        "cpu_probe_us": round(probe, 2),
        "note": "import_s: read + validate + one batch + publish, into an empty log, to the report; "
        "import_exit_s: + the policy snapshot and close",
    }
