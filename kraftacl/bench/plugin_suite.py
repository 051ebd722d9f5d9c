"""The `plugin` benchmark suite: the Kafka broker plugin's authorize() as the broker calls it (a decision asked of
serve, and one answered from memory beside StandardAuthorizer in the same JVM: `plugin_jvm`), then Kafka's
StandardAuthorizer and the plugin side by side on two identically configured test brokers with the same ACLs
(Metadata for 500 topics in the tenant and KAFKA-20667 shapes, produce, `small_requests` from many producers:
`plugin_load`, start-up with 100k ACLs), and the invalidation lag of several plugins.

Drives child processes (kraft-acl serve, Kafka brokers, a JVM for authorize()) in a temporary directory and
stops them all at the end. Needs Java 17, Maven (or the built jar) and the Kafka jars of scripts/kafka-broker.sh.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from kraftacl.api.endpoints import CREATE_ACLS
from kraftacl.bench import plugin_jvm
from kraftacl.bench import plugin_kafka as kafka
from kraftacl.bench import plugin_load as load
from kraftacl.bench import tenant_acls as shapes
from kraftacl.bench.timing import cpu_probe_us, probed
from kraftacl.harness.plugin_jar import AUTHORIZER_CLASS, PLUGIN_JAR, REPO_ROOT, ensure_built
from kraftacl.harness.serve_process import ServeProcess, free_port

TOKEN, ADMIN_TOKEN = "bench-plugin-token-0123456789", "bench-admin-token-0123456789"
USER = shapes.MEASURED


def _serve(root: Path) -> ServeProcess:
    (root / "tokens").write_text(f"User:broker {TOKEN}\nUser:admin {ADMIN_TOKEN}\n")
    (root / "plugin.token").write_text(TOKEN + "\n")
    return ServeProcess(
        root / "serve",
        {
            "process.roles": "broker,controller",
            "listeners": f"CONTROLLER://127.0.0.1:{free_port()},CLIENT://127.0.0.1:{free_port()}",
            "early.start.listeners": "CONTROLLER",
            "super.users": "User:admin",
            "metadata.log.dir": str(root / "log"),
            "auth.token.file": str(root / "tokens"),
            "broker.principals": "User:broker",
        },
    )


def _serve_acls(serve: ServeProcess, acls: list[shapes.Acl]) -> None:
    for start in range(0, len(acls), 10_000):  # Kafka's MAX_RECORDS_PER_USER_OP per batch
        status, body = serve.call(CREATE_ACLS, ADMIN_TOKEN, {"acls": acls[start : start + 10_000]})
        if status != 200 or any(r["error_code"] for r in body["results"]):
            raise RuntimeError(f"serve refused the benchmark's ACLs: {str(body)[:300]}")


def _side_by_side(brokers: dict[str, kafka.Broker], rounds: int, measure: Callable[[str], dict[str, Any]]) -> Any:
    """`measure(name)` for each broker in turn, `rounds` times (alternating), each run with its CPU probe."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in brokers}
    for _ in range(rounds):
        for name in brokers:
            result, _, probe = probed(partial(measure, name))
            runs[name].append({**result, "probe_us": round(probe, 2), "load_1m": round(os.getloadavg()[0], 2)})
    return runs


def _ratio(runs: dict[str, list[dict[str, Any]]], key: str) -> float:
    """plugin / standard, on the medians of the runs."""
    med = {name: statistics.median(r[key] for r in rs) for name, rs in runs.items()}
    return round(med["plugin"] / med["standard"], 3) if med["standard"] else float("nan")


def _start_brokers(root: Path, serve: ServeProcess) -> dict[str, kafka.Broker]:
    users = ["admin", USER]
    plugin_props = {
        "authorizer.class.name": AUTHORIZER_CLASS,
        "kraft.acl.urls": serve.url("CONTROLLER"),
        "kraft.acl.token.file": str(root / "plugin.token"),
    }
    brokers = {
        "standard": kafka.Broker(root / "standard", {}, None, users),
        "plugin": kafka.Broker(root / "plugin", plugin_props, str(PLUGIN_JAR), users),
    }
    for broker in brokers.values():
        broker.start()
        kafka.create_topics(broker, shapes.topics())
    return brokers


