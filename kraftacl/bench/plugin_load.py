"""The `small_requests` load of the plugin benchmark: many producers at once (one process each, so that Python's lock
does not pace them), `linger.ms=0` and `acks=1`, 100-byte records, for a fixed time; records per second, Produce
requests per second (the broker's own RequestsPerSec count, read over JMX), and the broker's and serve's CPU per
request (less what each burns idle, measured just before).

Not thread-safe; one benchmark drives it. The producer processes are spawned, not forked (librdkafka's threads do
not survive a fork), and each stops at its deadline.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from kraftacl.bench import plugin_kafka as kafka
from kraftacl.harness.plugin_jar import TEST_CLASSES

PRODUCE_REQUESTS = "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce,*"


def produce_requests(broker: kafka.Broker) -> float:
    """The broker's count of Produce requests so far (every version), over JMX."""
    out = subprocess.run(
        ["java", "-cp", str(TEST_CLASSES), "io.github.kraftacl.plugin.JmxAttribute", str(broker.pid),
         PRODUCE_REQUESTS, "Count"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    return sum(float(line.rsplit("\t", 1)[1]) for line in out.splitlines() if "\t" in line)


def small_requests(
    broker: kafka.Broker, user: str, topic: str, serve_pid: int | None, producers: int = 6, seconds: float = 15.0
) -> dict[str, Any]:
    """`producers` producer processes for `seconds` (after a 3 s warm-up each): rates and CPU per Produce request."""
    conf = broker.conf(user)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(producers, mp_context=context) as pool:  # a producer that dies fails the run, no hang
        idle = kafka.idle_rates(broker.pid, serve_pid)  # heartbeats, the tailer: subtracted below
        pending = [pool.submit(kafka.produce_for, conf, topic, 3.0, seconds) for _ in range(producers)]
        time.sleep(3.0 + 1.0)  # the warm-up, and the processes' start
        cpu, requests, started = kafka.cpu_now(broker.pid, serve_pid), produce_requests(broker), time.perf_counter()
        delivered = sum(f.result(timeout=seconds + 300) for f in pending)
        elapsed = time.perf_counter() - started
        after = kafka.cpu_now(broker.pid, serve_pid)
        used = [a - b - rate * elapsed for b, a, rate in zip(cpu, after, idle, strict=True)]
        n = produce_requests(broker) - requests
    out = {
        "producers": producers,
        "records_per_s": round(delivered / seconds),
        "produce_requests_per_s": round(n / elapsed),
        "records_per_request": round(delivered / n, 2) if n else None,
        "broker_cpu_us_per_request": round(used[0] / n * 1e6, 2) if n else None,
    }
    if serve_pid is not None:
        out["serve_cpu_us_per_request"] = round(used[1] / n * 1e6, 3) if n else None
    return out
