"""`kraft-acl serve`'s configuration: a Kafka-style properties file parsed and validated, key by key.

`ServeConfig` and its parts are immutable values. Every bad value raises `ServeConfigError` with one
line naming the file, the key and the value; unknown keys are returned as warnings (with the known key they
are closest to: "did you mean"), fatal only for `kraft-acl serve --check-config`.
Keys and their meaning are listed in `KEYS` (docs/serve.md's table is generated from the same words): a key
added there is known, and offered as a suggestion, with nothing else to change.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kraftacl.authorizer.decision.config import (
    ALLOW_EVERYONE,
    EARLY_START_LISTENERS,
    SUPER_USERS,
    AuthorizerConfig,
    java_trim,
    load_properties,
    parse_super_users,
)
from kraftacl.authorizer.errors import ConfigError
from kraftacl.authorizer.model.hosts import java_host_address
from kraftacl.server.config_listeners import Listener, TlsConfig, host_addresses, parse_listeners
from kraftacl.server.config_reader import PropertyReader, ServeConfigError

__all__ = ["Listener", "NetworkLimits", "ServeConfig", "ServeConfigError", "TlsConfig", "load", "parse"]

ROLES = ("broker", "controller")
PUBLIC_ENDPOINTS = ("status", "metrics")
KAFKA_CLIENT_PREFIX = "metadata.log.kafka."
LOG_LEVELS = {"trace": 5, "debug": 10, "info": 20, "warn": 30, "error": 40}
MIB = 1024 * 1024

# key -> what it means (docs/serve.md "Configuration" documents these words)
KEYS: dict[str, str] = {
    "listeners": "named endpoints NAME://host:port, comma-separated (required); a host name must resolve within "
    "10 s at start",
    "listener.security.protocol.map": "NAME:PLAINTEXT|SSL per listener (default: SSL for a listener named SSL)",
    EARLY_START_LISTENERS: "listeners that accept connections before the initial load (KIP-801)",
    SUPER_USERS: "`;`-separated principals allowed everything, even before the initial load",
    ALLOW_EVERYONE: "allow when no ACL matches the resource (default false)",
    "node.id": "this node's id (default 1)",
    "process.roles": "broker (decide and tail) and/or controller (also accept ACL writes); default broker",
    "metadata.log.dir": "the embedded file log's directory (the default backend)",
    "metadata.log.bootstrap.servers": "use a Kafka topic as the log instead of metadata.log.dir",
    "metadata.log.topic": "the Kafka topic of the log (default kraft-acl-metadata)",
    "metadata.log.kafka.*": "librdkafka settings for the Kafka-backed log (security.protocol, sasl.*, ssl.*)",
    "metadata.log.replication.factor": "replicas of the log's topic when serve creates it (default -1: the brokers' "
    "default.replication.factor)",
    "metadata.log.min.insync.replicas": "min.insync.replicas of the log's topic when serve creates it (default: the "
    "brokers')",
    "controller.election.group": "the Kafka consumer group whose member holding the log's partition is the active "
    "controller (default `kraft-acl-controllers-<topic>`)",
    "controller.election.session.timeout.ms": "a silent active controller is replaced after this long (default 6000, "
    "the brokers' group.min.session.timeout.ms)",
    "controller.election.heartbeat.interval.ms": "how often a controller tells the group it lives (default 500)",
    "metadata.log.snapshot.dir": "where snapshots live (default: metadata.log.dir; none for a Kafka log)",
    "metadata.log.snapshot.max.records": "write a snapshot after this many records (default 100000)",
    "metadata.log.snapshot.max.bytes": "or after this many log bytes (default 20971520)",
    "metadata.log.snapshot.retain": "snapshots kept (default 3)",
    "metadata.log.poll.interval.ms": "how often the tailer looks for new records in the embedded log (default 100); "
    "on the Kafka topic it long-polls instead (a commit is applied about a round trip after it) and reads the log's "
    "end at least this often, and at least every 250 ms",
    "metadata.log.poll.on.request": "true: the tailer also looks for new records as each request arrives (default "
    "false; what serve's reader process does, between polls a minute apart, never long-polling the Kafka topic)",
    "auth.token.file": "bearer tokens: one `<principal> <token>` per line",
    "auth.anonymous.listeners": "listeners where a caller without credentials is User:ANONYMOUS (else 401)",
    "auth.public.endpoints": "endpoints callable without credentials: status, metrics (default none)",
    "broker.principals": "`;`-separated principals that may ask decisions on behalf of any principal",
    "ssl.certfile": "PEM certificate chain of this server (SSL listeners)",
    "ssl.keyfile": "PEM private key of this server (SSL listeners)",
    "ssl.cafile": "PEM CA bundle that client certificates must chain to (mutual TLS)",
    "ssl.client.auth": "required | requested | none (default required when ssl.cafile is set)",
    "listener.name.<name>.ssl.*": "the four ssl.* keys for one listener (the listener name in lower case, as Kafka "
    "writes it)",
    "decision.log.file": "write every decision as a JSON line to this file (default off)",
    "decision.log.max.bytes": "rotate the decision log at this size (default 104857600)",
    "decision.log.backups": "rotated decision logs kept (default 5)",
    "decision.log.self.query.rate": "decision lines per second for callers asking about themselves, not brokers "
    "(default 1000), and as many audit lines (with or without a decision log; a line of more than 1 KiB of names "
    "counts as one per KiB); the rest are counted, not written",
    "decision.log.max.pending.bytes": "decision lines waiting for the disk before new ones are counted and dropped "
    "(default 67108864)",
    "request.max.bytes": "largest request body accepted (default 16777216)",
    "import.max.bytes": "largest body of POST /v1/acls/import (default 268435456: about 1.5M ACLs)",
    "request.max.actions": "most actions in one authorize call (default 100000)",
    "self.query.max.actions": "most actions in one call of a caller asking about itself, not a broker (default 1000)",
    "explain.max.actions": "most actions in one authorize call with explain (default 10000: a rule walks every ACL "
    "that may apply, up to milliseconds per action)",
    "queued.max.request.bytes": "request bodies held at once over all connections (default 536870912); callers "
    "other than brokers and super users may hold three quarters of it",
    "max.connections": "open connections over all listeners (default 1000); early-start listeners are exempt",
    "max.connections.reserved.brokers": "of max.connections, kept for broker principals and super users (default "
    "max.connections / 10)",
    "max.connections.per.ip": "open connections from one client address over all listeners, early-start ones "
    "included, as Kafka counts them (default 2147483647: no limit; 0 only with overrides); one more is refused as "
    "at max.connections",
    "max.connections.per.ip.overrides": "per-address exceptions to max.connections.per.ip, as Kafka writes them: "
    "`host:count,...` (a host name counts for every address it resolves to at start; an IPv6 address as is: "
    "`::1:50`)",
    "listener.name.<name>.max.connections": "open connections of one listener (the listener name in lower case; "
    "default max.connections)",
    "max.in.flight.requests.per.connection": "pipelined requests one connection may have read and not yet been "
    "answered (default 16)",
    "connections.max.unsent.bytes": "answer bytes a client has not read yet before serve stops reading from it "
    "(default 1048576)",
    "min.offset.wait.max.ms": "longest a decision with min_offset waits for this serve to apply that offset "
    "(default 10000)",
    "connections.max.idle.ms": "close a keep-alive connection idle this long (default 600000)",
    "request.timeout.ms": "a request must arrive whole within this time, and a new connection must bring its first "
    "whole request within it (default 30000)",
    "shutdown.timeout.ms": "time given to in-flight requests on SIGTERM (default 5000)",
    "heavy.reads.process": "auto | on | off: answer describe, the ACL image, ACL history and large explains from a "
    "reader process (a "
    "second, broker-role serve on the same log, started by this one), so that their work never shares the interpreter "
    "that answers brokers' decisions (default auto: on once 10000 or more ACLs are loaded, or at a history call on a "
    "log of 10000 or more offsets)",
    "bulk.threads.nice": "how many nice steps below serve's other threads its bulk threads run (the writer, the "
    "tailer, the graveyard; Linux; 0-19, default 5): decisions get a CPU before bulk work",
    "log.format": "text | json (default text)",
    "log.level": "TRACE, DEBUG, INFO, WARN or ERROR (default INFO: Kafka's audit logger logs denials at INFO)",
}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Which log to follow: a directory (embedded) or a Kafka topic, plus the snapshot policy."""

    log_dir: Path | None
    bootstrap_servers: str | None
    topic: str | None
    kafka_client: Mapping[str, str]
    snapshot_dir: Path | None
    snapshot_max_records: int
    snapshot_max_bytes: int
    snapshot_retain: int
    poll_interval_s: float
    poll_on_request: bool
    replication_factor: int = -1
    min_insync_replicas: int | None = None
    election_group: str | None = None
    election_session_timeout_ms: int = 6000
    election_heartbeat_interval_ms: int = 500


