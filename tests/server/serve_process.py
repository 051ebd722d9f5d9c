"""What serve's tests share around the one serve driver (`kraftacl.harness.serve_process.ServeProcess`): tokens,
a controller+broker configuration on free loopback ports, and a decision asked as the broker.

Immutable constants and pure helpers.
"""

from __future__ import annotations

import re
import ssl
import time
from collections.abc import Mapping
from pathlib import Path

import trustme

from kraftacl.api.endpoints import AUTHORIZE
from kraftacl.api.wire import ActionIn, AuthorizeIn
from kraftacl.harness.serve_process import ServeProcess, free_port

__all__ = ["ServeProcess", "free_port"]  # the driver, for the tests that import it from here

ADMIN_TOKEN = "admin-token-0123456789abcdef"
BROKER_TOKEN = "broker-token-0123456789abcdef"
ALICE_TOKEN = "alice-token-0123456789abcdef"
TOKENS = {"User:admin": ADMIN_TOKEN, "User:broker": BROKER_TOKEN, "User:alice": ALICE_TOKEN}
#: The ACL `alice_reads` asks about: User:alice may READ topic orders (the API's JSON form).
ALICE_READ_ORDERS = {
    "resource_type": "TOPIC",
    "resource_name": "orders",
    "pattern_type": "LITERAL",
    "principal": "User:alice",
    "host": "*",
    "operation": "READ",
    "permission_type": "ALLOW",
}


def write_tokens(path: Path, tokens: Mapping[str, str] = TOKENS) -> Path:
    """An auth.token.file, readable by its owner only (serve warns about one that group or others may read)."""
    path.write_text("".join(f"{principal} {token}\n" for principal, token in tokens.items()))
    path.chmod(0o600)
    return path


def base_properties(work: Path, log_dir: Path | None = None, **extra: str) -> dict[str, str]:
    """A controller+broker serve on two loopback listeners (CONTROLLER early start) with bearer tokens."""
    work.mkdir(parents=True, exist_ok=True)
    props = {
        "node.id": "1",
        "process.roles": "broker,controller",
        "listeners": f"CONTROLLER://127.0.0.1:{free_port()},CLIENT://127.0.0.1:{free_port()}",
        "early.start.listeners": "CONTROLLER",
        "super.users": "User:admin",
        "metadata.log.dir": str(log_dir or work / "log"),
        "auth.token.file": str(write_tokens(work / "tokens")),
        "broker.principals": "User:broker",
        "auth.public.endpoints": "status,metrics",
    }
    props.update({k.replace("_", "."): v for k, v in extra.items()})
    return props


def alice_reads(serve: ServeProcess, topic: str = "orders") -> str:
    """serve's decision, asked as the broker, on User:alice from 10.0.0.1 reading `topic`."""
    body = AuthorizeIn("User:alice", "10.0.0.1", [ActionIn("READ", "TOPIC", topic)])
    status, answer = serve.call(AUTHORIZE, BROKER_TOKEN, body, listener="CLIENT")
    assert status == 200, answer
    return str(answer["results"][0])


def add_tls_listener(props: dict[str, str], work: Path) -> ssl.SSLContext:
    """Add a TLS listener (server certificate only: bearer tokens) to `props`; the client context trusting it."""
    ca = trustme.CA()
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(work / "server.pem"))
    props["listeners"] += f",TLS://127.0.0.1:{free_port()}"
    props.update(
        {
            "listener.security.protocol.map": "TLS:SSL",
            "ssl.certfile": str(work / "server.pem"),
            "ssl.keyfile": str(work / "server.pem"),
        }
    )
    client_tls = ssl.create_default_context()
    ca.configure_trust(client_tls)
    return client_tls


READER_READY = re.compile(r"heavy reads: reader process (\d+) ready on (http://\S+)")


def reader_pid(serve: ServeProcess, timeout: float = 60.0) -> int:
    """The pid of serve's reader process (heavy.reads.process), once it announced itself."""
    deadline = time.monotonic() + timeout
    while not (found := READER_READY.findall(serve.output())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found, f"no reader process announced:\n{serve.output()}"
    return int(found[0][0])
