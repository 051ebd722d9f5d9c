"""serve's Prometheus metrics (prometheus-client, a private registry): KIP-801's AclCount as `acls_total_count`,
decisions by result and rule, decision latency, replay progress and readiness.

Counters are incremented on the event loop thread; gauges read the node's state when scraped.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from authorizer.standard import RULE_KIND_OF

CONTENT_TYPE = CONTENT_TYPE_LATEST.encode()
# authorize round trips inside the process: 2 µs to 1 s
LATENCY_BUCKETS = (2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 5e-3, 2e-2, 0.1, 1.0)


class ServeMetrics:
    """Every metric of one serve process."""

    def __init__(
        self,
        acl_count: Callable[[], float],
        last_offset: Callable[[], float],
        lag: Callable[[], float],
        ready: Callable[[], float],
        log_error: Callable[[], float],
        diverged: Callable[[], float],
    ) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        Gauge(
            "acls_total_count", "KIP-801 AclCount: ACLs in the state the authorizer decides with", registry=r
        ).set_function(acl_count)
        Gauge("kraft_acl_last_applied_offset", "Last metadata log offset applied", registry=r).set_function(last_offset)
        Gauge(
            "kraft_acl_replay_lag_records",
            "Records between the log's high-water mark and the state (NaN while the log is unreachable)",
            registry=r,
        ).set_function(lag)
        Gauge(
            "kraft_acl_ready", "1 while ready: the initial load (KIP-801) completed and the log is followed", registry=r
        ).set_function(ready)
        Gauge("kraft_acl_log_unreachable", "1 while the tailer cannot read the log", registry=r).set_function(log_error)
        Gauge(
            "kraft_acl_log_diverged",
            "1 once the log no longer holds what was applied: the node stopped following it for good",
            registry=r,
        ).set_function(diverged)
        self.decisions = Counter(
            "kraft_acl_decisions",
            "Decisions by result and the kind of rule that decided",
            ["result", "rule"],
            registry=r,
        )
        self.latency = Histogram(
            "kraft_acl_authorize_seconds",
            "Time to decide one authorize call (all its actions), inside the process",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.requests = Counter(
            "kraft_acl_http_requests", "HTTP requests by endpoint and status", ["endpoint", "status"], registry=r
        )
        self.not_ready = Counter("kraft_acl_not_ready", "Calls answered AUTHORIZER_NOT_READY", registry=r)
        # one child per (result, rule code), so counting a batch costs a list index per distinct code
        self._by_code = [
            self.decisions.labels("ALLOWED" if code in (1, 3, 4) else "DENIED", kind)
            for code, kind in enumerate(RULE_KIND_OF)
        ]

    def count_codes(self, codes: list[int]) -> None:
        """Count one call's decisions (BY_* codes of StandardAuthorizer.authorize_at)."""
        if len(codes) == 1:
            self._by_code[codes[0]].inc()
            return
        tally = [0] * len(self._by_code)
        for code in codes:
            tally[code] += 1
        for code, n in enumerate(tally):
            if n:
                self._by_code[code].inc(n)

    def exposition(self) -> bytes:
        """The text format a Prometheus server scrapes."""
        return generate_latest(self.registry)
