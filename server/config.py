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


class ServeConfigError(ConfigError):
    """A configuration value serve cannot use; the message is one line naming the key and the value."""


LISTENER_RE = re.compile(r"^([A-Za-z0-9_]+)://(\[[0-9A-Fa-f:.]+\]|[^:\[\]/]*):([0-9]{1,5})$")
PROTOCOLS = ("PLAINTEXT", "SSL")
ROLES = ("broker", "controller")
PUBLIC_ENDPOINTS = ("status", "metrics")
CLIENT_AUTH = ("required", "requested", "none")
KAFKA_CLIENT_PREFIX = "metadata.log.kafka."
LOG_LEVELS = {"trace": 5, "debug": 10, "info": 20, "warn": 30, "error": 40}
LISTENER_SSL_PREFIX = "listener.name."

# key -> what it means (docs/serve.md "Configuration" documents these words)
KEYS: dict[str, str] = {
    "listeners": "named endpoints NAME://host:port, comma-separated (required)",
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
    "controller (default kraft-acl-controllers-<topic>)",
    "controller.election.session.timeout.ms": "a silent active controller is replaced after this long (default 6000, "
    "the brokers' group.min.session.timeout.ms)",
    "controller.election.heartbeat.interval.ms": "how often a controller tells the group it lives (default 500)",
    "metadata.log.snapshot.dir": "where snapshots live (default: metadata.log.dir; none for a Kafka log)",
    "metadata.log.snapshot.max.records": "write a snapshot after this many records (default 100000)",
    "metadata.log.snapshot.max.bytes": "or after this many log bytes (default 20971520)",
    "metadata.log.snapshot.retain": "snapshots kept (default 3)",
    "metadata.log.poll.interval.ms": "how often the tailer looks for new records (default 100)",
    "auth.token.file": "bearer tokens: one `<principal> <token>` per line",
    "auth.anonymous.listeners": "listeners where a caller without credentials is User:ANONYMOUS (else 401)",
    "auth.public.endpoints": "endpoints callable without credentials: status, metrics (default none)",
    "broker.principals": "`;`-separated principals that may ask decisions on behalf of any principal",
    "ssl.certfile": "PEM certificate chain of this server (SSL listeners)",
    "ssl.keyfile": "PEM private key of this server (SSL listeners)",
    "ssl.cafile": "PEM CA bundle that client certificates must chain to (mutual TLS)",
    "ssl.client.auth": "required | requested | none (default required when ssl.cafile is set)",
    "listener.name.<name>.ssl.*": "the four ssl.* keys for one listener",
    "decision.log.file": "write every decision as a JSON line to this file (default off)",
    "decision.log.max.bytes": "rotate the decision log at this size (default 104857600)",
    "decision.log.backups": "rotated decision logs kept (default 5)",
    "request.max.bytes": "largest request body accepted (default 16777216)",
    "import.max.bytes": "largest body of POST /v1/acls/import (default 268435456: about 1.5M ACLs)",
    "request.max.actions": "most actions in one authorize call (default 100000)",
    "min.offset.wait.max.ms": "longest a decision with min_offset waits for this serve to apply that offset "
    "(default 10000)",
    "connections.max.idle.ms": "close a keep-alive connection idle this long (default 600000)",
    "request.timeout.ms": "a request must arrive whole within this time (default 30000)",
    "shutdown.timeout.ms": "time given to in-flight requests on SIGTERM (default 5000)",
    "log.format": "text | json (default text)",
    "log.level": "TRACE, DEBUG, INFO, WARN or ERROR (default INFO: Kafka's audit logger logs denials at INFO)",
}


@dataclass(frozen=True, slots=True)
class TlsConfig:
    """Server certificate and, for mutual TLS, the CA bundle client certificates must chain to."""

    certfile: Path
    keyfile: Path
    cafile: Path | None
    client_auth: str  # required | requested | none


@dataclass(frozen=True, slots=True)
class Listener:
    """One named endpoint; `tls` is set for SSL listeners."""

    name: str
    host: str
    port: int
    early_start: bool
    tls: TlsConfig | None = None
    anonymous: bool = False

    @property
    def scheme(self) -> str:
        """http or https."""
        return "https" if self.tls is not None else "http"

    def url(self, port: int | None = None) -> str:
        """Where a client reaches this listener."""
        host = self.host or "127.0.0.1"
        return f"{self.scheme}://{host}:{self.port if port is None else port}"


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
    replication_factor: int = -1
    min_insync_replicas: int | None = None
    election_group: str | None = None
    election_session_timeout_ms: int = 6000
    election_heartbeat_interval_ms: int = 500


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
    decision_log: Path | None
    decision_log_max_bytes: int
    decision_log_backups: int
    request_max_bytes: int
    request_max_actions: int
    import_max_bytes: int
    min_offset_wait_s: float
    idle_timeout_s: float
    request_timeout_s: float
    shutdown_timeout_s: float
    log_format: str
    log_level: int
    warnings: tuple[str, ...] = field(default=())
    unknown_keys: tuple[str, ...] = field(default=())  # keys serve does not know (each has its warning)

    @property
    def writes_snapshots(self) -> bool:
        """True when this serve writes the log's snapshots: the controller of an embedded log (whose directory
        it owns), or any serve of a Kafka-backed log (each keeps its own snapshot directory)."""
        return (self.controller or self.log.bootstrap_servers is not None) and self.log.snapshot_dir is not None

    def listener_anonymous(self, name: str) -> bool:
        """True when callers without credentials on this listener are User:ANONYMOUS (auth.anonymous.listeners)."""
        return any(listener.name == name and listener.anonymous for listener in self.listeners)


