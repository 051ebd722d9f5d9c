"""The `serve` benchmark suite: a real `kraft-acl serve` process on loopback, asked over keep-alive HTTP and over
decision frames (`kraftacl.api.frames`), each figure for both.

Figures: one-action authorize round trip p50/p99, a batch of 100 actions (with how the machine's idle CPUs wake,
`cpuidle`: on a quiet KVM guest whose vCPUs halt at once, two halt exits dominate a loopback round trip; see
BENCHMARKS.md), and decisions per second
with 8 concurrent keep-alive clients (each in its own process, so the clients' interpreter is not the
bottleneck), with the serve process's own CPU seconds so the rate per serve core is known; and the same over
frames multiplexed as the plugin sends them under load (2 connections, one per broker, each with 8 frames in flight:
a broker's request threads sharing its one connection). Data: the
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
from kraftacl.api.frames import KIND_OF_PATH, FrameClient
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
TRANSPORTS = ("http", "frames")  # HTTP/1.1 keep-alive, and decision frames (`kraftacl.api.frames`)
# the plugin's way under load: each broker's request threads share one frames connection per serve
MUX_CLIENTS, MUX_DEPTH = 2, 8


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


class _Asker:
    """One keep-alive connection asking /v1/authorize, over HTTP or decision frames (`kraftacl.api.frames`)."""

    def __init__(self, port: int, transport: str) -> None:
        self.http = KeepAlive("127.0.0.1", port, AUTHORIZE.path, TOKEN) if transport == "http" else None
        self.frames = FrameClient("127.0.0.1", port, TOKEN) if transport == "frames" else None

    def ask(self, body: bytes) -> None:
        """One call; a status other than 200 fails the run."""
        if self.http is not None:
            self.http.post(body)
            return
        assert self.frames is not None
        status, answer = self.frames.call(KIND_OF_PATH[AUTHORIZE.path], body)
        if status != 200:
            raise RuntimeError(f"serve answered {status}: {answer[:200]!r}")

    def __enter__(self) -> _Asker:
        return self

    def __exit__(self, *exc: object) -> None:
        for client in (self.http, self.frames):
            if client is not None:
                client.close()


def _latency(port: int, bodies: list[bytes], rounds: int, transport: str) -> dict[str, float]:
    with _Asker(port, transport) as client:
        for body in bodies[:500]:
            client.ask(body)
        samples = []
        for i in range(rounds):
            body = bodies[i % len(bodies)]
            start = time.perf_counter_ns()
            client.ask(body)
            samples.append(time.perf_counter_ns() - start)
    return percentiles(samples)


def _client(port: int, bodies: list[bytes], seconds: float, transport: str, go: Any, out: Any) -> None:
    with _Asker(port, transport) as client:
        client.ask(bodies[0])
        out.put(0)  # connected and warm
        go.wait()
        done, deadline, i = 0, time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            client.ask(bodies[i % len(bodies)])
            i += 1
            done += 1
        out.put(done)


def _multiplexed(port: int, bodies: list[bytes], seconds: float, depth: int, go: Any, out: Any) -> None:
    """One connection carrying `depth` frames in flight (a broker's request threads sharing the plugin's one
    connection): a new frame as each answer comes back."""
    kind = KIND_OF_PATH[AUTHORIZE.path]
    with FrameClient("127.0.0.1", port, TOKEN) as client:
        client.call(kind, bodies[0])
        out.put(0)  # connected and warm
        go.wait()
        for i in range(depth):
            client.send(kind, bodies[i % len(bodies)])
        done, deadline, i = 0, time.monotonic() + seconds, depth
        while time.monotonic() < deadline:
            if client.receive()[1] != 200:
                raise RuntimeError("serve refused a benchmark frame")
            client.send(kind, bodies[i % len(bodies)])
            i += 1
            done += 1
        for _ in range(depth):
            client.receive()
        out.put(done)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _throughput(
    port: int, pid: int, bodies: list[bytes], actions: int, clients: int, seconds: float, transport: str, depth: int = 1
) -> dict[str, float]:
    """`clients` processes ask as fast as they can for `seconds`, all starting together; with `depth` > 1 each is
    one frames connection with that many frames in flight."""
    ctx = multiprocessing.get_context("spawn")
    queue, go = ctx.Queue(), ctx.Event()
    if depth > 1:
        target: Any = _multiplexed
        args: tuple[Any, ...] = (port, bodies, seconds, depth, go, queue)
    else:
        target, args = _client, (port, bodies, seconds, transport, go, queue)
    workers = [ctx.Process(target=target, args=args) for _ in range(clients)]
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
        "in_flight_per_client": depth,
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
            latency: dict[str, dict[str, float]] = {}
            for transport in TRANSPORTS:
                latency[f"1_{transport}"] = _latency(port, ones, rounds, transport)
                latency[f"100_{transport}"] = _latency(port, hundreds, max(rounds // 10, 500), transport)
            print("serve suite: throughput", file=sys.stderr)
            seconds = 3.0 if quick else 10.0
            assert serve.proc is not None
            rates: dict[str, dict[str, float]] = {}
            for transport in TRANSPORTS:
                rates[f"1_{transport}"] = _throughput(port, serve.proc.pid, ones, 1, 8, seconds, transport)
                rates[f"100_{transport}"] = _throughput(port, serve.proc.pid, hundreds, 100, 8, seconds, transport)
            multiplexed = _throughput(port, serve.proc.pid, ones, 1, MUX_CLIENTS, seconds, "frames", MUX_DEPTH)
        finally:
            serve.stop()
    print("serve suite: noisy_neighbour", file=sys.stderr)
    noisy = noisy_neighbour.run(quick=quick)
    figures: dict[str, Any] = {"acls": acl_count, "cpu_probe_us": round(probe, 2), "cpuidle": cpu_idle()}
    for transport in TRANSPORTS:
        tail = "" if transport == "http" else "_frames"
        for n, noun in (("1", "action"), ("100", "actions")):
            measured = latency[f"{n}_{transport}"]
            figures[f"authorize_{n}_{noun}{tail}_us"] = measured
            figures[f"authorize_{n}_{noun}{tail}_p50_us_at_reference"] = round(
                at_reference(measured["p50_us"], probe), 1
            )
            figures[f"throughput_{n}_{noun}{tail}"] = rates[f"{n}_{transport}"]
        per_cpu = rates[f"1_{transport}"]["decisions_per_serve_cpu_s"]
        figures[f"decisions_per_serve_cpu_s{tail}_at_reference"] = round(per_cpu * probe / REFERENCE_PROBE_US)
    figures["throughput_1_action_frames_multiplexed"] = multiplexed
    per_cpu = multiplexed["decisions_per_serve_cpu_s"]
    figures["decisions_per_serve_cpu_s_frames_multiplexed_at_reference"] = round(per_cpu * probe / REFERENCE_PROBE_US)
    return {**figures, "noisy_neighbour": noisy}
