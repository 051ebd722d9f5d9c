"""The `authorizer` suite's figures for changes (issue #19) and for by-resource-type on Kafka's JMH sets (issue #15).

Runs sequentially on the authorizer it is handed (or builds its own); not thread-safe.

Every change here is one batch of one ACL, as a controller writes them and KIP-801 applies them:
on the JMH sets, for `User:test-user`, the principal that owns every ACL there (2.4M at 200k
resources), a cycle adds one ACL of each kind (a LITERAL topic, a PREFIXED name under the shared
`foo-bar35_resource-` prefix, one more host on the `*` name, where test-user already has 20k)
and then removes them again, each in its own batch.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from kraftacl.authorizer.decision.standard import RequestContext, StandardAuthorizer
from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.image import AclsImage, Provenance
from kraftacl.authorizer.state.loader import AuthorizerPublisher, MetadataLoader
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.bench.datasets import jmh_set, update_benchmark_acls
from kraftacl.bench.timing import at_reference, frozen_gc, mean_us, percentiles, probed
from kraftacl.metadata_log.backends.memory import MemoryLog
from kraftacl.metadata_log.records import MetadataRecord, RemoveAccessControlEntryRecord
from kraftacl.metadata_log.uuids import new_uuid

OWNER = "User:test-user"
Batch = tuple[str, list[str], list[tuple[str, StandardAcl]]]  # (kind, removed ids, added (id, ACL) pairs)


def _owner_acl(name: str, pattern: PatternType = PatternType.LITERAL, host: str = "*") -> StandardAcl:
    return StandardAcl(ResourceType.TOPIC, name, pattern, OWNER, host, AclOperation.READ, AclPermissionType.ALLOW)


def owner_batches(cycles: int) -> list[Batch]:
    """One-ACL batches for test-user: per cycle, add one ACL of each kind, then remove each (six batches)."""
    out: list[Batch] = []
    for k in range(cycles):
        acls = {
            "literal": _owner_acl(f"new-topic-{k}"),
            "prefixed": _owner_acl(f"foo-bar35_resource-{k}x", PatternType.PREFIXED),
            "host on *": _owner_acl("*", host=f"10.9.{k // 250}.{k % 250}"),
        }
        out += [(f"add {kind}", [], [(f"u{k} {kind}", acl)]) for kind, acl in acls.items()]
        out += [(f"remove {kind}", [f"u{k} {kind}"], []) for kind in acls]
    return out


def _summary(samples: dict[str, list[int]], cpu: list[int]) -> dict[str, Any]:
    every = [sample for kind in samples.values() for sample in kind]
    out: dict[str, Any] = {key: value for key, value in percentiles(every).items() if key != "p999_us"}
    out["p50_us_by_kind"] = {kind: percentiles(values)["p50_us"] for kind, values in samples.items()}
    on_cpu = percentiles(cpu)
    out["cpu_p50_us"], out["cpu_p99_us"] = on_cpu["p50_us"], on_cpu["p99_us"]
    return out


def apply_latency(authorizer: StandardAuthorizer, batches: list[Batch]) -> dict[str, Any]:
    """p50/p99 (and per kind) of `apply_changes` for each one-batch change, GC enabled as a server runs it.

    Also the thread's CPU time per batch (`cpu_p50_us`, `cpu_p99_us`): on a shared host the wall-clock
    p99 is mostly the scheduler (a batch preempted for a 4 ms slice), which CPU time leaves out.
    """
    samples: dict[str, list[int]] = {}
    cpu: list[int] = []
    clock, cpu_clock = time.perf_counter_ns, time.thread_time_ns
    with frozen_gc():
        for kind, removed, added in batches:
            cpu_start = cpu_clock()
            start = clock()
            authorizer.apply_changes(removed, added)
            samples.setdefault(kind, []).append(clock() - start)
            cpu.append(cpu_clock() - cpu_start)
    return _summary(samples, cpu)


def batch_per_acl(authorizer: StandardAuthorizer, size: int = 1000) -> dict[str, float]:
    """Microseconds per ACL of one batch adding `size` ACLs of test-user (literal, prefixed and hosts on `*`
    in turn), then of one batch removing them: a batch costs in proportion to itself, not to the view."""
    kinds: list[Callable[[int], StandardAcl]] = [
        lambda k: _owner_acl(f"batch-topic-{k}"),
        lambda k: _owner_acl(f"foo-bar35_resource-{k}y", PatternType.PREFIXED),
        lambda k: _owner_acl("*", host=f"10.8.{k // 250}.{k % 250}"),
    ]
    added = [(f"b{k}", kinds[k % 3](k)) for k in range(size)]
    clock = time.perf_counter_ns
    with frozen_gc():
        start = clock()
        authorizer.apply_changes([], added)
        middle = clock()
        authorizer.apply_changes([acl_id for acl_id, _ in added], [])
        end = clock()
    return {
        "add_us_per_acl": round((middle - start) / size / 1000, 2),
        "remove_us_per_acl": round((end - middle) / size / 1000, 2),
    }


def by_resource_type_jmh(authorizer: StandardAuthorizer, cycles: int) -> dict[str, Any]:
    """Kafka's JMH testAuthorizeByResourceType (test-user from 127.0.0.2, READ on TOPIC): the first call after
    the load, warm calls, and the first call after each one-ACL change of test-user ("cold")."""
    ctx = RequestContext(OWNER, "127.0.0.2")

    def ask() -> object:
        return authorizer.authorize_by_resource_type(ctx, AclOperation.READ, ResourceType.TOPIC)

    clock = time.perf_counter_ns
    with frozen_gc():
        start = clock()
        answer = ask()
        first = clock() - start
        warm = mean_us(ask, 2000)
        cold: list[int] = []
        for _, removed, added in owner_batches(cycles):
            authorizer.apply_changes(removed, added)
            start = clock()
            ask()
            cold.append(clock() - start)
    figures = percentiles(cold)
    return {
        "answer": getattr(answer, "name", answer),
        "first_us": round(first / 1000, 1),
        "warm_us": warm,
        "cold_us": figures["p50_us"],
        "cold_p99_us": figures["p99_us"],
    }


def update_benchmark(counts: tuple[int, ...] = (25_000, 50_000, 75_000, 100_000), adds: int = 2000) -> dict[str, Any]:
    """Kafka's StandardAuthorizerUpdateBenchmark: `count` ACLs of its pool loaded, then the next ones added singly."""
    out: dict[str, Any] = {}
    for count in counts:
        pool = update_benchmark_acls(count + adds)
        authorizer = StandardAuthorizer()
        authorizer.load_snapshot(pool[:count])
        out[str(count)] = apply_latency(authorizer, [("add", [], [pair]) for pair in pool[count:]])
    return out


