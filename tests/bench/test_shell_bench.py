"""`kraft-acl bench --suite shell --quick`: every command ran, in its own process, on the snapshot it claims.

No time is asserted (performance is measured, never asserted); the lines each command printed show
what it answered on the suite's own data.
"""

from __future__ import annotations

import json
import subprocess
import sys

from kraftacl.harness.acl_data import acl_contents


def test_shell_suite_quick_answers_on_its_snapshot() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "from kraftacl.cli.app import main; main()", "bench", "--suite", "shell", "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result = json.loads(out.stdout)
    assert result["suite"] == "shell" and result["acls"] == 100_000 and result["snapshot_bytes"] > 0
    u1 = sum(1 for acl in acl_contents(100_000) if acl.principal == "User:u1")
    lines = {name: result[name]["lines"] for name in ("ls_acl_id", "cat_one_acl", "who_can", "ls_by_principal")}
    assert lines["ls_acl_id"] == 100_000 and lines["cat_one_acl"] == 10 and lines["ls_by_principal"] == u1 > 0
    assert lines["who_can"] >= 3  # the header, a row per principal of the resource, "any other principal"
    for name in lines:
        figure = result[name]
        assert figure["runs_seconds"] == [figure["seconds"]] and figure["seconds"] > 0 and figure["probe_us"] > 0