@dataclass(frozen=True, slots=True)
class NetworkLimits:
    """Everything a caller can make serve hold or spend, and the deadlines (docs/serve.md "Running serve on a
    network")."""

    request_max_bytes: int
    import_max_bytes: int
    queued_max_request_bytes: int
    max_connections: int
    reserved_broker_connections: int
    max_in_flight: int
    max_unsent_bytes: int
    idle_timeout_s: float
    request_timeout_s: float
    request_max_actions: int
    self_query_max_actions: int
    explain_max_actions: int
    max_connections_per_ip: int = 2**31 - 1
    # client address in Kafka's form (`authorizer.model.hosts.java_host_address`) -> its own limit
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)

    def per_ip_limit(self, host: str) -> int:
        """The most connections a client at `host` (Kafka's form) may hold open."""
        return self.per_ip_overrides.get(host, self.max_connections_per_ip)

    @property
    def others_request_bytes(self) -> int:
        """The share of queued.max.request.bytes that callers other than brokers and super users may hold."""
        return self.queued_max_request_bytes * 3 // 4


@dataclass(frozen=True, slots=True)
class DecisionLogConfig:
    """The optional decision log: file, rotation, the self-query budget and the bound of lines waiting for disk."""

    path: Path
    max_bytes: int
    backups: int
    self_query_rate: int
    max_pending_bytes: int


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """Everything `kraft-acl serve` reads from its properties file."""

    path: Path
    authorizer: AuthorizerConfig
    listeners: tuple[Listener, ...]
    controller: bool
    log: LogConfig
    token_file: Path | None
    broker_principals: frozenset[str]
    public_endpoints: frozenset[str]
    decision_log: DecisionLogConfig | None
    limits: NetworkLimits
    min_offset_wait_s: float
    shutdown_timeout_s: float
    log_format: str
    log_level: int
    heavy_reads_process: str = "auto"  # auto | on | off (server.reader)
    bulk_threads_nice: int = 5  # bulk threads' nice steps below serve's others (metadata_log.pace)
    self_query_rate: int = 1000  # decision.log.self.query.rate: also the audit lines of callers asking about themselves
    warnings: tuple[str, ...] = field(default=())
    unknown_keys: tuple[str, ...] = field(default=())  # keys serve does not know (each has its warning)

    @property
    def trusted_principals(self) -> frozenset[str]:
        """Broker principals and super users: who may use the places and the shares kept for brokers."""
        return self.broker_principals | self.authorizer.super_users

    @property
    def writes_snapshots(self) -> bool:
        """True when this serve writes the log's snapshots: the controller of an embedded log (whose directory
        it owns), or any serve of a Kafka-backed log (each keeps its own snapshot directory)."""
        return (self.controller or self.log.bootstrap_servers is not None) and self.log.snapshot_dir is not None

    def listener_anonymous(self, name: str) -> bool:
        """True when callers without credentials on this listener are User:ANONYMOUS (auth.anonymous.listeners)."""
        return any(listener.name == name and listener.anonymous for listener in self.listeners)


