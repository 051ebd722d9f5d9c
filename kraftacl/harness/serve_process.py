"""A `kraft-acl serve` child process for the plugin benchmark and the broker tests: its properties file written
from a dict, its listener URLs read from the lines it prints, stopped by SIGTERM (or killed).

Not thread-safe: one owner drives start/stop; a daemon thread only collects the child's stdout lines.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: What serve prints (server/process.py `say`): "listening on NAME URL" and "NAME URL opens after the initial load".
_LISTENING = "kraft-acl serve: listening on "
_READY = "kraft-acl serve: ready: "


class ServeProcessError(RuntimeError):
    """serve did not start, exited, or did not become ready in time; the message carries its output."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServeProcess:
    """`kraft-acl serve --config <directory>/server.properties`, restartable on the same ports and log."""

    def __init__(self, directory: Path, props: Mapping[str, str]) -> None:
        self.directory = directory
        self.props = dict(props)
        self.config = directory / "server.properties"
        self.stderr_path = directory / "serve.err"
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._proc: subprocess.Popen[str] | None = None

    def start(self, wait_ready: bool = True, timeout: float = 120.0) -> None:
        """Write the config, spawn serve, wait until every early listener listens (and it is ready)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.config.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()), encoding="utf-8")
        self.lines = []
        with open(self.stderr_path, "ab") as err:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", "from kraftacl.main import main; main()", "serve", "--config", str(self.config)],
                stdout=subprocess.PIPE,
                stderr=err,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
        threading.Thread(target=self._read, args=(self._proc,), daemon=True).start()
        early = [n.strip() for n in self.props.get("early.start.listeners", "").split(",") if n.strip()]
        self._wait(lambda: all(self._listening(n) for n in early), timeout, "its early-start listeners to listen")
        if wait_ready:
            self.wait_ready(timeout)

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _listening(self, name: str) -> bool:
        return any(line.startswith(f"{_LISTENING}{name} ") for line in self.lines)

    @property
    def ready(self) -> bool:
        """True once serve printed its ready line (this run)."""
        return any(line.startswith(_READY) for line in self.lines)

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Wait for the `ready:` line (initial load complete, every listener open)."""
        self._wait(lambda: self.ready, timeout, "the initial load")

    def _wait(self, done: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not done():
                if self._proc is None or self._proc.poll() is not None:
                    raise ServeProcessError(f"kraft-acl serve exited while waiting for {what}:\n{self.output()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ServeProcessError(f"kraft-acl serve: no {what} within {timeout:.0f}s:\n{self.output()}")
                self._changed.wait(min(left, 0.2))

    def url(self, listener: str) -> str:
        """http://host:port of a listener, from the listeners property."""
        for piece in self.props["listeners"].split(","):
            name, _, address = piece.strip().partition("://")
            if name == listener:
                return f"http://{address}"
        raise ServeProcessError(f"no listener {listener} in {self.props['listeners']}")

    def call(self, method: str, path: str, token: str, body: object | None = None, listener: str = "") -> Any:
        """One JSON call (status, decoded body) on a listener (the first one by default)."""
        base = self.url(listener or self.props["listeners"].split("://", 1)[0].strip())
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {token}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=600) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    @property
    def pid(self) -> int | None:
        """The child's pid while it runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (serve drains and closes its log), SIGKILL after `timeout`."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._proc = None

    def pause(self) -> None:
        """SIGSTOP: the process hangs, its sockets stay open (a frozen or unreachable serve)."""
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after `pause`."""
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGCONT)

    def metrics_text(self, token: str, listener: str = "") -> str:
        """GET /metrics (Prometheus' text format)."""
        base = self.url(listener or self.props["listeners"].split("://", 1)[0].strip())
        request = urllib.request.Request(base + "/metrics")
        request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=60) as answer:
            text: str = answer.read().decode()
            return text

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        self._proc = None

    def output(self) -> str:
        """stdout lines and the tail of stderr, for failure messages."""
        err = self.stderr_path.read_text(errors="replace").splitlines()[-30:] if self.stderr_path.exists() else []
        return "\n".join([*self.lines, "--- stderr ---", *err])
