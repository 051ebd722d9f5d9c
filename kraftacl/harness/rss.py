"""The resident memory of this process, for the benchmarks and the memory tests.

Stateless; Linux only (it reads /proc/self/statm).
"""

from __future__ import annotations

import os


def rss_bytes() -> int:
    """Resident set size of this process now."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
