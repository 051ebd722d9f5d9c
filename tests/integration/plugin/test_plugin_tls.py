"""The plugin authenticates to serve with a client certificate (mutual TLS; serve maps the CN to User:<CN>), its
key and trust stores given as a Kafka client gives them (PEM with a plain or an encrypted PKCS#8 key, PKCS12)
and read with the JDK alone. Without the certificate serve refuses the connection and the plugin fails closed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import pkcs12

from kraftacl.harness.plugin_jar import PLUGIN_JAR, TEST_CLASSES, kafka_lib
from kraftacl.harness.serve_process import ServeProcess, free_port
from tests.integration.plugin.clients import ADMIN_TOKEN, acl, grant
from tests.integration.plugin.conftest import plugin_jar, start_serve

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]


KEY_PASSWORD = "key-secret-0123"
# the private keys a PKCS12 store can hold (pkcs12.PKCS12PrivateKeyTypes, as classes)
PKCS12_KEY_TYPES = (
    rsa.RSAPrivateKey,
    dsa.DSAPrivateKey,
    ec.EllipticCurvePrivateKey,
    ed25519.Ed25519PrivateKey,
    ed448.Ed448PrivateKey,
)


def pkcs8_key_and_chain(cert: trustme.LeafCert, password: str | None = None) -> bytes:
    """Kafka's PEM key store: a PKCS#8 key (encrypted with `password` if given) followed by the certificate chain."""
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
    encryption = (
        serialization.NoEncryption() if password is None else serialization.BestAvailableEncryption(password.encode())
    )
    pkcs8 = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    return pkcs8 + b"".join(blob.bytes() for blob in cert.cert_chain_pems)


def pkcs12_store(cert: trustme.LeafCert, password: str) -> bytes:
    """A PKCS12 key store holding the key and its certificate chain."""
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
    assert isinstance(key, PKCS12_KEY_TYPES), key
    chain = [x509.load_pem_x509_certificate(blob.bytes()) for blob in cert.cert_chain_pems]
    return pkcs12.serialize_key_and_certificates(
        b"broker",
        key,
        chain[0],
        chain[1:],
        serialization.BestAvailableEncryption(password.encode()),
    )


def decide(props: dict[str, str], directory: Path, *names: str) -> list[str]:
    """User:alice READ on each topic, decided by the plugin (PluginBench) outside a broker."""
    path = directory / "plugin.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    classpath = f"{TEST_CLASSES}:{PLUGIN_JAR}:{kafka_lib()}/*"
    out = subprocess.run(
        ["java", "-cp", classpath, "io.github.kraftacl.plugin.PluginBench", str(path), "decide", "User:alice", "READ",
         "TOPIC", *names],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return out.stdout.split()


@pytest.mark.parametrize("store", ["PEM", "PEM-encrypted", "PKCS12"])
def test_client_certificate(tmp_path: Path, store: str) -> None:
    plugin_jar()
    ca = trustme.CA()
    server, client = ca.issue_cert("127.0.0.1"), ca.issue_cert("broker.example", common_name="broker")
    files = {
        "ca.pem": ca.cert_pem.bytes(),
        "server.pem": b"".join(blob.bytes() for blob in server.cert_chain_pems),
        "server.key": server.private_key_pem.bytes(),
        "client.pem": pkcs8_key_and_chain(client),
        "client-encrypted.pem": pkcs8_key_and_chain(client, KEY_PASSWORD),
        "client.p12": pkcs12_store(client, KEY_PASSWORD),
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
        keystore = {
            "PEM": {"type": "PEM", "location": str(tmp_path / "client.pem")},
            "PEM-encrypted": {"type": "PEM", "location": str(tmp_path / "client-encrypted.pem")},
            "PKCS12": {"type": "PKCS12", "location": str(tmp_path / "client.p12"), "password": KEY_PASSWORD},
        }[store]
        with_cert = trust | {f"kraft.acl.ssl.keystore.{k}": v for k, v in keystore.items()}
        if store == "PEM-encrypted":
            with_cert["kraft.acl.ssl.key.password"] = KEY_PASSWORD
        assert decide(with_cert, tmp_path, "tls-topic", "other") == ["ALLOWED", "DENIED"]
        assert decide(trust, tmp_path, "tls-topic", "other") == ["DENIED", "DENIED"]  # no certificate: fail closed
    finally:
        serve.stop()