def _startup(brokers: dict[str, kafka.Broker], serve: ServeProcess, rounds: int) -> dict[str, Any]:
    """Restart each broker (the plugin's with serve up and ready), then the plugin's with serve restarted too."""

    def restart(name: str) -> dict[str, Any]:
        brokers[name].stop()
        return {"seconds": round(brokers[name].start(), 2)}

    runs = _side_by_side(brokers, rounds, restart)
    brokers["plugin"].stop()
    serve.stop()
    before = cpu_probe_us(2000)
    started = time.perf_counter()
    serve.start(wait_ready=False)
    brokers["plugin"].start()
    cold = time.perf_counter() - started
    serve.wait_ready()
    return {
        **runs,
        "ratio_seconds": _ratio(runs, "seconds"),
        "plugin_with_serve_starting_too": {"seconds": round(cold, 2), "probe_us": round(before, 2)},
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Every figure of the suite, as one JSON-able dict."""
    ensure_built()
    subprocess.run(["bash", str(REPO_ROOT / "scripts" / "kafka-broker.sh"), "fetch"], check=True, capture_output=True)
    scale = 10 if quick else 1
    tenant, extra = shapes.tenant_shape(500 // scale), shapes.kafka_20667_extra(7000 // scale)
    out: dict[str, Any] = {"probe_us_at_start": round(cpu_probe_us(), 2)}
    with tempfile.TemporaryDirectory(prefix="kraft-acl-bench-plugin-") as tmp:
        root = Path(tmp)
        serve = _serve(root)
        brokers: dict[str, kafka.Broker] = {}
        try:
            serve.start()
            _serve_acls(serve, tenant)
            out["authorize"] = plugin_jvm.round_trip_figures(root, serve, USER, quick)
            out["authorize_hit_us"] = plugin_jvm.hit_figures(root, serve, USER, quick)
            brokers = _start_brokers(root, serve)
            kafka.create_acls(brokers["standard"], tenant)
            spid = serve.pid

            def metadata(name: str, count: int) -> dict[str, Any]:
                return kafka.metadata_requests(brokers[name], USER, count, spid if name == "plugin" else None)

            tenant_runs = _side_by_side(brokers, 2, lambda n: metadata(n, 200 // scale))
            out["metadata_tenant"] = {"acls": len(tenant), **tenant_runs, "ratio_p50": _ratio(tenant_runs, "p50_ms")}
            _serve_acls(serve, extra)
            kafka.create_acls(brokers["standard"], extra)
            wide = _side_by_side(brokers, 2, lambda n: metadata(n, 100 // scale))
            out["metadata_kafka_20667"] = {
                "acls": len(tenant) + len(extra),
                **wide,
                "ratio_p50": _ratio(wide, "p50_ms"),
            }

            def produce(name: str) -> dict[str, Any]:
                pid = spid if name == "plugin" else None
                return kafka.produce(brokers[name], USER, f"{USER}.topic-0", 200_000 // scale, pid)

            produced = _side_by_side(brokers, 2, produce)
            out["produce"] = {**produced, "ratio_records_per_s": _ratio(produced, "records_per_s")}

            def small(name: str) -> dict[str, Any]:
                pid = spid if name == "plugin" else None
                return load.small_requests(brokers[name], USER, f"{USER}.topic-1", pid, seconds=5.0 if quick else 15.0)

            smalls = _side_by_side(brokers, 2, small)
            out["small_requests"] = {**smalls, "ratio_records_per_s": _ratio(smalls, "records_per_s")}
            out["invalidation_ms"] = plugin_jvm.invalidation_figures(root, serve, USER, ADMIN_TOKEN, quick)
            out["staleness_ms"] = plugin_jvm.staleness_figures(root, serve, USER, 4 if quick else 12)
            total = 100_000 // scale
            fill = shapes.filler(total - len(tenant) - len(extra))
            _serve_acls(serve, fill)
            kafka.create_acls(brokers["standard"], fill)
            out["startup"] = {"acls": total, **_startup(brokers, serve, 2)}
        finally:
            for broker in brokers.values():
                broker.stop()
            serve.stop()
    out["probe_us_at_end"] = round(cpu_probe_us(), 2)
    return out
