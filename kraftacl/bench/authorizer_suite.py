"""The `authorizer` benchmark suite: decision latency, the Kafka JMH shape, changes, index build and memory (issue #2).

Runs sequentially; each case builds its own data and drops it afterwards. The index build runs in a
fresh child process, so that its memory figure does not depend on what earlier cases freed.
"""

from __future__ import annotations

import gc
import itertools
import json
import time
from typing import Any

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import RequestContext, StandardAuthorizer
from kraftacl.authorizer.index import native_rows
from kraftacl.authorizer.index.acl_index import AclIndex
from kraftacl.authorizer.model.acls import AclOperation, ResourceType
from kraftacl.authorizer.state.memory import release_free_memory
from kraftacl.bench.authorizer_updates import (
    apply_latency,
    batch_per_acl,
    by_resource_type_jmh,
    owner_batches,
    update_benchmark,
)
from kraftacl.bench.datasets import jmh_set, mixed_requests, mixed_set
from kraftacl.bench.timing import cpu_probe_us, frozen_gc, in_child, mean_us, percentiles, progress
from kraftacl.harness.rss import rss_bytes


def _loaded(acls: Any) -> StandardAuthorizer:
    authorizer = StandardAuthorizer(AuthorizerConfig(super_users=frozenset({"User:admin"})))
    authorizer.load_snapshot(acls)
    authorizer.complete_initial_load()
    return authorizer


def authorize_latency(acl_count: int = 100_000, calls: int = 100_000) -> dict[str, Any]:
    """Per-call latency of one `authorize_one` at `acl_count` mixed ACLs, timer overhead included."""
    data = mixed_set(acl_count)
    authorizer = _loaded(data.acls)
    requests = [(RequestContext(p, h), op, t, n) for p, h, op, t, n in mixed_requests(data, calls)]
    decide = authorizer.authorize_one
    clock = time.perf_counter_ns
    samples = []
    allowed = 0
    with frozen_gc():
        for ctx, op, rtype, name in requests[:5000]:
            decide(ctx, op, rtype, name)
        for ctx, op, rtype, name in requests:
            start = clock()
            result = decide(ctx, op, rtype, name)
            samples.append(clock() - start)
            allowed += result == 0
    out = percentiles(samples)
    out.update(acls=acl_count, allowed_fraction=round(allowed / calls, 3))
    return out


def per_resource_figures(acl_count: int = 100_000) -> dict[str, Any]:
    """authorized_operations per TOPIC resource and authorize_by_resource_type, at `acl_count` mixed ACLs."""
    data = mixed_set(acl_count)
    authorizer = _loaded(data.acls)
    reqs = mixed_requests(data, 2000, seed=11)
    topics = [(RequestContext(p, h), n) for p, h, _, t, n in reqs if t == ResourceType.TOPIC][:1000]
    ctxs = [RequestContext(p, h) for p, h, *_ in reqs][:1000]
    with frozen_gc():
        op_args = itertools.cycle([(ctx, ResourceType.TOPIC, name) for ctx, name in topics])
        ops = mean_us(lambda: authorizer.authorized_operations(*next(op_args)), 20_000)
        brt_ctx = itertools.cycle(ctxs)
        brt = mean_us(
            lambda: authorizer.authorize_by_resource_type(next(brt_ctx), AclOperation.WRITE, ResourceType.TOPIC),
            20_000,
        )
        # cold: nothing remembered yet (the memo the GROUP index's line shares, authorizer/decision/by_resource_type.py)
        cold = []
        for ctx in ctxs:
            authorizer.index.types[ResourceType.GROUP].memo.clear()  # type: ignore[union-attr]
            start = time.perf_counter_ns()
            authorizer.authorize_by_resource_type(ctx, AclOperation.READ, ResourceType.GROUP)
            cold.append(time.perf_counter_ns() - start)
    return {
        "authorized_operations_us": ops,
        "by_resource_type_us": brt,
        "by_resource_type_cold_us": percentiles(cold)["mean_us"],
    }