def _principals(r: PropertyReader, key: str) -> frozenset[str]:
    try:
        return parse_super_users(r.get(key))
    except ConfigError as exc:
        raise r.error(key, r.get(key) or "", str(exc).split(": ", 1)[-1]) from exc


def _log(r: PropertyReader) -> LogConfig:
    log_dir = r.text("metadata.log.dir")
    bootstrap = r.text("metadata.log.bootstrap.servers")
    if (log_dir is None) == (bootstrap is None):
        raise r.error(
            "metadata.log.dir", log_dir or "", "give exactly one of metadata.log.dir and metadata.log.bootstrap.servers"
        )
    client = {
        k[len(KAFKA_CLIENT_PREFIX) :]: java_trim(v) for k, v in r.props.items() if k.startswith(KAFKA_CLIENT_PREFIX)
    }
    r.used.update(KAFKA_CLIENT_PREFIX + k for k in client)
    snapshot_dir = r.text("metadata.log.snapshot.dir")
    session, heartbeat = _election_timeouts(r)
    return LogConfig(
        log_dir=Path(log_dir) if log_dir else None,
        bootstrap_servers=bootstrap,
        topic=r.text("metadata.log.topic"),
        kafka_client=client,
        snapshot_dir=Path(snapshot_dir) if snapshot_dir else (Path(log_dir) if log_dir else None),
        snapshot_max_records=r.integer("metadata.log.snapshot.max.records", 100_000, 1),
        snapshot_max_bytes=r.integer("metadata.log.snapshot.max.bytes", 20 * 1024 * 1024, 1),
        snapshot_retain=r.integer("metadata.log.snapshot.retain", 3, 1, 1000),
        poll_interval_s=r.integer("metadata.log.poll.interval.ms", 100, 1, 3_600_000) / 1000,
        poll_on_request=r.choice("metadata.log.poll.on.request", "false", ("true", "false")) == "true",
        replication_factor=_replication_factor(r),
        min_insync_replicas=r.integer("metadata.log.min.insync.replicas", 0, 1) or None,
        election_group=r.text("controller.election.group"),
        election_session_timeout_ms=session,
        election_heartbeat_interval_ms=heartbeat,
    )


