"""The `pipeline` benchmark suite: fold of a large log and the permissions report, each in Spark local mode on
one and on two cores (`local[1]`, `local[2]`), next to the single-process equivalent where there is one.

Each Spark run is its own driver process (`python -m kraftacl.pipeline.bench`, a fresh JVM), timed from inside once the
session is up; the CPU probe is read around it. Data is built in a temporary directory and removed afterwards.
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kraftacl.authorizer.decision.standard import RequestContext
from kraftacl.authorizer.model.acls import AclOperation, ResourceType
from kraftacl.authorizer.model.operations import SUPPORTED_OPERATIONS
from kraftacl.authorizer.state.node import AclNode
from kraftacl.bench.log_suite import replay_rate
from kraftacl.bench.timing import cpu_probe_us
from kraftacl.harness.acl_data import bench_acl
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord
from kraftacl.metadata_log.uuids import new_uuid

MASTERS = ("local[1]", "local[2]")


def _load() -> float:
    return os.getloadavg()[0]


def _child(*args: str) -> dict[str, Any]:
    """One timed run in a fresh driver process, with the probe and the load average around it."""
    before, load = cpu_probe_us(2000), _load()
    done = subprocess.run(
        [sys.executable, "-m", "kraftacl.pipeline.bench", *args], capture_output=True, text=True, timeout=7200
    )
    if done.returncode != 0:
        raise RuntimeError(f"pipeline.bench {args[0]} failed: {done.stderr.strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["probe_us"] = round((before + cpu_probe_us(2000)) / 2, 2)
    result["load_avg_1m"] = round((load + _load()) / 2, 2)
    return result


def write_log(directory: Path, records: int, removes: float, seed: int = 11) -> None:
    """`records` records in batches of 1000: adds of distinct ACLs and removes of live ones, written as they go.

    Unlike `harness.acl_data.record_batches` (which builds every batch first), the batches stream to the log and a
    removal swaps the chosen id with the last one: a 10M-record log needs both.
    """
    rng = random.Random(seed)
    live: list[str] = []
    with FileLog(directory) as log:
        batch: list[MetadataRecord] = []
        for n in range(records):
            if live and rng.random() < removes:
                chosen = rng.randrange(len(live))
                live[chosen], live[-1] = live[-1], live[chosen]
                batch.append(RemoveAccessControlEntryRecord(live.pop()))
            else:
                acl_id = new_uuid()
                live.append(acl_id)
                batch.append(bench_acl(acl_id, n))
            if len(batch) == 1000:
                log.append(batch)
                batch = []
        if batch:
            log.append(batch)


def fold_case(tmp: Path, records: int) -> dict[str, Any]:
    """fold of a `records`-record log (45% removals) vs a single-process replay of the same log."""
    log_dir = tmp / "fold-log"
    write_log(log_dir, records, removes=0.45)
    with FileLog(log_dir, read_only=True) as log:
        single = replay_rate(log, records)
    out: dict[str, Any] = {"records": records, "single_process_replay": single}
    for master in MASTERS:
        run = _child("fold", str(log_dir), master, str(tmp / "fold.checkpoint"))
        run["records_per_s"] = round(records / run["seconds"])
        out[master] = run
    out["speedup_2_cores"] = round(out["local[1]"]["seconds"] / out["local[2]"]["seconds"], 2)
    return out


def permissions_data(
    tmp: Path, resources: int, principals: int, acls: int, seed: int = 3
) -> tuple[Path, list[tuple[int, str]], list[str]]:
    """A team-shaped ACL set: literal ACLs on a team's topics and groups, team and app PREFIXED ACLs, 5% DENY,
    10% host-specific, a few `*` ACLs and `User:*` ACLs; one team per 100 resources."""
    rng = random.Random(seed)
    teams = max(resources // 100, 1)
    names = [
        (int(rng.choice((ResourceType.TOPIC,) * 4 + (ResourceType.GROUP,))), f"team{i % teams}.app{i % 7}.stream-{i}")
        for i in range(resources)
    ]
    people = [f"User:u{i}" for i in range(principals)]
    seen: set[tuple[Any, ...]] = set()
    with FileLog(tmp / "perm-log") as log:
        batch: list[MetadataRecord] = []
        while len(seen) < acls:
            rtype, name = rng.choice(names)
            roll = rng.random()
            pattern = 3
            if roll < 0.15:
                pattern, name = 4, name.split(".")[0] + "."
            elif roll < 0.20:
                pattern, name = 4, ".".join(name.split(".")[:2]) + "."
            elif roll < 0.2002:
                name = "*"
            principal = "User:*" if rng.random() < 0.001 and name != "*" else rng.choice(people)
            host = "*" if rng.random() < 0.9 else f"10.0.{rng.randrange(256)}.{rng.randrange(256)}"
            op = rng.choice(SUPPORTED_OPERATIONS[ResourceType(rtype)])
            acl = (rtype, name, pattern, principal, host, int(op), 2 if rng.random() < 0.05 else 3)
            if acl in seen:
                continue
            seen.add(acl)
            batch.append(AccessControlEntryRecord(new_uuid(), *acl))
            if len(batch) == 1000:
                log.append(batch)
                batch = []
        if batch:
            log.append(batch)
    with (tmp / "resources.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["resource_type", "resource_name"])
        writer.writerows((ResourceType(t).name, n) for t, n in names)
    (tmp / "principals.txt").write_text("\n".join(people) + "\n")
    return tmp / "perm-log", names, people


def single_process_sample(
    log_dir: Path, names: list[tuple[int, str]], people: list[str], sample: int
) -> dict[str, Any]:
    """StandardAuthorizer.authorize_one on a random sample of (principal, resource, operation): its rate, and the
    time the whole report's decisions would take at that rate (there is no single-process report)."""
    rng = random.Random(5)
    node = AclNode(FileLog(log_dir, read_only=True))
    node.start()
    requests = []
    for _ in range(sample):
        rtype, name = rng.choice(names)
        ops = SUPPORTED_OPERATIONS[ResourceType(rtype)]
        requests.append((RequestContext(rng.choice(people), "10.1.1.1"), rng.choice(ops), ResourceType(rtype), name))
    authorize = node.authorizer.authorize_one
    start = time.perf_counter()
    for ctx, op, rtype, name in requests:
        authorize(ctx, AclOperation(op), rtype, name)
    seconds = time.perf_counter() - start
    node.close()
    triples = len(people) * sum(len(SUPPORTED_OPERATIONS[ResourceType(t)]) for t, _ in names)
    rate = sample / seconds
    return {"decisions_per_s": round(rate), "triples": triples, "extrapolated_seconds": round(triples / rate)}


