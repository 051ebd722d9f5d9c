"""Timing helpers shared by the benchmark suites: the CPU probe, percentiles and RSS.

Pure functions; not thread-safe with respect to `gc` state, which they change on purpose.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
import timeit
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from kraftacl.authorizer.index import native_rows
from kraftacl.metadata_log import codec

T = TypeVar("T")

# The probe on the machine the issues' targets are stated for ("a 2-core 2 GHz machine"):
# performance-notes.md §7 puts it at about 24 µs.
REFERENCE_PROBE_US = 24.0


_CPUIDLE = "/sys/devices/system/cpu/cpuidle"
_HALTPOLL = "/sys/module/haltpoll/parameters/guest_halt_poll_ns"
_PROC_STAT = "/proc/stat"


def cpu_idle() -> dict[str, Any]:
    """How this machine's idle CPUs wake (a loopback round trip pays two wake-ups when the host is quiet): the
    kernel's cpuidle driver and, in a KVM guest using `haltpoll`, how long an idle vCPU polls before halting
    (`guest_halt_poll_ns`; 0 means every wake-up is a halt exit through the hypervisor). None where absent."""

    def read(path: str) -> str | None:
        try:
            with open(path, encoding="ascii") as f:
                return f.read().strip()
        except OSError:
            return None

    poll = read(_HALTPOLL)
    return {
        "driver": read(f"{_CPUIDLE}/current_driver"),
        "guest_halt_poll_ns": int(poll) if poll is not None and poll.isdigit() else None,
    }


def cpu_steal_ms() -> int | None:
    """Milliseconds of CPU time the hypervisor gave other guests while this one's vCPUs wanted it, summed over the
    vCPUs since boot (/proc/stat's `steal`, in ticks of 10 ms); None where the kernel does not report it. The
    difference across a run tells whether a latency outlier coincided with the host taking the CPU away."""
    try:
        with open(_PROC_STAT, encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 9 or fields[0] != "cpu" or not fields[8].isdigit():
        return None
    return int(fields[8]) * 1000 // os.sysconf("SC_CLK_TCK")


def cpu_probe_us(number: int = 20000) -> float:
    """Microseconds for `sum(range(1000))`, best of 5 (the performance notes' cross-machine yardstick).

    A smaller `number` gives a quick reading (about 0.15 s at 2000) to take next to each timed run.
    """
    return min(timeit.repeat("sum(range(1000))", number=number, repeat=5)) / number * 1e6


def probed(run: Callable[[], T]) -> tuple[T, float, float]:
    """`run()`'s result, its seconds, and the mean of quick probes just before and just after it."""
    before = cpu_probe_us(2000)
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    return result, seconds, (before + cpu_probe_us(2000)) / 2


def at_reference(seconds: float, probe_us: float) -> float:
    """`seconds` measured at `probe_us`, scaled in proportion to the reference machine's probe."""
    return seconds * REFERENCE_PROBE_US / probe_us


def percentiles(samples_ns: list[int]) -> dict[str, float]:
    """mean, p50, p99 and p99.9 in microseconds."""
    ordered = sorted(samples_ns)
    n = len(ordered)

    def pick(q: float) -> float:
        return round(ordered[min(n - 1, int(q * n))] / 1000, 3)

    return {
        "mean_us": round(sum(ordered) / n / 1000, 3),
        "p50_us": pick(0.50),
        "p99_us": pick(0.99),
        "p999_us": pick(0.999),
        "samples": n,
    }


def mean_us(fn: Callable[[], object], repeat: int) -> float:
    """Mean microseconds per call over `repeat` calls after a warm-up, best of 3 rounds."""
    for _ in range(min(repeat, 1000)):
        fn()
    best = min(timeit.repeat(fn, number=repeat, repeat=3))
    return round(best / repeat * 1e6, 3)


@contextmanager
def frozen_gc() -> Iterator[None]:
    """Collect, then move every live object to the permanent generation, as a server does after load."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def compiled_loops() -> dict[str, str]:
    """Which decoder and bulk loops this process uses ("native": the mypyc-compiled copies, metadata_log/native.py)."""
    return {"decoder": codec.DECODER, "bulk_rows": native_rows.BULK_ROWS}


_STARTED = time.monotonic()


def progress(message: str) -> None:
    """One progress line on stderr (stdout carries only the JSON result)."""
    print(f"kraft-acl bench: {time.monotonic() - _STARTED:6.1f}s {message}", file=sys.stderr, flush=True)


def in_child(module: str, call: str, loops: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `bench.<module>.<call>` in a fresh interpreter; its last output line is a JSON object.

    A fresh process owns its memory figures and does not reuse what an earlier case freed. It must
    use the same loops as this process (or `loops`): a compiled source edited while a bench runs
    makes new processes fall back to the source, and their figures would mean something else. It
    imports the very modules this process imported: it gets this process's `sys.path` before it
    imports anything, so that `python -c`, which puts the working directory first, cannot pick up
    another source tree (a checkout the command was started from, compiled or not).
    """
    expected = compiled_loops() if loops is None else loops
    path = [entry or os.getcwd() for entry in sys.path]
    progress(f"{module}.{call} (new process)")
    code = (
        f"import sys\nsys.path[:] = {path!r}\n"
        f"from kraftacl.bench.timing import compiled_loops\nexpected, used = {expected!r}, compiled_loops()\n"
        "if used != expected:\n"
        "    raise SystemExit(f'used {used}, not {expected} as its parent; run `make setup`')\n"
        f"from kraftacl.bench import {module}; {module}.{call}"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or ["no error output"])[-1]
        raise RuntimeError(f"bench child {module}.{call} failed (exit {out.returncode}): {why}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result