def _replication_factor(r: PropertyReader) -> int:
    factor = r.integer("metadata.log.replication.factor", -1, -1, 32767)
    if factor == 0:
        raise r.error("metadata.log.replication.factor", "0", "must be -1 (the brokers' default) or at least 1")
    return factor


def _election_timeouts(r: PropertyReader) -> tuple[int, int]:
    session = r.integer("controller.election.session.timeout.ms", 6000, 1000, 1_800_000)
    heartbeat = r.integer("controller.election.heartbeat.interval.ms", 500, 100, 60_000)
    if heartbeat >= session:
        raise r.error(
            "controller.election.heartbeat.interval.ms",
            str(heartbeat),
            f"must be below the session timeout ({session})",
        )
    return session, heartbeat


def _authorizer(r: PropertyReader) -> AuthorizerConfig:
    allow = r.boolean(ALLOW_EVERYONE, False)
    return AuthorizerConfig(
        super_users=_principals(r, SUPER_USERS),
        allow_everyone_if_no_acl_found=allow,
        early_start_listeners=r.names(EARLY_START_LISTENERS),
        node_id=r.integer("node.id", 1, 0),
    )


def _roles(r: PropertyReader) -> bool:
    roles = r.names("process.roles") or ("broker",)
    for role in roles:
        if role not in ROLES:
            raise r.error("process.roles", ",".join(roles), f"{role} is not one of {', '.join(ROLES)}")
    return "controller" in roles


def _public(r: PropertyReader) -> frozenset[str]:
    endpoints = r.names("auth.public.endpoints")
    for name in endpoints:
        if name not in PUBLIC_ENDPOINTS:
            raise r.error("auth.public.endpoints", name, f"must be among {', '.join(PUBLIC_ENDPOINTS)}")
    return frozenset(endpoints)


def _limits(r: PropertyReader) -> NetworkLimits:
    max_connections = r.integer("max.connections", 1000, 1)
    per_ip, overrides = _per_ip(r)
    queued = r.integer("queued.max.request.bytes", 512 * MIB, 4096, 2**62)
    share = queued * 3 // 4  # NetworkLimits.others_request_bytes
    bodies = {}
    for key, default in (("request.max.bytes", 16 * MIB), ("import.max.bytes", 256 * MIB)):
        given = r.get(key) not in (None, "")
        bodies[key] = r.integer(key, min(default, share), 1024)
        if given and bodies[key] > share:
            raise r.error(
                key,
                str(bodies[key]),
                f"must be at most three quarters of queued.max.request.bytes ({queued}): a request that large "
                "could never be read",
            )
    return NetworkLimits(
        request_max_bytes=bodies["request.max.bytes"],
        import_max_bytes=bodies["import.max.bytes"],
        queued_max_request_bytes=queued,
        max_connections=max_connections,
        reserved_broker_connections=r.integer(
            "max.connections.reserved.brokers", max_connections // 10, 0, max_connections - 1
        ),
        max_in_flight=r.integer("max.in.flight.requests.per.connection", 16, 1, 10_000),
        max_unsent_bytes=r.integer("connections.max.unsent.bytes", MIB, 4096),
        idle_timeout_s=r.integer("connections.max.idle.ms", 600_000, 1) / 1000,
        request_timeout_s=r.integer("request.timeout.ms", 30_000, 1) / 1000,
        request_max_actions=r.integer("request.max.actions", 100_000, 1),
        self_query_max_actions=r.integer("self.query.max.actions", 1000, 1),
        explain_max_actions=r.integer("explain.max.actions", 10_000, 1),
        max_connections_per_ip=per_ip,
        per_ip_overrides=overrides,
    )


