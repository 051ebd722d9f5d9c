"""serve's Prometheus metrics (prometheus-client, a private registry): KIP-801's AclCount as `acls_total_count`,
decisions by result and rule, decision latency, replay progress and readiness.

The per-request figures (decisions, latency, requests, not-ready answers) are plain integers bumped on the
event loop thread and turned into metric families by a custom collector when scraped: a prometheus-client
Counter or Histogram takes a lock on every update, which cost 10 µs of a 43 µs authorize call. Gauges read
the node's state when scraped.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from kraftacl.authorizer.decision.standard import RULE_KIND_OF
from kraftacl.server.log_queue import dropped_records

if TYPE_CHECKING:
    from kraftacl.server.connections import Connections
    from kraftacl.server.decision_log import DecisionLog

CONTENT_TYPE = CONTENT_TYPE_LATEST.encode()
# authorize round trips inside the process: 2 µs to 1 s
LATENCY_BUCKETS = (2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 5e-3, 2e-2, 0.1, 1.0)
_ALLOWED_CODES = (1, 3, 4)


class RequestFigures:
    """The per-request counts and the latency histogram, as plain numbers; `collect` is the scrape.

    Updated only on the event loop thread; a scrape from there reads a consistent set, and a scrape from
    another thread at worst sees a count one call behind another.
    """

    def __init__(self) -> None:
        self.by_code = [0] * len(RULE_KIND_OF)  # decisions per BY_* code of StandardAuthorizer
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)  # the last one is +Inf
        self.latency_sum = 0.0
        self.requests: dict[tuple[str, int], int] = {}
        self.not_ready = 0
        self.refused: dict[tuple[str, str], int] = {}  # (listener, reason) -> requests refused for a connection limit
        self.heavy_reads = {"reader": 0, "serve": 0}  # heavy reads with a reader process, by who answered them
        self.audit_skipped = 0  # audit lines of callers asking about themselves beyond their budget (not logged)

    def observe(self, seconds: float) -> None:
        """One authorize call's decision time."""
        self.buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.latency_sum += seconds

    def count_codes(self, codes: list[int]) -> None:
        """Count one call's decisions (BY_* codes of StandardAuthorizer.authorize_at)."""
        by_code = self.by_code
        for code in codes:
            by_code[code] += 1

    def count_request(self, endpoint: str, status: int) -> None:
        """One HTTP answer."""
        key = (endpoint, status)
        self.requests[key] = self.requests.get(key, 0) + 1

    def count_refused(self, listener: str, reason: str) -> None:
        """A connection refused at its first request (the places kept for brokers)."""
        key = (listener, reason)
        self.refused[key] = self.refused.get(key, 0) + 1

    def collect(self) -> Iterator[Metric]:
        """The metric families, in prometheus-client's custom-collector protocol."""
        decisions = CounterMetricFamily(
            "kraft_acl_decisions", "Decisions by result and the kind of rule that decided", labels=["result", "rule"]
        )
        for code, n in enumerate(self.by_code):
            result = "ALLOWED" if code in _ALLOWED_CODES else "DENIED"
            decisions.add_metric([result, RULE_KIND_OF[code]], n)
        yield decisions
        cumulative, buckets = 0, []
        for bound, n in zip((*map(str, LATENCY_BUCKETS), "+Inf"), self.buckets, strict=True):
            cumulative += n
            buckets.append((bound, cumulative))
        yield HistogramMetricFamily(
            "kraft_acl_authorize_seconds",
            "Time to decide one authorize call (all its actions), inside the process",
            buckets=buckets,
            sum_value=self.latency_sum,
        )
        requests = CounterMetricFamily(
            "kraft_acl_http_requests", "HTTP requests by endpoint and status", labels=["endpoint", "status"]
        )
        for (endpoint, status), n in sorted(self.requests.items()):
            requests.add_metric([endpoint, str(status)], n)
        yield requests
        yield CounterMetricFamily("kraft_acl_not_ready", "Calls answered AUTHORIZER_NOT_READY", value=self.not_ready)
        yield CounterMetricFamily(
            "kraft_acl_audit_lines_skipped",
            "Audit lines of callers asking about themselves (not brokers or super users) beyond their budget of "
            "decision.log.self.query.rate lines per second: counted, not logged",
            value=self.audit_skipped,
        )
        heavy = CounterMetricFamily(
            "kraft_acl_heavy_reads",
            "Heavy reads (describe, image, history, large explains) of a serve with a reader process, by who answered",
            labels=["by"],
        )
        for by, n in self.heavy_reads.items():
            heavy.add_metric([by], n)
        yield heavy


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
        writable: Callable[[], float],
        connections: Callable[[], Connections],
        decision_log: Callable[[], DecisionLog | None],
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
        Gauge(
            "kraft_acl_log_writable", "1 while the controller can write its log (0 after a failed write)", registry=r
        ).set_function(writable)
        self.figures = RequestFigures()
        r.register(self.figures)
        r.register(_NetworkReadings(connections, decision_log, self.figures))

    def exposition(self) -> bytes:
        """The text format a Prometheus server scrapes."""
        return generate_latest(self.registry)


class _NetworkReadings:
    """Connections, request memory and the decision log's counts, read when scraped (a custom collector)."""

    def __init__(
        self,
        connections: Callable[[], Connections],
        decision_log: Callable[[], DecisionLog | None],
        figures: RequestFigures,
    ) -> None:
        self.connections = connections
        self.decision_log = decision_log
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        """The metric families."""
        conns = self.connections()
        open_ = GaugeMetricFamily("kraft_acl_connections", "Open connections per listener", labels=["listener"])
        for listener, n in sorted(conns.per_listener.items()):
            open_.add_metric([listener], n)
        yield open_
        refused = CounterMetricFamily(
            "kraft_acl_connections_refused",
            "Connections refused for a limit (max.connections, a listener's, a client address's, the places kept "
            "for brokers)",
            labels=["listener", "reason"],
        )
        for (listener, reason), n in sorted({**conns.refused, **self.figures.refused}.items()):
            refused.add_metric([listener, reason], n)
        yield refused
        yield GaugeMetricFamily(
            "kraft_acl_request_bytes", "Request-body bytes held (queued.max.request.bytes)", value=conns.memory.held
        )
        yield CounterMetricFamily(
            "kraft_acl_log_records_dropped",
            "Log records dropped because stderr was not read fast enough (server.log_queue)",
            value=dropped_records(),
        )
        log = self.decision_log()
        if log is not None:
            lines = CounterMetricFamily("kraft_acl_decision_log_lines", "Decision log lines by fate", labels=["fate"])
            for fate, n in (("written", log.written), ("dropped", log.dropped), ("skipped", log.skipped)):
                lines.add_metric([fate], n)
            yield lines
