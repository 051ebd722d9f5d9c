"""The plugin timed in a JVM outside a broker (PluginBench, in kafka-plugin's test classes) against a real serve: the
round trip of a decision that is not remembered, a repeated decision answered from memory beside Kafka's
StandardAuthorizer holding the same ACLs (`authorize_hit_us`), the time from serve applying an ACL change to
every one of several plugin instances dropping the decisions made before it (`invalidation_ms`), and how long after
serve freezes a plugin stops using what it remembers (`staleness_ms`).

Each figure is one child JVM; a run's CPU probe is read around it. Not thread-safe.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from functools import partial
from pathlib import Path
from typing import Any

from kraftacl.bench.timing import probed
from kraftacl.harness.plugin_jar import PLUGIN_JAR, TEST_CLASSES, kafka_lib
from kraftacl.harness.serve_process import ServeProcess


def _command(
    root: Path, serve: ServeProcess, mode: str, args: list[str], cache: bool, transport: str = "frames"
) -> list[str]:
    """The PluginBench command line, the plugin configured for serve's early-start listener (defaults otherwise)."""
    props = root / f"plugin-{mode}.properties"
    props.write_text(
        f"kraft.acl.urls={serve.url('CONTROLLER')}\nkraft.acl.token.file={root / 'plugin.token'}\n"
        f"kraft.acl.cache.enabled={'true' if cache else 'false'}\nkraft.acl.serve.transport={transport}\n"
    )
    main = ["io.github.kraftacl.plugin.PluginBench", str(props), mode]
    return ["java", "-cp", f"{TEST_CLASSES}:{PLUGIN_JAR}:{kafka_lib()}/*", *main, *args]


def plugin_java(root: Path, serve: ServeProcess, mode: str, args: list[str], cache: bool = True) -> dict[str, Any]:
    """One PluginBench run; its last JSON line."""
    cmd = _command(root, serve, mode, args, cache)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=1800)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _serve_cpu_s(serve: ServeProcess) -> float:
    assert serve.proc is not None
    fields = Path(f"/proc/{serve.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def concurrent_figures(root: Path, serve: ServeProcess, user: str, transport: str, threads: int = 8) -> dict[str, Any]:
    """One JVM whose `threads` broker threads call authorize() (one action, the cache off) at once for 10 s over
    `transport`: decisions per second and per serve CPU-second, as a busy broker costs serve."""
    args = [f"User:{user}", "DESCRIBE", "TOPIC", f"{user}.topic-", "1", str(threads), "10"]
    cmd = _command(root, serve, "concurrent", args, False, transport)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as jvm:
        assert jvm.stdout is not None
        lines = iter(jvm.stdout.readline, "")
        for line in lines:
            if line.strip() == "measuring":
                break
        before = _serve_cpu_s(serve)
        result: dict[str, Any] = json.loads(next(lines))
        cpu = _serve_cpu_s(serve) - before
    if jvm.returncode:
        raise RuntimeError(f"PluginBench concurrent failed (exit {jvm.returncode})")
    return {
        **result,
        "transport": transport,
        "serve_cpu_s": round(cpu, 2),
        "decisions_per_serve_cpu_s": round(result["calls"] / cpu) if cpu else 0,
    }


def _run(measure: Any) -> dict[str, Any]:
    result, _, probe = probed(measure)
    return {**result, "probe_us": round(probe, 2), "load_1m": round(os.getloadavg()[0], 2)}


def round_trip_figures(root: Path, serve: ServeProcess, user: str, quick: bool) -> dict[str, Any]:
    """authorize() of decisions never remembered (the cache off): 1 and 100 actions, the plugin's two transports
    (decision frames, the default, and HTTP) side by side, and 8 broker threads at once over each."""
    calls = 2000 if quick else 20_000
    out: dict[str, Any] = {}
    for actions in (1, 100):
        args = [f"User:{user}", "DESCRIBE", "TOPIC", f"{user}.topic-", str(actions), str(calls)]
        out[f"{actions}_action" + ("s" if actions > 1 else "")] = _run(
            partial(plugin_java, root, serve, "time", args, False)
        )
    args = [f"User:{user}", "DESCRIBE", "TOPIC", f"{user}.topic-", "1", str(calls // 2)]
    out["transport_1_action"] = _run(partial(plugin_java, root, serve, "transports", args, False))
    for transport in ("frames", "http"):
        out[f"concurrent_8_threads_{transport}"] = _run(partial(concurrent_figures, root, serve, user, transport))
    return out


def hit_figures(root: Path, serve: ServeProcess, user: str, quick: bool, rounds: int = 2) -> dict[str, Any]:
    """authorize_hit_us: one action (and a Metadata request's 500 topics) decided again and again, answered from the
    plugin's memory, beside StandardAuthorizer in the same JVM on every ACL serve holds; `rounds` JVMs each."""
    calls = 20_000 if quick else 200_000
    out: dict[str, Any] = {}
    for actions in (1, 500):
        args = [f"User:{user}", "DESCRIBE", "TOPIC", f"{user}.topic-", str(actions), str(max(1000, calls // actions))]
        out[f"{actions}_action" + ("s" if actions > 1 else "")] = [
            _run(partial(plugin_java, root, serve, "hit", args)) for _ in range(rounds)
        ]
    return out


def invalidation_figures(
    root: Path, serve: ServeProcess, user: str, admin_token: str, quick: bool, plugins: int = 3
) -> dict[str, Any]:
    """invalidation_ms: `plugins` plugin instances each remembering a decision, then one ACL created at a time
    through serve: per change, the longest of their lags from serve publishing it to dropping older decisions."""
    changes = 50 if quick else 300
    args = [f"User:{user}", "DESCRIBE", "TOPIC", f"{user}.topic-", "1", str(changes), str(plugins), admin_token]
    return _run(partial(plugin_java, root, serve, "invalidation", args))


def staleness_figures(root: Path, serve: ServeProcess, user: str, rounds: int = 12) -> dict[str, Any]:
    """The staleness bound as it happens: serve frozen (SIGSTOP) at a random point of the feed's heartbeat, `rounds`
    times; how long after the freeze the plugin stopped using remembered decisions (at most heartbeat + grace,
    500 + 500 ms by default, plus the loop's reading)."""
    cmd = _command(root, serve, "staleness", [f"User:{user}", "DESCRIBE", "TOPIC", f"{user}.topic-", "1"], True)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    lines = iter(proc.stdout)

    def next_state(usable: bool) -> int:
        for line in lines:
            state = json.loads(line)
            if state["usable"] is usable:
                return int(state["wall_us"])
        raise RuntimeError(f"PluginBench staleness ended before the view turned {'usable' if usable else 'unusable'}")

    lags: list[float] = []
    try:
        next_state(True)
        for _ in range(rounds):
            time.sleep(random.uniform(0.05, 1.05))
            stopped = time.time_ns() // 1000
            serve.pause()
            try:
                lags.append((next_state(False) - stopped) / 1000)
            finally:
                serve.resume()
            next_state(True)
    finally:
        proc.stdin.close()
        proc.wait(60)
    lags.sort()
    return {
        "rounds": rounds,
        "bound_ms": 1000,
        "p50_ms": round(lags[len(lags) // 2], 1),
        "min_ms": round(lags[0], 1),
        "max_ms": round(lags[-1], 1),
        "load_1m": round(os.getloadavg()[0], 2),
    }