def _per_ip(r: PropertyReader) -> tuple[int, dict[str, int]]:
    """max.connections.per.ip and its overrides (host:count pairs; a name stands for every address it resolves to)."""
    key = "max.connections.per.ip.overrides"
    raw = r.text(key, "") or ""
    overrides: dict[str, int] = {}
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        host, _, count = entry.rpartition(":")
        count = count.strip()  # Kafka trims both sides of the last colon (CoreUtils.parseCsvMap)
        if not host or not re.fullmatch(r"[0-9]+", count):
            raise r.error(key, raw, f"{entry!r} is not host:count")
        try:
            addresses = host_addresses(host.strip().strip("[]"))
        except TimeoutError as exc:
            raise r.error(key, raw, str(exc)) from exc
        if not addresses:
            raise r.error(key, raw, f"host {host!r} does not resolve to any address")
        for address in addresses:  # without its %scope: a peer's address never has one (Java's equals ignores it)
            overrides[java_host_address(address.partition("%")[0])] = min(int(count), 2**31 - 1)
    per_ip = r.integer("max.connections.per.ip", 2**31 - 1, 0)
    if per_ip == 0 and not overrides:
        raise r.error("max.connections.per.ip", "0", f"0 refuses every client unless {key} names some")
    return per_ip, overrides


def _decision_log(r: PropertyReader) -> DecisionLogConfig | None:
    path = r.text("decision.log.file")
    max_bytes = r.integer("decision.log.max.bytes", 100 * MIB, 1024)
    backups = r.integer("decision.log.backups", 5, 0, 1000)
    rate = r.integer("decision.log.self.query.rate", 1000, 0)
    pending = r.integer("decision.log.max.pending.bytes", 64 * MIB, 65536)
    return None if path is None else DecisionLogConfig(Path(path), max_bytes, backups, rate, pending)


def _is_known(key: str) -> bool:
    return key in KEYS or key.startswith(KAFKA_CLIENT_PREFIX)


def unknown_key_message(path: Path, key: str, ignored: bool = True) -> str:
    """What to say of an unknown key: that serve ignores it (when it does), and the known key it is closest to
    when one is close (a misspelling)."""
    names = [k for k in KEYS if "*" not in k and "<" not in k]
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.8)
    notes = (["ignored"] if ignored else []) + ([f"did you mean {close[0]}?"] if close else [])
    return f"{path}: unknown key {key}" + (f" ({'; '.join(notes)})" if notes else "")


def parse(path: Path, props: Mapping[str, str]) -> ServeConfig:
    """Validate every key (ServeConfigError on the first bad one) and collect warnings for unknown keys."""
    r = PropertyReader(path, props)
    authorizer = _authorizer(r)
    limits = _limits(r)
    config = ServeConfig(
        path=path,
        authorizer=authorizer,
        listeners=parse_listeners(
            r, authorizer.early_start_listeners, r.names("auth.anonymous.listeners"), limits.max_connections
        ),
        controller=_roles(r),
        log=_log(r),
        token_file=r.existing_file("auth.token.file"),
        broker_principals=_principals(r, "broker.principals"),
        public_endpoints=_public(r),
        decision_log=_decision_log(r),
        limits=limits,
        min_offset_wait_s=r.integer("min.offset.wait.max.ms", 10_000, 0, 600_000) / 1000,
        shutdown_timeout_s=r.integer("shutdown.timeout.ms", 5_000, 0) / 1000,
        log_format=r.choice("log.format", "text", ("text", "json")),
        log_level=LOG_LEVELS[r.choice("log.level", "info", tuple(LOG_LEVELS))],
        heavy_reads_process=r.choice("heavy.reads.process", "auto", ("auto", "on", "off")),
        bulk_threads_nice=r.integer("bulk.threads.nice", 5, 0, 19),
        self_query_rate=r.integer("decision.log.self.query.rate", 1000, 0),
    )
    unknown = tuple(sorted(k for k in props if k not in r.used and not _is_known(k)))
    warnings = tuple(unknown_key_message(path, k) for k in unknown)
    return dataclasses.replace(config, warnings=warnings, unknown_keys=unknown)


def load(path: Path) -> ServeConfig:
    """Read and validate a serve properties file."""
    try:
        props = load_properties(path)
    except ConfigError as exc:
        raise ServeConfigError(str(exc)) from exc
    return parse(path, props)