class _Reader:
    """Typed access to the properties with one-line errors; remembers which keys were read."""

    def __init__(self, path: Path, props: Mapping[str, str]) -> None:
        self.path = path
        self.props = props
        self.used: set[str] = set()

    def error(self, key: str, value: str, why: str) -> ServeConfigError:
        return ServeConfigError(f"{self.path}: {key}={value!r}: {why}")

    def get(self, key: str) -> str | None:
        self.used.add(key)
        value = self.props.get(key)
        return None if value is None else java_trim(value)

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.get(key)
        return default if value is None or value == "" else value

    def integer(self, key: str, default: int, low: int, high: int = 2**31 - 1) -> int:
        value = self.get(key)
        if value is None or value == "":
            return default
        if not re.fullmatch(r"[+-]?[0-9]+", value):
            raise self.error(key, value, "not an integer")
        number = int(value)
        if not low <= number <= high:
            raise self.error(key, value, f"must be between {low} and {high}")
        return number

    def choice(self, key: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.text(key, default)
        assert value is not None
        if value.lower() not in allowed:
            raise self.error(key, value, f"must be one of {', '.join(allowed)}")
        return value.lower()

    def names(self, key: str) -> tuple[str, ...]:
        value = self.get(key) or ""
        return tuple(java_trim(n) for n in value.split(",") if java_trim(n))

    def existing_file(self, key: str) -> Path | None:
        value = self.text(key)
        if value is None:
            return None
        path = Path(value)
        if not path.is_file():
            raise self.error(key, value, "no such file")
        return path

    def boolean(self, key: str, default: bool) -> bool:
        value = self.text(key)
        if value is None:
            return default
        if value.lower() not in ("true", "false"):
            raise self.error(key, value, "must be true or false")
        return value.lower() == "true"


def _principals(r: _Reader, key: str) -> frozenset[str]:
    try:
        return parse_super_users(r.get(key))
    except ConfigError as exc:
        raise r.error(key, r.get(key) or "", str(exc).split(": ", 1)[-1]) from exc


def _tls(r: _Reader, prefix: str, fallback: TlsConfig | None, listener: str) -> TlsConfig | None:
    """The ssl.* keys under `prefix` (a listener's own keys fall back to the global ones)."""
    cert = r.existing_file(prefix + "ssl.certfile")
    key = r.existing_file(prefix + "ssl.keyfile")
    ca = r.existing_file(prefix + "ssl.cafile")
    auth_key = prefix + "ssl.client.auth"
    if cert is None and key is None and ca is None and r.text(auth_key) is None:
        return fallback
    base = fallback
    cert = cert or (base.certfile if base else None)
    key = key or (base.keyfile if base else None)
    ca = ca or (base.cafile if base else None)
    if cert is None or key is None:
        raise r.error(prefix + "ssl.certfile", "", f"an SSL listener ({listener}) needs ssl.certfile and ssl.keyfile")
    default_auth = "required" if ca is not None else "none"
    # an explicit ssl.client.auth (the listener's, else the global one) wins; else a CA means "required"
    explicit = r.text(auth_key) or r.text("ssl.client.auth")
    client_auth = r.choice(auth_key, explicit or default_auth, CLIENT_AUTH)
    if client_auth != "none" and ca is None:
        raise r.error(auth_key, client_auth, "client certificates need ssl.cafile")
    return TlsConfig(cert, key, ca, client_auth)


def _listeners(r: _Reader, early: tuple[str, ...], anonymous: tuple[str, ...]) -> tuple[Listener, ...]:
    raw = r.get("listeners")
    if not raw:
        raise r.error("listeners", raw or "", "required, e.g. CONTROLLER://127.0.0.1:9190,CLIENT://127.0.0.1:9191")
    protocols: dict[str, str] = {}
    for piece in r.names("listener.security.protocol.map"):
        name, _, proto = piece.partition(":")
        if proto.upper() not in PROTOCOLS:
            raise r.error("listener.security.protocol.map", piece, f"protocol must be one of {', '.join(PROTOCOLS)}")
        protocols[java_trim(name)] = proto.upper()
    global_tls = _tls(r, "", None, "*")
    out: list[Listener] = []
    for piece in (java_trim(p) for p in raw.split(",") if java_trim(p)):
        m = LISTENER_RE.match(piece)
        if m is None:
            raise r.error("listeners", piece, "expected NAME://host:port")
        name, host, port = m.group(1), m.group(2).strip("[]"), int(m.group(3))
        if not 0 <= port <= 65535:
            raise r.error("listeners", piece, "port must be between 0 and 65535")
        if any(existing.name == name for existing in out):
            raise r.error("listeners", raw, f"listener name {name} appears twice")
        proto = protocols.get(name, "SSL" if name.upper() == "SSL" else "PLAINTEXT")
        tls = _tls(r, f"{LISTENER_SSL_PREFIX}{name.lower()}.", global_tls, name) if proto == "SSL" else None
        if proto == "SSL" and tls is None:
            raise r.error(
                "listener.security.protocol.map", f"{name}:SSL", "SSL listeners need ssl.certfile and ssl.keyfile"
            )
        out.append(Listener(name, host, port, name in early, tls, name in anonymous))
    names = {listener.name for listener in out}
    for key, listed in ((EARLY_START_LISTENERS, early), ("auth.anonymous.listeners", anonymous)):
        for name in listed:
            if name not in names:
                raise r.error(key, name, f"not a listener (listeners are {', '.join(sorted(names))})")
    for name in protocols:
        if name not in names:
            raise r.error("listener.security.protocol.map", name, "not a listener")
    return tuple(out)


def _log(r: _Reader) -> LogConfig:
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
        replication_factor=_replication_factor(r),
        min_insync_replicas=r.integer("metadata.log.min.insync.replicas", 0, 1) or None,
        election_group=r.text("controller.election.group"),
        election_session_timeout_ms=session,
        election_heartbeat_interval_ms=heartbeat,
    )


