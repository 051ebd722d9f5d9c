"""serve's listeners as configured: names, addresses, protocols, TLS files, per-listener connection limits, and the
check that no two listeners claim one address and port.

`Listener` and `TlsConfig` are immutable values; `parse_listeners` reads them through one `PropertyReader`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

from kraftacl.authorizer.decision.config import EARLY_START_LISTENERS, java_trim
from kraftacl.server.config_reader import PropertyReader

LISTENER_RE = re.compile(r"^([A-Za-z0-9_]+)://(\[[0-9A-Fa-f:.]+\]|[^:\[\]/]*):([0-9]{1,5})$")
PROTOCOLS = ("PLAINTEXT", "SSL")
CLIENT_AUTH = ("required", "requested", "none")
LISTENER_PREFIX = "listener.name."
RESOLVE_TIMEOUT_S = 10.0  # a host name in the configuration must resolve within this long


@dataclass(frozen=True, slots=True)
class TlsConfig:
    """Server certificate and, for mutual TLS, the CA bundle client certificates must chain to."""

    certfile: Path
    keyfile: Path
    cafile: Path | None
    client_auth: str  # required | requested | none


@dataclass(frozen=True, slots=True)
class Listener:
    """One named endpoint; `tls` is set for SSL listeners; `max_connections` is its own limit."""

    name: str
    host: str
    port: int
    early_start: bool
    tls: TlsConfig | None = None
    anonymous: bool = False
    max_connections: int = 2**31 - 1

    @property
    def scheme(self) -> str:
        """http or https."""
        return "https" if self.tls is not None else "http"

    @property
    def ipv6(self) -> bool:
        """True for an IPv6 address (`::` is a dual-stack listener: IPv4 clients arrive as ::ffff:a.b.c.d)."""
        return ":" in self.host

    def url(self, port: int | None = None) -> str:
        """Where a client reaches this listener (an IPv6 address in brackets: http://[::1]:9191)."""
        host = self.host or "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"{self.scheme}://{host}:{self.port if port is None else port}"


def _tls(r: PropertyReader, prefix: str, fallback: TlsConfig | None, listener: str) -> TlsConfig | None:
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


def parse_listeners(
    r: PropertyReader, early: tuple[str, ...], anonymous: tuple[str, ...], max_connections: int
) -> tuple[Listener, ...]:
    """Every listener of `listeners`, validated; ServeConfigError on the first bad key."""
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
        prefix = f"{LISTENER_PREFIX}{name.lower()}."
        proto = protocols.get(name, "SSL" if name.upper() == "SSL" else "PLAINTEXT")
        tls = _tls(r, prefix, global_tls, name) if proto == "SSL" else None
        if proto == "SSL" and tls is None:
            raise r.error(
                "listener.security.protocol.map", f"{name}:SSL", "SSL listeners need ssl.certfile and ssl.keyfile"
            )
        limit = r.integer(prefix + "max.connections", max_connections, 1)
        out.append(Listener(name, host, port, name in early, tls, name in anonymous, limit))
    _check_addresses(r, raw, out)
    names = {listener.name for listener in out}
    for key, listed in ((EARLY_START_LISTENERS, early), ("auth.anonymous.listeners", anonymous)):
        for name in listed:
            if name not in names:
                raise r.error(key, name, f"not a listener (listeners are {', '.join(sorted(names))})")
    for name in protocols:
        if name not in names:
            raise r.error("listener.security.protocol.map", name, "not a listener")
    return tuple(out)


def _check_addresses(r: PropertyReader, raw: str, listeners: list[Listener]) -> None:
    """Two listeners may not claim one address and port (port 0 picks a free port for each). Every host name is
    resolved here once, within RESOLVE_TIMEOUT_S: a listener alone on its port is bound by name too, and a hung DNS
    would hang the bind without a word."""
    keys: list[set[str]] = []
    for listener in listeners:
        try:
            keys.append(_address_keys(listener.host))
        except TimeoutError as exc:
            raise r.error("listeners", raw, str(exc)) from exc
    for i, a in enumerate(listeners):
        for j, b in enumerate(listeners[:i]):
            if a.port != 0 and a.port == b.port and overlap(keys[i], keys[j]):
                raise r.error("listeners", raw, f"listeners {b.name} and {a.name} both bind {a.url().split('://')[1]}")


def overlap(a: set[str], b: set[str]) -> bool:
    """True when binding hosts of these address keys (`_address_keys`) on one port would conflict: an address both
    stand for (a host name stands for every address it resolves to, as serve binds them all; an IPv4-mapped IPv6
    address for its IPv4 address), or a wildcard that covers the other (`0.0.0.0` or the empty host covers IPv4, the
    dual-stack `::` covers everything)."""
    return any(_overlap(ka, kb) for ka in a for kb in b)


def _overlap(ka: str, kb: str) -> bool:
    if ka == kb or "::" in (ka, kb):
        return True
    if "0.0.0.0" in (ka, kb):
        other = kb if ka == "0.0.0.0" else ka
        return "." in other or not other
    return False


def _address_keys(host: str) -> set[str]:
    """The canonical texts of the addresses a listener's host binds: `::0` is `::`, `::ffff:10.0.0.1` is
    `10.0.0.1`, the empty host is IPv4's wildcard, a name is what it resolves to (itself if it does not)."""
    if host == "":
        return {"0.0.0.0"}
    try:
        return {_canonical(ipaddress.ip_address(host))}
    except ValueError:
        pass
    found = _resolve(host)
    return {_canonical(ipaddress.ip_address(a.partition("%")[0])) for a in found} or {host.lower()}


def host_addresses(host: str) -> list[str]:
    """The IP addresses `host` names: itself when it is one, else what it resolves to (none when it does not)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    return _resolve(host)


def _resolve(host: str) -> list[str]:
    """The addresses `host` resolves to (none when it does not); TimeoutError naming it when the resolver has not
    answered within RESOLVE_TIMEOUT_S (a hung DNS server must not hang serve's start without a word)."""
    answer: list[list[str]] = []

    def ask() -> None:
        try:
            found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            found = []
        answer.append(sorted({str(info[4][0]) for info in found}))

    asking = threading.Thread(target=ask, name=f"resolve {host}", daemon=True)  # getaddrinfo cannot be cancelled
    asking.start()
    asking.join(RESOLVE_TIMEOUT_S)
    if not answer:
        raise TimeoutError(f"host {host!r} did not resolve within {RESOLVE_TIMEOUT_S:g} s (is DNS answering?)")
    return answer[0]


def _canonical(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)
