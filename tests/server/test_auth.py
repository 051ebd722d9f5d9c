"""Callers of serve: bearer tokens, mutual TLS, anonymous listeners, and what each may do (401 / 403)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme

from kraftacl.metadata_log.backends.file.log import FileLog
from tests.server.serve_process import ADMIN_TOKEN, ALICE_TOKEN, BROKER_TOKEN, ServeProcess, base_properties, free_port

ACL = {
    "resource_type": "TOPIC",
    "resource_name": "t",
    "pattern_type": "LITERAL",
    "principal": "User:bob",
    "host": "*",
    "operation": "READ",
    "permission_type": "ALLOW",
}


def _authorize_body(principal: str) -> dict[str, object]:
    return {
        "principal": principal,
        "client_address": "10.0.0.1",
        "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}],
    }


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, trustme.CA, Path]]:
    """A serve with an SSL listener requiring client certificates (mTLS) and a PLAINTEXT one open to ANONYMOUS."""
    work = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    server_cert = ca.issue_cert("127.0.0.1", "localhost")
    server_cert.private_key_and_cert_chain_pem.write_to_path(str(work / "server.pem"))
    ca.cert_pem.write_to_path(str(work / "ca.pem"))
    props = base_properties(work)
    props.update(
        {
            "listeners": f"CONTROLLER://127.0.0.1:{free_port()},CLIENT://127.0.0.1:{free_port()},INTERNAL://127.0.0.1:{free_port()}",
            "listener.security.protocol.map": "CLIENT:SSL",
            "ssl.certfile": str(work / "server.pem"),
            "ssl.keyfile": str(work / "server.pem"),
            "ssl.cafile": str(work / "ca.pem"),
            "auth.anonymous.listeners": "INTERNAL",
            "auth.public.endpoints": "",
        }
    )
    with ServeProcess(work, props).start() as serve:
        yield serve, ca, work


def _mtls_client(serve: ServeProcess, ca: trustme.CA, issuer: trustme.CA, cn: str, work: Path) -> httpx.Client:
    ctx = ssl.create_default_context()
    ca.configure_trust(ctx)
    issuer.issue_cert(f"{cn}@example.com", common_name=cn).configure_cert(ctx)
    return httpx.Client(base_url=serve.url("CLIENT"), verify=ctx, timeout=30)


def test_no_credentials_and_a_wrong_token_get_401(tls: tuple[ServeProcess, trustme.CA, Path]) -> None:
    serve, _, _ = tls
    for token in (None, "not-a-token-anyone-holds-000"):
        with serve.client("CONTROLLER", token=token) as client:
            response = client.post("/v1/authorize", json=_authorize_body("User:alice"))
            assert response.status_code == 401
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert response.json()["error"]["code"] == "UNAUTHENTICATED"
            assert client.get("/v1/status").status_code == 401  # not public in this configuration


def test_client_certificate_maps_to_its_common_name(tls: tuple[ServeProcess, trustme.CA, Path]) -> None:
    serve, ca, work = tls
    with _mtls_client(serve, ca, ca, "alice", work) as alice:
        assert alice.post("/v1/authorize", json=_authorize_body("User:alice")).json()["results"] == ["DENIED"]
        other = alice.post("/v1/authorize", json=_authorize_body("User:bob"))
        assert (
            other.status_code == 403
            and "User:alice may ask decisions only about itself" in other.json()["error"]["message"]
        )


def test_certificate_from_another_ca_is_refused_at_the_handshake(tls: tuple[ServeProcess, trustme.CA, Path]) -> None:
    serve, ca, work = tls
    with _mtls_client(serve, ca, trustme.CA(), "admin", work) as impostor, pytest.raises(httpx.HTTPError):
        impostor.post("/v1/authorize", json=_authorize_body("User:admin"))
    no_cert = ssl.create_default_context()
    ca.configure_trust(no_cert)
    with (
        httpx.Client(base_url=serve.url("CLIENT"), verify=no_cert) as anonymous,
        pytest.raises(httpx.HTTPError),
    ):
        anonymous.get("/v1/status")


def test_non_admin_may_not_create_or_describe_and_nothing_is_written(
    tls: tuple[ServeProcess, trustme.CA, Path],
) -> None:
    serve, ca, work = tls
    log_dir = Path(serve.properties["metadata.log.dir"])
    with FileLog(log_dir, read_only=True) as log:
        before = log.high_watermark()
    with serve.client("CONTROLLER", token=ALICE_TOKEN) as alice:
        for path, body in (
            ("/v1/acls/create", {"acls": [ACL]}),
            ("/v1/acls/delete", {"filters": [{}]}),
            ("/v1/acls/describe", {}),
        ):
            response = alice.post(path, json=body)
            assert response.status_code == 403, path
            assert response.json()["error"]["code"] == "CLUSTER_AUTHORIZATION_FAILED"
    with _mtls_client(serve, ca, ca, "mallory", work) as mallory:
        assert mallory.post("/v1/acls/create", json={"acls": [ACL]}).status_code == 403
    with FileLog(log_dir, read_only=True) as log:
        assert log.high_watermark() == before


def test_cluster_acls_let_a_non_broker_administer(tls: tuple[ServeProcess, trustme.CA, Path]) -> None:
    serve, _, _ = tls
    grant = {
        "resource_type": "CLUSTER",
        "resource_name": "kafka-cluster",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "ALTER",
        "permission_type": "ALLOW",
    }
    with serve.client("CONTROLLER", token=ADMIN_TOKEN) as admin, serve.client("CONTROLLER", token=ALICE_TOKEN) as alice:
        assert admin.post("/v1/acls/create", json={"acls": [grant]}).json()["results"][0]["error_code"] == 0
        created = alice.post("/v1/acls/create", json={"acls": [ACL]})
        assert created.status_code == 200 and created.json()["results"][0]["error_code"] == 0
        assert alice.post("/v1/acls/describe", json={}).status_code == 200  # ALTER implies DESCRIBE
        admin.post("/v1/acls/delete", json={"filters": [{"principal": "User:alice"}, {"principal": "User:bob"}]})


def test_anonymous_listener_callers_are_user_anonymous(tls: tuple[ServeProcess, trustme.CA, Path]) -> None:
    serve, _, _ = tls
    with serve.client("INTERNAL", token=None) as anonymous:
        assert anonymous.get("/v1/status").status_code == 200
        assert anonymous.post("/v1/authorize", json=_authorize_body("User:ANONYMOUS")).status_code == 200
        assert anonymous.post("/v1/authorize", json=_authorize_body("User:alice")).status_code == 403
    with serve.client("INTERNAL", token=BROKER_TOKEN) as broker:  # a token still names its holder there
        assert broker.post("/v1/authorize", json=_authorize_body("User:alice")).status_code == 200