def _replication_factor(r: _Reader) -> int:
    factor = r.integer("metadata.log.replication.factor", -1, -1, 32767)
    if factor == 0:
        raise r.error("metadata.log.replication.factor", "0", "must be -1 (the brokers' default) or at least 1")
    return factor


def _election_timeouts(r: _Reader) -> tuple[int, int]:
    session = r.integer("controller.election.session.timeout.ms", 6000, 1000, 1_800_000)
    heartbeat = r.integer("controller.election.heartbeat.interval.ms", 500, 100, 60_000)
    if heartbeat >= session:
        raise r.error(
            "controller.election.heartbeat.interval.ms",
            str(heartbeat),
            f"must be below the session timeout ({session})",
        )
    return session, heartbeat


def _authorizer(r: _Reader) -> AuthorizerConfig:
    allow = r.boolean(ALLOW_EVERYONE, False)
    return AuthorizerConfig(
        super_users=_principals(r, SUPER_USERS),
        allow_everyone_if_no_acl_found=allow,
        early_start_listeners=r.names(EARLY_START_LISTENERS),
        node_id=r.integer("node.id", 1, 0),
    )


def _roles(r: _Reader) -> bool:
    roles = r.names("process.roles") or ("broker",)
    for role in roles:
        if role not in ROLES:
            raise r.error("process.roles", ",".join(roles), f"{role} is not one of {', '.join(ROLES)}")
    return "controller" in roles


def _public(r: _Reader) -> frozenset[str]:
    endpoints = r.names("auth.public.endpoints")
    for name in endpoints:
        if name not in PUBLIC_ENDPOINTS:
            raise r.error("auth.public.endpoints", name, f"must be among {', '.join(PUBLIC_ENDPOINTS)}")
    return frozenset(endpoints)


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
    r = _Reader(path, props)
    authorizer = _authorizer(r)
    config = ServeConfig(
        path=path,
        authorizer=authorizer,
        listeners=_listeners(r, authorizer.early_start_listeners, r.names("auth.anonymous.listeners")),
        controller=_roles(r),
        log=_log(r),
        token_file=r.existing_file("auth.token.file"),
        broker_principals=_principals(r, "broker.principals"),
        public_endpoints=_public(r),
        decision_log=Path(p) if (p := r.text("decision.log.file")) else None,
        decision_log_max_bytes=r.integer("decision.log.max.bytes", 100 * 1024 * 1024, 1024),
        decision_log_backups=r.integer("decision.log.backups", 5, 0, 1000),
        request_max_bytes=r.integer("request.max.bytes", 16 * 1024 * 1024, 1024),
        request_max_actions=r.integer("request.max.actions", 100_000, 1),
        import_max_bytes=r.integer("import.max.bytes", 256 * 1024 * 1024, 1024),
        min_offset_wait_s=r.integer("min.offset.wait.max.ms", 10_000, 0, 600_000) / 1000,
        idle_timeout_s=r.integer("connections.max.idle.ms", 600_000, 1) / 1000,
        request_timeout_s=r.integer("request.timeout.ms", 30_000, 1) / 1000,
        shutdown_timeout_s=r.integer("shutdown.timeout.ms", 5_000, 0) / 1000,
        log_format=r.choice("log.format", "text", ("text", "json")),
        log_level=LOG_LEVELS[r.choice("log.level", "info", tuple(LOG_LEVELS))],
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