def permissions_case(tmp: Path, resources: int, principals: int, acls: int) -> dict[str, Any]:
    """The permissions report over `resources` x `principals` with `acls` ACLs, on 1 and 2 cores."""
    log_dir, names, people = permissions_data(tmp, resources, principals, acls)
    out: dict[str, Any] = {"resources": resources, "principals": principals, "acls": acls}
    out["single_process_sample"] = single_process_sample(log_dir, names, people, 200_000)
    for master in MASTERS:
        run = _child(
            "permissions",
            str(log_dir),
            str(tmp / "resources.csv"),
            str(tmp / "principals.txt"),
            master,
            str(tmp / "permissions.parquet"),
        )
        run["rows_per_s"] = round(run["rows"] / run["seconds"])
        out[master] = run
    out["speedup_2_cores"] = round(out["local[1]"]["seconds"] / out["local[2]"]["seconds"], 2)
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """The whole suite; `quick` is 10x smaller (1M records; 10k resources x 500 principals x 10k ACLs)."""
    scale = 10 if quick else 1
    out: dict[str, Any] = {"suite": "pipeline", "probe_us": round(cpu_probe_us(), 2), "load_avg_1m": round(_load(), 2)}
    with tempfile.TemporaryDirectory(prefix="kraft-acl-bench-pipeline-") as tmp:
        out["fold"] = fold_case(Path(tmp), 10_000_000 // scale)
        out["permissions"] = permissions_case(Path(tmp), 100_000 // scale, 5000 // scale, 100_000 // scale)
    return out
