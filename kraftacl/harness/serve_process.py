"""A real `kraft-acl serve` child process for the tests and the benchmarks: its properties file written from a
dict, started on the ports the properties name, its output collected line by line, asked over real sockets,
stopped by a signal (restartable on the same ports and log).

Not thread-safe: one owner drives start/stop; two daemon threads only collect the child's output lines.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import httpx
import msgspec

from kraftacl.api.endpoints import METRICS_PATH, Endpoint

#: What serve prints (server/process.py `say`): "listening on NAME URL" and "ready: ..." once the initial load is done.
LISTENING = "kraft-acl serve: listening on "
READY = "kraft-acl serve: ready: "


class ServeProcessError(AssertionError):
    """serve did not start, exited, or did not become ready or stop in time; the message carries its output.
    (An AssertionError, so pytest shows it as the failed expectation it is.)"""


_HANDED_OUT: set[int] = set()  # ports `free_port` gave this process (each once)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, below the kernel's ephemeral range and not given
    before by this process: until the caller binds it, no `bind(0)` elsewhere (a Kafka broker's test script picking
    its ports) and no outgoing connection can be handed the same port (a three-node cluster's start once failed so)."""
    low = _ephemeral_low()
    for _ in range(1000):
        port = random.randrange(max(1024, low - 16384), low)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise ServeProcessError(f"no free TCP port on 127.0.0.1 below the ephemeral range ({low})")


def _ephemeral_low() -> int:
    """The first port of net.ipv4.ip_local_port_range (32768 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def kraft_acl_command() -> list[str]:
    """The installed console script, or the module form when the script is not on PATH."""
    script = Path(sys.executable).parent / "kraft-acl"
    if script.exists():
        return [str(script)]
    found = shutil.which("kraft-acl")
    return [found] if found else [sys.executable, "-c", "from kraftacl.main import main; main()"]


class ServeProcess:
    """`kraft-acl serve --config <directory>/server.properties`, in its own process group."""

    def __init__(self, directory: Path, properties: Mapping[str, str], env: Mapping[str, str] | None = None) -> None:
        self.directory = directory
        self.properties = dict(properties)
        self.config = directory / "server.properties"
        self.env = {**os.environ, **(env or {})}
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.proc: subprocess.Popen[str] | None = None
        self._changed = threading.Condition()
        self._write_config()

    def _write_config(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.config.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()), encoding="utf-8")

    def start(self, wait_ready: bool = True, timeout: float = 120.0) -> ServeProcess:
        """Write the config, spawn serve, wait until every early-start listener listens (and until it is ready)."""
        self._write_config()
        self.stdout, self.stderr = [], []
        self.proc = subprocess.Popen(
            [*kraft_acl_command(), "serve", "--config", str(self.config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env,
            start_new_session=True,  # signals reach serve's whole group, never the test runner
        )
        for stream, sink in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()
        early = [n.strip() for n in self.properties.get("early.start.listeners", "").split(",") if n.strip()]
        self._wait(lambda: all(self._listening(n) for n in early), timeout, "its early-start listeners to listen")
        if wait_ready:
            self.wait_ready(timeout)
        else:
            self.wait_for(LISTENING, timeout)
        return self

    def _pump(self, stream: IO[str], sink: list[str]) -> None:
        for line in stream:
            with self._changed:
                sink.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _listening(self, name: str) -> bool:
        return any(line.startswith(f"{LISTENING}{name} ") for line in self.stdout)

    @property
    def ready(self) -> bool:
        """True once serve printed its ready line (this run)."""
        return any(line.startswith(READY) for line in self.stdout)

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Wait for the `ready:` line (initial load complete, every listener open)."""
        self._wait(lambda: self.ready, timeout, "the initial load")

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        """The first stdout line containing `text`, once there is one."""
        found: list[str] = []

        def seen() -> bool:
            found.extend(line for line in self.stdout if text in line)
            return bool(found)

        self._wait(seen, timeout, f"a line with {text!r}")
        return found[0]

    def _wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not done():
                if self.proc is None or self.proc.poll() is not None:
                    self._changed.wait(0.2)  # the last lines of a process that just exited
                    code = None if self.proc is None else self.proc.returncode
                    raise ServeProcessError(f"kraft-acl serve exited ({code}) waiting for {what}:\n{self.output()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ServeProcessError(f"kraft-acl serve: no {what} within {timeout:.0f}s:\n{self.output()}")
                self._changed.wait(min(left, 0.2))

    def url(self, listener: str) -> str:
        """http(s)://host:port of a listener, from the listeners property (known before it opens)."""
        for piece in self.properties["listeners"].split(","):
            name, _, address = piece.strip().partition("://")
            if name == listener:
                tls = f"{name}:SSL" in self.properties.get("listener.security.protocol.map", "")
                return f"{'https' if tls else 'http'}://{address}"
        raise ServeProcessError(f"no listener {listener} in {self.properties['listeners']}")

    def client(self, listener: str = "CLIENT", token: str | None = None, **kwargs: Any) -> httpx.Client:
        """A keep-alive HTTP client on one listener, with a bearer token when given."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url(listener), headers=headers, **{"timeout": 30.0, **kwargs})

    def call(self, endpoint: Endpoint[Any, Any], token: str, body: object = None, listener: str = "") -> Any:
        """One call of an endpoint of the contract: (status, decoded JSON body), on a listener (default: the first)."""
        name = listener or self.properties["listeners"].split("://", 1)[0].strip()
        content = None if body is None else msgspec.json.encode(body)
        with self.client(name, token, timeout=600.0) as http:
            answer = http.request(endpoint.method, endpoint.path, content=content)
        return answer.status_code, msgspec.json.decode(answer.content or b"null")

    @property
    def pid(self) -> int | None:
        """The child's pid while it runs."""
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Signal serve's group (SIGTERM: it drains and closes its log) and wait; its exit code. SIGKILL and
        ServeProcessError when it has not exited within `timeout`."""
        proc = self.proc
        if proc is None:
            return 0
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            late = f"serve did not stop within {timeout}s after signal {sig}"
            raise ServeProcessError(f"{late}:\n{self.output()}") from None

    def pause(self) -> None:
        """SIGSTOP: the process hangs, its sockets stay open (a frozen or unreachable serve)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after `pause`."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGCONT)

    def metrics_text(self, token: str, listener: str = "") -> str:
        """GET /metrics (Prometheus' text format)."""
        name = listener or self.properties["listeners"].split("://", 1)[0].strip()
        with self.client(name, token, timeout=60.0) as http:
            answer = http.get(METRICS_PATH)
        answer.raise_for_status()
        return answer.text

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)

    def output(self) -> str:
        """Everything the process printed so far."""
        return "\n".join(["--- stdout", *self.stdout, "--- stderr", *self.stderr])

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
