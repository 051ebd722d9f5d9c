"""A real `kraft-acl serve` process for tests: written config, free loopback ports, started, read, stopped.

Each `ServeProcess` owns one child process; `stop()` sends SIGTERM and waits. Not thread-safe.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import kraft_acl_command

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


def free_port() -> int:
    """A loopback port that is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_tokens(path: Path, tokens: Mapping[str, str] = TOKENS) -> Path:
    """An auth.token.file."""
    path.write_text("".join(f"{principal} {token}\n" for principal, token in tokens.items()))
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


class ServeProcess:
    """`kraft-acl serve --config <work>/server.properties` with its output collected line by line."""

    def __init__(self, work: Path, properties: Mapping[str, str], env: Mapping[str, str] | None = None) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.work = work
        self.properties = dict(properties)
        self.config = work / "server.properties"
        self.config.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()))
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.urls: dict[str, str] = {}
        self.proc: subprocess.Popen[str] | None = None
        self.env = {**os.environ, **(env or {})}

    def listener_url(self, name: str) -> str:
        """The http(s) URL of a listener from the config (known before it opens)."""
        for piece in self.properties["listeners"].split(","):
            lname, _, hostport = piece.partition("://")
            if lname == name:
                scheme = (
                    "https" if f"{name}:SSL" in self.properties.get("listener.security.protocol.map", "") else "http"
                )
                return f"{scheme}://{hostport}"
        raise KeyError(name)

    def start(self, wait_ready: bool = True, timeout: float = 60.0) -> ServeProcess:
        """Start; wait for `ready` (or only for the early listeners when `wait_ready` is false)."""
        self.proc = subprocess.Popen(
            [*kraft_acl_command(), "serve", "--config", str(self.config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.stdout), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr), daemon=True).start()
        self.wait_for("ready:" if wait_ready else "listening on", timeout)
        return self

    @staticmethod
    def _pump(stream: Any, sink: list[str]) -> None:
        for line in stream:
            sink.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        """Wait until a stdout line contains `text`; fail with the output if the process exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.stdout):
                if text in line:
                    return line
            if self.proc is not None and self.proc.poll() is not None:
                time.sleep(0.2)
                raise AssertionError(f"serve exited with {self.proc.returncode}:\n{self.output()}")
            time.sleep(0.02)
        raise AssertionError(f"serve did not print {text!r} within {timeout}s:\n{self.output()}")

    def output(self) -> str:
        """Everything the process printed so far."""
        return "\n".join(["--- stdout", *self.stdout, "--- stderr", *self.stderr])

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        """Signal and wait; the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"serve did not stop within {timeout}s after signal {sig}:\n{self.output()}") from None

    def client(self, listener: str = "CLIENT", token: str | None = ADMIN_TOKEN, **kwargs: Any) -> httpx.Client:
        """A keep-alive client for one listener."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.listener_url(listener), headers=headers, **{"timeout": 30.0, **kwargs})

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def alice_reads(serve: ServeProcess, topic: str = "orders") -> str:
    """serve's decision, asked as the broker, on User:alice from 10.0.0.1 reading `topic`."""
    body = {
        "principal": "User:alice",
        "client_address": "10.0.0.1",
        "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": topic}],
    }
    with serve.client(token=BROKER_TOKEN) as client:
        return str(client.post("/v1/authorize", json=body).json()["results"][0])
