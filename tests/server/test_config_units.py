"""serve's configuration and token file, key by key, without a process."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trustme

from kraftacl.server.auth import Authenticator, TokenFileError, load_tokens, principal_of_cert
from kraftacl.server.config import KEYS, ServeConfigError, parse


def _parse(tmp_path: Path, **props: str) -> object:
    base = {"listeners": "A://127.0.0.1:1,B://127.0.0.1:2", "metadata.log.dir": str(tmp_path)}
    return parse(tmp_path / "server.properties", {**base, **{k.replace("_", "."): v for k, v in props.items()}})


def test_defaults_and_kafka_backend(tmp_path: Path) -> None:
    config = parse(
        tmp_path / "p",
        {
            "listeners": "C://:0",
            "metadata.log.bootstrap.servers": "h:9092",
            "metadata.log.kafka.security.protocol": "SASL_SSL",
            "colour": "red",
        },
    )
    assert config.controller is False and config.authorizer.node_id == 1
    assert config.listeners[0].host == "" and config.listeners[0].tls is None
    assert config.log.log_dir is None and config.log.snapshot_dir is None
    assert dict(config.log.kafka_client) == {"security.protocol": "SASL_SSL"}
    # The topic takes the brokers' replication defaults; a controller is elected in kraft-acl-controllers-<topic>.
    assert config.log.replication_factor == -1 and config.log.min_insync_replicas is None
    assert config.log.election_group is None and config.log.election_session_timeout_ms == 6000
    assert config.min_offset_wait_s == 10.0
    assert config.warnings == (f"{tmp_path / 'p'}: unknown key colour (ignored)",)


def test_docs_configuration_table_is_every_key_in_the_words_of_keys() -> None:
    """docs/serve.md "Configuration" lists every key of `KEYS` with its words (defaults included), and a `|` in a
    cell is escaped, so that the table renders with two columns."""
    doc = (Path(__file__).parents[2] / "docs" / "serve.md").read_text(encoding="utf-8")
    section = doc.split("### Configuration", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = re.split(r"(?<!\\)\|", line)[1:-1]
        if len(cells) == 2 and cells[0].strip().startswith("`"):
            rows[cells[0].strip().strip("`")] = cells[1].strip().replace("\\|", "|")
        else:
            assert not line.startswith("| `"), f"a row of more than two cells (an unescaped |?): {line}"
    assert rows == KEYS


def test_per_listener_tls_overrides_the_global_keys(tmp_path: Path) -> None:
    ca = trustme.CA()
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "s.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    config = _parse(
        tmp_path,
        **{
            "listener.security.protocol.map": "A:SSL,B:SSL",
            "ssl.certfile": str(tmp_path / "s.pem"),
            "ssl.keyfile": str(tmp_path / "s.pem"),
            "listener.name.b.ssl.cafile": str(tmp_path / "ca.pem"),
        },
    )
    a, b = config.listeners  # type: ignore[attr-defined]
    assert a.tls.client_auth == "none" and a.tls.cafile is None and a.scheme == "https"
    assert b.tls.client_auth == "required" and b.tls.cafile == tmp_path / "ca.pem"


@pytest.mark.parametrize(
    ("props", "words"),
    [
        ({"listeners": "A://h:1,A://h:2"}, "listener name A appears twice"),
        ({"listeners": "A://h:99999"}, "port must be between 0 and 65535"),
        ({"metadata.log.bootstrap.servers": "h:1"}, "give exactly one of metadata.log.dir"),
        ({"listener.security.protocol.map": "A:SASL"}, "protocol must be one of PLAINTEXT, SSL"),
        (
            {
                "ssl.client.auth": "required",
                "ssl.certfile": "/etc/hostname",
                "ssl.keyfile": "/etc/hostname",
                "listener.security.protocol.map": "A:SSL",
            },
            "client certificates need ssl.cafile",
        ),
        ({"auth.public.endpoints": "status,acls"}, "auth.public.endpoints='acls': must be among status, metrics"),
        ({"auth.anonymous.listeners": "C"}, "auth.anonymous.listeners='C': not a listener"),
        ({"log.level": "LOUD"}, "log.level='LOUD': must be one of"),
        ({"decision.log.backups": "-1"}, "must be between 0 and 1000"),
        ({"metadata.log.replication.factor": "0"}, "metadata.log.replication.factor='0': must be -1"),
        ({"metadata.log.min.insync.replicas": "0"}, "metadata.log.min.insync.replicas='0': must be between 1"),
        (
            {"controller.election.heartbeat.interval.ms": "6000"},
            "controller.election.heartbeat.interval.ms='6000': must be below the session timeout (6000)",
        ),
        ({"controller.election.session.timeout.ms": "10"}, "must be between 1000 and 1800000"),
        ({"min.offset.wait.max.ms": "x"}, "min.offset.wait.max.ms='x': not an integer"),
        ({"max.connections.per.ip": "0"}, "max.connections.per.ip='0': 0 refuses every client unless"),
        ({"max.connections.per.ip": "-1"}, "max.connections.per.ip='-1': must be between 0"),
        ({"max.connections.per.ip.overrides": "10.0.0.1"}, "'10.0.0.1' is not host:count"),
        ({"max.connections.per.ip.overrides": "10.0.0.1:x"}, "'10.0.0.1:x' is not host:count"),
        ({"max.connections.per.ip.overrides": "no-such-host.invalid:3"}, "'no-such-host.invalid' does not resolve"),
        # more digits than int() converts (4300): the key's range, not "internal error: ValueError", exit 1
        ({"max.connections": "1" * 5000}, "must be between 1 and 2147483647"),
        ({"queued.max.request.bytes": "-" + "9" * 4301}, "must be between 4096 and"),
        ({"request.timeout.ms": "0" * 5000}, "must be between 1 and 2147483647"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, props: dict[str, str], words: str) -> None:
    with pytest.raises(ServeConfigError) as err:
        _parse(tmp_path, **props)
    assert words in str(err.value) and str(err.value).startswith(str(tmp_path / "server.properties"))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("User:a tok\n", "shorter than 16 characters"),
        ("alice 0123456789abcdefgh\n", "expected '<Type:name> <token>'"),
        ("User:a 0123456789abcdefgh\nUser:b 0123456789abcdefgh\n", "already given to User:a"),
    ],
)
def test_token_file_errors_name_the_line(tmp_path: Path, text: str, words: str) -> None:
    (tmp_path / "tokens").write_text(text)
    with pytest.raises(TokenFileError) as err:
        load_tokens(tmp_path / "tokens")
    assert words in str(err.value) and "line" in str(err.value)


def test_tokens_and_certificates_map_to_principals(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("# comment\n\nUser:broker 0123456789abcdefgh\n")
    auth = Authenticator(load_tokens(tmp_path / "tokens"))
    assert auth.from_header(b"Bearer 0123456789abcdefgh") == ("User:broker", True)
    assert auth.from_header(b"bearer  0123456789abcdefgh ") == ("User:broker", True)
    assert auth.from_header(b"Basic dXNlcjpwdw==") == (None, True)
    assert auth.from_header(None) == (None, False)
    cert = {"subject": ((("countryName", "DE"),), (("commonName", "broker-1"),))}
    assert principal_of_cert(cert) == "User:broker-1"
    assert principal_of_cert({"subject": ((("organizationName", "x"),),)}) is None


def test_remembered_tokens_answer_as_the_token_file_does(tmp_path: Path) -> None:
    """A verified header is remembered; a wrong token never is, however close, and the memory stays bounded."""
    (tmp_path / "tokens").write_text("User:broker 0123456789abcdefgh\n")
    auth = Authenticator(load_tokens(tmp_path / "tokens"))
    for _ in range(3):
        assert auth.from_header(b"Bearer 0123456789abcdefgh") == ("User:broker", True)
        assert auth.from_header(b"Bearer 0123456789abcdefgi") == (None, True)
        assert auth.from_header(b"Bearer 0123456789abcdefg") == (None, True)
    assert list(auth._verified) == [b"Bearer 0123456789abcdefgh"]
    for n in range(Authenticator.MAX_REMEMBERED + 5):
        assert auth.from_header(b"Bearer 0123456789abcdefgh" + b" " * n) == ("User:broker", True)
    assert 0 < len(auth._verified) <= Authenticator.MAX_REMEMBERED


def test_a_padded_token_is_accepted_and_not_remembered(tmp_path: Path) -> None:
    """Whitespace around a token is accepted, but only the plain header is remembered: each padded variant (up to
    serve's 64 KiB head) was kept, 1024 of them 60 MB of serve."""
    (tmp_path / "tokens").write_text("User:alice 0123456789abcdefgh\n")
    auth = Authenticator(load_tokens(tmp_path / "tokens"))
    for n in range(50):
        assert auth.from_header(b"Bearer" + b" " * (60_000 + n) + b"0123456789abcdefgh") == ("User:alice", True)
        assert auth.from_header(b"Bearer 0123456789abcdefgh" + b" " * (60_000 + n)) == ("User:alice", True)
    assert auth.from_header(b"BEARER 0123456789abcdefgh") == ("User:alice", True)
    assert sum(map(len, auth._verified)) < 1000, f"{sum(map(len, auth._verified))} bytes of headers remembered"


def test_connections_per_ip_and_overrides_in_kafkas_address_form(tmp_path: Path) -> None:
    config = parse(
        tmp_path / "p",
        {
            "listeners": "C://127.0.0.1:0",
            "metadata.log.dir": str(tmp_path),
            "max.connections.per.ip": "0",
            "max.connections.per.ip.overrides": "localhost:3,10.0.0.1:5, ::1:7,[::ffff:10.0.0.2]:9",
        },
    )
    limits = config.limits
    assert limits.per_ip_limit("10.0.0.1") == 5 and limits.per_ip_limit("10.0.0.9") == 0
    assert limits.per_ip_limit("0:0:0:0:0:0:0:1") == 7  # an IPv6 peer as Java's getHostAddress() writes it
    assert limits.per_ip_limit("10.0.0.2") == 9  # IPv4-mapped IPv6 is the IPv4 address, as the peer is
    assert limits.per_ip_limit("127.0.0.1") == 3  # a name: every address it resolves to
    assert _parse(tmp_path).limits.per_ip_limit("10.0.0.1") == 2**31 - 1  # type: ignore[attr-defined]


def test_a_host_name_the_resolver_does_not_answer_for_is_one_line_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket
    import threading

    from kraftacl.server import config_listeners

    hung = threading.Event()

    def getaddrinfo(*_args: object, **_kwargs: object) -> list[object]:
        hung.wait(5)  # a DNS server that does not answer (released at the end)
        return []

    monkeypatch.setattr(config_listeners, "RESOLVE_TIMEOUT_S", 0.2)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        with pytest.raises(ServeConfigError) as err:
            _parse(tmp_path, max_connections_per_ip_overrides="broker-1.example:5")
        assert "max.connections.per.ip.overrides=" in str(err.value)
        assert "host 'broker-1.example' did not resolve within 0.2 s" in str(err.value)
        with pytest.raises(ServeConfigError) as err:
            _parse(tmp_path, listeners="A://serve-a.example:9000,B://serve-b.example:9000")
        assert "listeners=" in str(err.value) and "did not resolve" in str(err.value)
        with pytest.raises(ServeConfigError) as err:  # alone on its port: bound by name, the bind would hang
            _parse(tmp_path, listeners="A://serve-a.example:9000")
        assert "listeners=" in str(err.value) and "host 'serve-a.example' did not resolve" in str(err.value)
    finally:
        hung.set()


def test_connections_per_ip_overrides_trimmed_around_the_colon_as_kafka_does(tmp_path: Path) -> None:
    limits = _parse(tmp_path, max_connections_per_ip_overrides="10.0.0.1 : 5 ,10.0.0.2:\t6").limits  # type: ignore[attr-defined]
    assert limits.per_ip_limit("10.0.0.1") == 5 and limits.per_ip_limit("10.0.0.2") == 6


def test_a_connections_per_ip_override_with_a_scope_matches_its_address_as_peers_show_it(tmp_path: Path) -> None:
    """A peer's address never carries a %scope (asyncio's and socket.accept's peername), and Java's InetAddress
    equality ignores it: `fe80::1%eth0:3` is an override for fe80::1."""
    limits = _parse(tmp_path, max_connections_per_ip_overrides="fe80::1%eth0:3").limits  # type: ignore[attr-defined]
    assert limits.per_ip_limit("fe80:0:0:0:0:0:0:1") == 3
