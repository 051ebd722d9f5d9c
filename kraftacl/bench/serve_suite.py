"""The `serve` benchmark suite: a real `kraft-acl serve` process on loopback, asked over keep-alive HTTP.

Figures: one-action authorize round trip p50/p99, a batch of 100 actions (with how the machine's idle CPUs wake,
`cpuidle`: on a quiet KVM guest whose vCPUs halt at once, two halt exits dominate a loopback round trip; see
BENCHMARKS.md), and decisions per second
with 8 concurrent keep-alive clients (each in its own process, so the clients' interpreter is not the
bottleneck), with the serve process's own CPU seconds so the rate per serve core is known. Data: the
authorizer suite's mixed set (100k ACLs over 5,000 principals), loaded as one batch of records. Then
`noisy_neighbour` (`kraftacl.bench.noisy_neighbour`, its own serve of 300k ACLs): the broker's one-action latency
while another caller does heavy work.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from kraftacl.api.endpoints import AUTHORIZE
from kraftacl.api.wire import ActionIn, AuthorizeIn
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.bench import noisy_neighbour
from kraftacl.bench.datasets import mixed_requests, mixed_set
from kraftacl.bench.http_client import KeepAlive
from kraftacl.bench.timing import REFERENCE_PROBE_US, at_reference, cpu_idle, cpu_probe_us, percentiles
from kraftacl.harness.serve_process import ServeProcess, free_port
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.uuids import new_uuid

TOKEN = "bench-broker-token-0123456789"


def _start(work: Path, acl_count: int) -> tuple[ServeProcess, int]:
    """Write the log and config, start serve, wait until it is ready; (process, port)."""
    data = mixed_set(acl_count)
    with FileLog(work / "log") as log:
        records = [record_from_acl(new_uuid(), acl) for _, acl in data.acls]
        for start in range(0, len(records), 10_000):
            log.append(records[start : start + 10_000])
    (work / "tokens").write_text(f"User:broker {TOKEN}\n")
    (work / "tokens").chmod(0o600)
    port = free_port()
    properties = {
        "listeners": f"CLIENT://127.0.0.1:{port}",
        "metadata.log.dir": str(work / "log"),
        "auth.token.file": str(work / "tokens"),
        "broker.principals": "User:broker",
        "process.roles": "broker",
        "log.level": "WARN",
    }
    return ServeProcess(work / "serve", properties).start(), port


def _body(requests: list[tuple[str, str, Any, Any, str]], start: int, n: int) -> bytes:
    principal, host = requests[start][0], requests[start][1]
    actions = [ActionIn(r[2].name, r[3].name, r[4]) for r in requests[start : start + n]]
    return msgspec.json.encode(AuthorizeIn(principal, host, actions))


def _latency(port: int, bodies: list[bytes], rounds: int) -> dict[str, float]:
    with KeepAlive("127.0.0.1", port, AUTHORIZE.path, TOKEN) as client:
        for body in bodies[:500]:
            client.post(body)
        samples = []
        for i in range(rounds):
            body = bodies[i % len(bodies)]
            start = time.perf_counter_ns()
            client.post(body)
            samples.append(time.perf_counter_ns() - start)
    return percentiles(samples)


def _client(port: int, bodies: list[bytes], seconds: float, go: Any, out: Any) -> None:
    with KeepAlive("127.0.0.1", port, AUTHORIZE.path, TOKEN) as client:
        client.post(bodies[0])
        out.put(0)  # connected and warm
        go.wait()
        done, deadline, i = 0, time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            client.post(bodies[i % len(bodies)])
            i += 1
            done += 1
        out.put(done)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _throughput(
    port: int, pid: int, bodies: list[bytes], actions: int, clients: int, seconds: float
) -> dict[str, float]:
    """`clients` processes post as fast as they can for `seconds`, all starting together."""
    ctx = multiprocessing.get_context("spawn")
    queue, go = ctx.Queue(), ctx.Event()
    workers = [ctx.Process(target=_client, args=(port, bodies, seconds, go, queue)) for _ in range(clients)]
    for worker in workers:
        worker.start()
    for _ in workers:
        queue.get(timeout=120)
    cpu_before = _cpu_seconds(pid)
    go.set()
    calls = sum(queue.get(timeout=seconds + 120) for _ in workers)
    cpu = _cpu_seconds(pid) - cpu_before
    for worker in workers:
        worker.join()
    return {
        "clients": clients,
        "actions_per_call": actions,
        "calls": calls,
        "decisions_per_s": round(calls * actions / seconds),
        "serve_cpu_s": round(cpu, 2),
        "decisions_per_serve_cpu_s": round(calls * actions / cpu) if cpu else 0,
    }


def run(quick: bool = False) -> dict[str, Any]:
    """The whole suite; serve is stopped at the end."""
    acl_count = 10_000 if quick else 100_000
    rounds = 2_000 if quick else 20_000
    probe = cpu_probe_us()
    with tempfile.TemporaryDirectory(prefix="kraft-acl-bench-serve-") as tmp:
        serve, port = _start(Path(tmp), acl_count)
        try:
            data = mixed_set(acl_count)
            requests = mixed_requests(data, 20_000)
            ones = [_body(requests, i, 1) for i in range(2_000)]
            hundreds = [_body(requests, i * 100, 100) for i in range(100)]
            print("serve suite: latency", file=sys.stderr)
            one = _latency(port, ones, rounds)
            batch = _latency(port, hundreds, max(rounds // 10, 500))
            print("serve suite: throughput", file=sys.stderr)
            seconds = 3.0 if quick else 10.0
            assert serve.proc is not None
            single = _throughput(port, serve.proc.pid, ones, 1, 8, seconds)
            batched = _throughput(port, serve.proc.pid, hundreds, 100, 8, seconds)
        finally:
            serve.stop()
    print("serve suite: noisy_neighbour", file=sys.stderr)
    noisy = noisy_neighbour.run(quick=quick)
    return {
        "acls": acl_count,
        "cpu_probe_us": round(probe, 2),
        "cpuidle": cpu_idle(),
        "authorize_1_action_us": one,
        "authorize_100_actions_us": batch,
        "authorize_1_action_p50_us_at_reference": round(at_reference(one["p50_us"], probe), 1),
        "authorize_100_actions_p50_us_at_reference": round(at_reference(batch["p50_us"], probe), 1),
        "throughput_1_action": single,
        "throughput_100_actions": batched,
        "decisions_per_serve_cpu_s_at_reference": round(
            single["decisions_per_serve_cpu_s"] * probe / REFERENCE_PROBE_US
        ),
        "noisy_neighbour": noisy,
    }
