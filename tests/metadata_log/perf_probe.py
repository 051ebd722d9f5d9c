"""Throughput and latency probes of the metadata log, returning plain JSON-able dicts (for `kraft-acl bench`).

Each function builds its own data (and temporary directory unless given one) and shares no state:
safe to call from any thread, though timings are only meaningful on an otherwise idle machine.
Not collected by pytest (no `test_` prefix). Run `python -m tests.metadata_log.perf_probe [--quick]`.

Throughputs are the best of a few repeats (the least disturbed by other processes); each dict also
carries the CPU time, which is less sensitive to a busy machine than the wall clock.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kraftacl.metadata_log.backends.file.format import encode_frame, encode_segment_header
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec.avro import CURRENT_SCHEMA, DEFAULT_CODEC, encode
from tests.metadata_log.factories import acl_batch


def _best(repeats: int, fn: Any) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds) of `repeats` calls of `fn`."""
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def measure_codec(n: int = 200_000, batch_size: int = 1000, repeats: int = 5) -> dict[str, Any]:
    """Encode and decode throughput (records/s) over batches of `batch_size` ACL records."""
    batches = [acl_batch(batch_size, seed=i) for i in range(max(1, n // batch_size))]
    payloads = [encode(b) for b in batches]
    records = len(batches) * batch_size
    decode = DEFAULT_CODEC.decode_records

    def encode_all() -> None:
        for b in batches:
            encode(b)

    def decode_all() -> None:  # results dropped at once, as a replay does (no GC of a growing heap)
        for p in payloads:
            decode(p, base_offset=0)

    enc_wall, enc_cpu = _best(repeats, encode_all)
    dec_wall, dec_cpu = _best(repeats, decode_all)
    return {
        "records": records,
        "batch_size": batch_size,
        "payload_bytes_per_record": round(sum(map(len, payloads)) / records, 1),
        "encode_records_per_s": round(records / enc_wall),
        "decode_records_per_s": round(records / dec_wall),
        "encode_records_per_cpu_s": round(records / enc_cpu) if enc_cpu else None,
        "decode_records_per_cpu_s": round(records / dec_cpu) if dec_cpu else None,
    }


measure_decode = measure_codec


def measure_append_latency(n: int = 1000, directory: str | None = None) -> dict[str, Any]:
    """Latency of `FileLog.append` of a one-record batch, fsync included (ms)."""
    with tempfile.TemporaryDirectory(dir=directory) as tmp, FileLog(Path(tmp) / "log") as log:
        records = acl_batch(n)
        log.append(records[:1])  # the first append creates the segment (and fsyncs the directory)
        latencies = []
        for record in records:
            start = time.perf_counter()
            log.append([record])
            latencies.append((time.perf_counter() - start) * 1000)
    latencies.sort()
    return {
        "appends": n,
        "p50_ms": round(latencies[len(latencies) // 2], 3),
        "p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 3),
        "max_ms": round(latencies[-1], 3),
        "mean_ms": round(statistics.fmean(latencies), 3),
    }


def _write_synthetic_log(path: Path, n: int, batch_size: int) -> None:
    """A valid one-segment log written frame by frame without fsync (fast to build for tiny batches)."""
    path.mkdir(parents=True)
    records = acl_batch(1000)
    with open(path / f"{0:020d}.log", "wb") as f:
        f.write(encode_segment_header(CURRENT_SCHEMA.json_text))
        for base in range(0, n, batch_size):
            batch = [records[(base + i) % 1000] for i in range(batch_size)]
            f.write(encode_frame(base, batch_size, 1, 0, encode(batch)))


def measure_file_replay(
    n: int = 1_000_000, batch_size: int = 1000, directory: str | None = None, synthetic: bool = False
) -> dict[str, Any]:
    """Build an `n`-record log, then time a fresh read-only open and a full read + decode.

    The log is built through `FileLog.append` (one fsync per batch), or, with `synthetic` (the
    default below 100 records per batch, where fsyncs would dominate the build), written directly
    in the same format. Reading is the same either way.
    """
    synthetic = synthetic or batch_size < 100
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        path = Path(tmp) / "log"
        start = time.perf_counter()
        if synthetic:
            _write_synthetic_log(path, n, batch_size)
        else:
            with FileLog(path) as writer:
                for i in range(max(1, n // batch_size)):
                    writer.append(acl_batch(batch_size, seed=i))
        build_s = time.perf_counter() - start
        start = time.perf_counter()
        log = FileLog(path, read_only=True)
        open_s = time.perf_counter() - start
        wall, cpu = time.perf_counter(), time.process_time()
        count = sum(len(b.records) for b in log.read(0))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        log.close()
        size = sum(p.stat().st_size for p in path.glob("*.log"))
    return {
        "records": count,
        "batch_size": batch_size,
        "log_bytes": size,
        "built_with": "frames" if synthetic else "FileLog.append",
        "build_s": round(build_s, 2),
        "open_scan_s": round(open_s, 3),
        "read_decode_s": round(wall, 3),
        "read_decode_records_per_s": round(count / wall),
        "read_decode_records_per_cpu_s": round(count / cpu) if cpu else None,
    }


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    report = {
        "cpu_count": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
        "codec": measure_codec(50_000 if quick else 200_000),
        "append_latency": measure_append_latency(200 if quick else 1000),
        "file_replay": measure_file_replay(100_000 if quick else 1_000_000),
        "file_replay_batches_of_10": measure_file_replay(100_000 if quick else 1_000_000, batch_size=10),
        "file_replay_batches_of_1": measure_file_replay(20_000 if quick else 200_000, batch_size=1),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
