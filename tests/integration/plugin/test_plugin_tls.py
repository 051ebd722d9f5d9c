"""The plugin authenticates to serve with a client certificate (mutual TLS; serve maps the CN to User:<CN>), its
key and trust stores read by Kafka's own SSL code (PEM here). Without the certificate serve refuses the
connection and the plugin fails closed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from kraftacl.harness.plugin_jar import KAFKA_LIB, PLUGIN_JAR, TEST_CLASSES
from kraftacl.harness.serve_process import ServeProcess, free_port
from tests.integration.plugin.clients import ADMIN_TOKEN, acl, grant
from tests.integration.plugin.conftest import plugin_jar, start_serve

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]


def pkcs8_key_and_chain(cert: trustme.LeafCert) -> bytes:
    """Kafka's PEM key store: an unencrypted PKCS#8 key followed by the certificate chain."""
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pkcs8 + b"".join(blob.bytes() for blob in cert.cert_chain_pems)


def decide(props: dict[str, str], directory: Path, *names: str) -> list[str]:
    """User:alice READ on each topic, decided by the plugin (PluginBench) outside a broker."""
    path = directory / "plugin.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    classpath = f"{TEST_CLASSES}:{PLUGIN_JAR}:{KAFKA_LIB}/*"
    out = subprocess.run(
        ["java", "-cp", classpath, "io.github.kraftacl.plugin.PluginBench", str(path), "decide", "User:alice", "READ",
         "TOPIC", *names],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return out.stdout.split()


def test_client_certificate(tmp_path: Path) -> None:
    plugin_jar()
    ca = trustme.CA()
    server, client = ca.issue_cert("127.0.0.1"), ca.issue_cert("broker.example", common_name="broker")
    files = {
        "ca.pem": ca.cert_pem.bytes(),
        "server.pem": b"".join(blob.bytes() for blob in server.cert_chain_pems),
        "server.key": server.private_key_pem.bytes(),
        "client.pem": pkcs8_key_and_chain(client),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"User:admin {ADMIN_TOKEN}\n")
    tls_port = free_port()
    serve = ServeProcess(
        tmp_path / "serve",
        {
            "process.roles": "broker,controller",
            "listeners": f"CONTROLLER://127.0.0.1:{free_port()},SSL://127.0.0.1:{tls_port}",
            "early.start.listeners": "CONTROLLER",
            "super.users": "User:admin",
            "metadata.log.dir": str(tmp_path / "log"),
            "auth.token.file": str(tokens),
            "broker.principals": "User:broker",
            "ssl.certfile": str(tmp_path / "server.pem"),
            "ssl.keyfile": str(tmp_path / "server.key"),
            "ssl.cafile": str(tmp_path / "ca.pem"),
        },
    )
    start_serve(serve)
    try:
        grant(serve, acl("User:alice", "READ", "tls-topic"))
        trust = {
            "kraft.acl.urls": f"https://127.0.0.1:{tls_port}",
            "kraft.acl.ssl.truststore.type": "PEM",
            "kraft.acl.ssl.truststore.location": str(tmp_path / "ca.pem"),
        }
        with_cert = trust | {
            "kraft.acl.ssl.keystore.type": "PEM",
            "kraft.acl.ssl.keystore.location": str(tmp_path / "client.pem"),
        }
        assert decide(with_cert, tmp_path, "tls-topic", "other") == ["ALLOWED", "DENIED"]
        assert decide(trust, tmp_path, "tls-topic", "other") == ["DENIED", "DENIED"]  # no certificate: fail closed
    finally:
        serve.stop()
