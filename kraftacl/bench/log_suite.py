"""The `log` benchmark suite: replay rate, cold start from a snapshot, append latency; file log and Kafka.

Each case builds its own data in a temporary directory (or Kafka topic) and removes it afterwards.
Cold starts run in a child process so their peak memory is their own.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kraftacl.authorizer.state.node import AclNode
from kraftacl.bench.timing import at_reference, compiled_loops, cpu_probe_us, in_child, percentiles, probed, progress
from kraftacl.harness.acl_data import record_batches
from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord
from kraftacl.metadata_log.uuids import new_uuid


def _fill(log: LogBackend, batches: list[list[MetadataRecord]]) -> None:
    for batch in batches:
        log.append(batch)


def replay_rate(log: LogBackend, records: int) -> dict[str, Any]:
    """A fresh node replays the whole log to ready: decode, delta, image and index.

    The CPU probe is read just before and just after (this host's speed around the run; their mean
    is reported) and the rate is also given scaled to the reference machine the targets are stated for.
    """
    node = AclNode(log)
    _, seconds, probe = probed(node.start)
    return {
        "records": records,
        "seconds": round(seconds, 2),
        "records_per_s": round(records / seconds),
        "probe_us": round(probe, 2),
        "records_per_s_at_reference": round(records / at_reference(seconds, probe)),
        "acls": node.authorizer.acl_count(),
    }


def _replay_child(log_dir: str, records: int) -> None:
    """Child process: replay the file log in `log_dir` to ready and print the figures."""
    with FileLog(log_dir, read_only=True) as log:
        print(json.dumps(replay_rate(log, records)))


def append_latency(log: LogBackend, count: int = 300) -> dict[str, Any]:
    """One-record batches appended durably (fsync for the file log, a committed transaction for Kafka)."""
    samples = []
    for n in range(count):
        record = AccessControlEntryRecord(new_uuid(), 2, f"bench-{uuid.uuid4().hex}-{n}", 3, "User:bench", "*", 3, 3)
        start = time.perf_counter_ns()
        log.append([record])
        samples.append(time.perf_counter_ns() - start)
    out = percentiles(samples)
    return {"p50_ms": round(out["p50_us"] / 1000, 3), "p99_ms": round(out["p99_us"] / 1000, 3), "appends": count}


def _cold_start_child(log_dir: str) -> None:
    """Child process: start a node from the snapshot in `log_dir` and print timing and peak memory."""
    import gc

    gc.disable()

    def start() -> AclNode:
        node = AclNode(FileLog(log_dir, read_only=True), snapshot_dir=Path(log_dir))
        node.start()
        return node

    node, seconds, probe = probed(start)
    gc.enable()
    gc.collect()
    memory = _memory_mb()
    print(
        json.dumps(
            {
                "seconds_to_ready": round(seconds, 2),
                "probe_us": round(probe, 2),
                "seconds_at_reference": round(at_reference(seconds, probe), 2),
                "acls": node.authorizer.acl_count(),
                "peak_rss_mb": memory["VmHWM"],
                "steady_rss_mb": memory["VmRSS"],
                "peak_over_steady": round(memory["VmHWM"] / memory["VmRSS"], 2),
                "snapshot": str(node.loaded_snapshot),
            }
        )
    )


def _memory_mb() -> dict[str, int]:
    """This process's peak (VmHWM) and current (VmRSS) resident memory, in MiB.

    Read from /proc rather than getrusage: Linux carries ru_maxrss across exec, so a child started
    by a large parent would report the parent's peak.
    """
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            fields[key] = round(int(value.split()[0]) / 1024)
    return fields


def _repeated(call: str, key: str, scaled: str, runs: int) -> dict[str, Any]:
    """`runs` fresh processes of `call`: the median run's figures, every run's `key` (ascending), and
    the median of every run's `scaled` figure (each run scaled by its own probe)."""
    results = sorted((in_child("log_suite", call) for _ in range(runs)), key=lambda result: float(result[key]))
    median = dict(results[len(results) // 2])
    median[f"runs_{key}"] = [result[key] for result in results]
    median[f"median_{scaled}"] = sorted(result[scaled] for result in results)[len(results) // 2]
    return median


def cold_start(log_dir: Path, runs: int = 5) -> dict[str, Any]:
    """Time new processes from nothing to ready on a log whose newest snapshot holds the state."""
    return _repeated(f"_cold_start_child({str(log_dir)!r})", "seconds_to_ready", "seconds_at_reference", runs)


def _prepare(tmp: str, records: int) -> None:
    """Child process: write the replay log (20% removals) and the cold-start log with its snapshot."""
    with FileLog(Path(tmp) / "mixed") as log:
        _fill(log, record_batches(records, removes=0.2))
    adds = Path(tmp) / "adds"
    with FileLog(adds) as log:
        _fill(log, record_batches(records, removes=0.0, seed=9))
    node = AclNode(FileLog(adds), snapshot_dir=adds)
    node.start()
    node.take_snapshot()
    node.close()
    print("{}")


def file_suite(records: int, runs: int = 5) -> dict[str, Any]:
    """File-log figures: replay (20% removals), append latency, cold start from a snapshot of `records` ACLs.

    The data is written by a child process; replay and cold start each run `runs` times, each in a
    fresh process as a restarting node would, and the median run is reported with every run's time.
    """
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        in_child("log_suite", f"_prepare({tmp!r}, {records})")
        os.sync()  # let the writeback of the files just written finish: a restarting node reads data at rest
        replay = f"_replay_child({str(Path(tmp) / 'mixed')!r}, {records})"
        out["replay_1m"] = _repeated(replay, "seconds", "records_per_s_at_reference", runs)
        with FileLog(Path(tmp) / "latency") as log:
            progress("log: append + fsync latency")
            out["append_fsync"] = append_latency(log)
        out["cold_start_snapshot_1m"] = cold_start(Path(tmp) / "adds", runs)
    return out


def kafka_suite(bootstrap: str, records: int) -> dict[str, Any]:
    """The same figures against a Kafka topic, plus a new node's catch-up from a snapshot plus a tail."""
    from kraftacl.metadata_log.backends.kafka_topic.log import KafkaLog, KafkaLogConfig

    topic = f"kraft-acl-bench-{uuid.uuid4().hex[:8]}"
    config = KafkaLogConfig(bootstrap, topic=topic, timeout_s=60)
    out: dict[str, Any] = {"topic": topic}
    with KafkaLog(config, writer=True) as writer:
        out["append_txn"] = append_latency(writer, 200)
        start = time.perf_counter()
        _fill(writer, record_batches(records, removes=0.2))
        out["write_records_per_s"] = round(records / (time.perf_counter() - start))
    with KafkaLog(config) as reader:
        out["replay_1m"] = replay_rate(reader, records + 200)
    with tempfile.TemporaryDirectory() as tmp, KafkaLog(config, writer=True) as writer:
        node = AclNode(writer, snapshot_dir=Path(tmp))
        node.start()
        node.take_snapshot()
        _fill(writer, record_batches(10_000, removes=0.0, seed=11, prefix="tail"))  # the tail after the snapshot
        with KafkaLog(config) as reader:
            fresh = AclNode(reader, snapshot_dir=Path(tmp))
            start = time.perf_counter()
            fresh.start()
            out["catch_up_snapshot_plus_10k_tail_s"] = round(time.perf_counter() - start, 2)
            out["catch_up_acls"] = fresh.authorizer.acl_count()
    return out


def run(quick: bool = False, kafka_bootstrap: str | None = None) -> dict[str, Any]:
    """The whole suite (`quick` uses 100k records instead of 1M)."""
    records = 100_000 if quick else 1_000_000
    out: dict[str, Any] = {"suite": "log", "cpu_probe_us": round(cpu_probe_us(), 2), "records": records}
    out.update(compiled_loops())  # every child process is checked to use the same (timing.in_child)
    out["file"] = file_suite(records, runs=3 if quick else 5)
    if kafka_bootstrap:
        progress(f"log: the Kafka topic suite on {kafka_bootstrap}")
        out["kafka"] = kafka_suite(kafka_bootstrap, records)
    return out
