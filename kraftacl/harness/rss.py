"""The resident memory of this process or another one (a serve child), for the benchmarks and the memory tests.

Stateless; Linux only (it reads /proc).
"""

from __future__ import annotations

import os


def rss_bytes() -> int:
    """Resident set size of this process now."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_kb(pid: int) -> int:
    """Resident set size of process `pid` now, in kB (VmRSS)."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise ValueError(f"process {pid} has no VmRSS")