def tail_replay(resources: int = 200_000, batches: int = 10_000) -> dict[str, Any]:
    """A node holding the JMH set at `resources` (2.4M ACLs at 200k) replays a tail of single-record batches
    for test-user (half adds of new ACLs, half removals of its existing ones), publishing each batch on its
    own (every publish one index swap), as KIP-801 applies records as they arrive."""
    acls = jmh_set(resources)
    log = MemoryLog(log_start_offset=len(acls))
    loader = MetadataLoader(log, [AuthorizerPublisher(StandardAuthorizer())])
    columns = list(AclsImage(OverlayMap(dict(acls)), Provenance()).chunks())  # as a snapshot holds them
    loader.load_snapshot((), Provenance(len(acls) - 1, 0, 0), columns=columns)
    del columns
    loader.complete_initial_load()
    for batch in _tail(acls, batches):
        log.append(batch)
    del acls
    with frozen_gc():
        applied, seconds, probe = probed(lambda: loader.catch_up(publish_every_records=1))
    assert applied == batches, f"applied {applied} of {batches} records"
    return {
        "acls": len(loader.image),
        "batches": batches,
        "seconds": round(seconds, 3),
        "batches_per_s": round(batches / seconds),
        "probe_us": round(probe, 2),
        "seconds_at_reference": round(at_reference(seconds, probe), 3),
    }


def _tail(acls: list[tuple[str, StandardAcl]], batches: int) -> list[list[MetadataRecord]]:
    """Single-record batches: adds of new test-user ACLs alternating with removals of existing ones."""
    rng = random.Random(5)
    owned = [acl_id for acl_id, acl in acls if acl.principal == OWNER]
    gone = rng.sample(owned, batches // 2 + 1)
    make: list[Callable[[int], MetadataRecord]] = [
        lambda n: record_from_acl(new_uuid(), _owner_acl(f"tail-topic-{n}")),
        lambda n: RemoveAccessControlEntryRecord(gone[n]),
    ]
    return [[make[n % 2](n // 2)] for n in range(batches)]


def _tail_replay_child(resources: int) -> None:
    """Child process: `tail_replay` in a fresh interpreter, printed as JSON (its memory is its own)."""
    import json

    print(json.dumps(tail_replay(resources)))