def jmh_sets(sizes: tuple[int, ...] = (10_000, 50_000, 200_000), cycles: int = 200) -> dict[str, Any]:
    """Kafka's JMH sets at each size, built once: `testAuthorizer` (WRITE on TOPIC foo-bar35_resource-95 as
    test-user from 127.0.0.1), then `testAuthorizeByResourceType` warm and after changes, then one-ACL
    changes of test-user (authorizer_updates.py)."""
    decisions: dict[str, Any] = {}
    by_type: dict[str, dict[str, Any]] = {}
    updates: dict[str, Any] = {}
    ctx = RequestContext("User:test-user", "127.0.0.1")
    for size in sizes:
        acls = jmh_set(size, acl_count=10, deny_percentage=20)
        authorizer = _loaded(acls)
        with frozen_gc():
            decisions[str(size)] = mean_us(
                lambda a=authorizer: a.authorize_one(
                    ctx,
                    AclOperation.WRITE,
                    ResourceType.TOPIC,  # type: ignore[misc]
                    "foo-bar35_resource-95",
                ),
                200_000,
            )
        decisions[f"{size}_acls"] = len(acls)
        del acls
        for key, value in by_resource_type_jmh(authorizer, cycles).items():
            by_type.setdefault(key.removesuffix("_us"), {})[str(size)] = value
        updates[str(size)] = apply_latency(authorizer, owner_batches(cycles))
        updates[str(size)]["batch_1000"] = batch_per_acl(authorizer)
        del authorizer
        gc.collect()
    return {"jmh_test_authorizer_us": decisions, "by_resource_type_jmh_us": by_type, "update_us": {"jmh": updates}}


def index_build(count: int = 1_000_000) -> dict[str, Any]:
    """Build time and resident bytes per ACL for `count` ACLs with unique names (everything the index holds)."""
    gc.collect()
    before = rss_bytes()
    acls = mixed_set(count, principals=5000, seed=3, keep_names=False).acls
    gc.disable()
    try:
        start = time.perf_counter()
        index = AclIndex.build(acls)
        seconds = time.perf_counter() - start
    finally:
        gc.enable()
    del acls
    gc.collect()
    release_free_memory()  # as a node does once its initial load is done
    after = rss_bytes()
    result = {
        "index_build_1m_s": round(seconds, 2),
        "bytes_per_acl_1m": round((after - before) / len(index)),
        "acls": len(index),
    }
    del index
    return result


def _index_build_child(count: int) -> None:
    """Child process: `index_build` in a fresh interpreter, printed as JSON (its RSS growth is its own)."""
    print(json.dumps(index_build(count)))


def run(quick: bool = False) -> dict[str, Any]:
    """The whole suite as one JSON-able object (`quick` shrinks every size for a smoke run)."""
    scale = 10 if quick else 1
    out: dict[str, Any] = {"suite": "authorizer", "cpu_probe_us": round(cpu_probe_us(), 2)}
    out["bulk_rows"] = native_rows.BULK_ROWS  # "native": the index build's compiled loop is in use
    progress(f"authorizer: authorize latency on {100_000 // scale} ACLs")
    out["authorize_100k"] = authorize_latency(100_000 // scale, 100_000 // scale)
    progress("authorizer: per-resource figures")
    out.update(per_resource_figures(100_000 // scale))
    progress("authorizer: Kafka's JMH sets (testAuthorizer, by-resource-type, one-ACL changes)")
    out.update(jmh_sets((1000, 5000) if quick else (10_000, 50_000, 200_000)))
    progress("authorizer: Kafka's StandardAuthorizerUpdateBenchmark shape")
    counts = (25_000, 50_000, 75_000, 100_000)
    out["update_us"]["update_benchmark"] = update_benchmark(tuple(count // scale for count in counts))
    out["update_us"]["tail_replay"] = in_child("authorizer_updates", f"_tail_replay_child({200_000 // scale})")
    out.update(in_child("authorizer_suite", f"_index_build_child({1_000_000 // scale})"))
    return out
