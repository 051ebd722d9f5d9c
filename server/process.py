"""The `kraft-acl serve` process: open the log, bind every listener, serve the early-start ones at once, load
the ACLs (KIP-801), then open the other listeners and tail the log; on SIGTERM/SIGINT stop cleanly.

One process, one asyncio (uvloop) event loop that answers every request; the initial load runs on a
daemon thread, the tailer on its own thread, ACL writes on one writer thread. A listener that is not
early-start is bound at start-up (so a port conflict fails at once) but only listens after the load:
until then its port refuses connections, as a Kafka broker's does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import ssl
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import uvloop

from kraftacl.api.endpoints import IMPORT_ACLS
from kraftacl.authorizer.state.loader import OnPublish
from kraftacl.authorizer.state.node import AclNode
from kraftacl.server.announce import Announcer
from kraftacl.server.api import Api
from kraftacl.server.auth import Authenticator, load_tokens, principal_of_cert
from kraftacl.server.config import Listener, ServeConfig
from kraftacl.server.context import ServeState
from kraftacl.server.controller_role import ControllerRole
from kraftacl.server.decision_log import AclIds, DecisionLog
from kraftacl.server.http import Connections, HttpProtocol, Limits
from kraftacl.server.log_backend import ServeError, open_backend
from kraftacl.server.metrics import ServeMetrics
from kraftacl.snapshots.policy import SnapshotPolicy

log = logging.getLogger("kraft_acl.serve")


def tls_context(listener: Listener) -> ssl.SSLContext | None:
    """The server-side TLS context of an SSL listener (mutual TLS when client certificates are required)."""
    tls = listener.tls
    if tls is None:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(tls.certfile, tls.keyfile)
        if tls.cafile is not None:
            ctx.load_verify_locations(cafile=str(tls.cafile))
    except (OSError, ssl.SSLError) as exc:
        raise ServeError(f"listener {listener.name}: cannot load its certificate, key or CA file: {exc}") from exc
    ctx.verify_mode = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL}.get(
        tls.client_auth, ssl.CERT_NONE
    )
    return ctx


def bind(listener: Listener) -> socket.socket:
    """A bound (not yet listening) socket for the listener; the port is taken now, connections refused until listen."""
    family = socket.AF_INET6 if ":" in listener.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((listener.host, listener.port))
    except OSError as exc:
        sock.close()
        raise ServeError(
            f"listener {listener.name}: cannot bind {listener.host}:{listener.port}: {exc.strerror}"
        ) from exc
    sock.setblocking(False)
    return sock


def build_state(config: ServeConfig) -> ServeState:
    """Open the log and build the node, metrics and decision log (nothing is loaded yet)."""
    backend = open_backend(config)
    lc = config.log
    node = AclNode(
        backend,
        snapshot_dir=lc.snapshot_dir,
        config=config.authorizer,
        policy=SnapshotPolicy(lc.snapshot_max_records, lc.snapshot_max_bytes) if config.writes_snapshots else None,
        retain_snapshots=lc.snapshot_retain,
    )
    if lc.snapshot_dir is not None and config.writes_snapshots:
        lc.snapshot_dir.mkdir(parents=True, exist_ok=True)
    holder: list[ServeState] = []
    metrics = ServeMetrics(
        acl_count=lambda: float(len(node.authorizer.state()[0])),
        last_offset=lambda: float(node.authorizer.state()[1]),
        lag=lambda: _lag(holder[0]),
        ready=lambda: 1.0 if node.ready else 0.0,
        log_error=lambda: _log_error(holder[0]),
        diverged=lambda: _diverged(holder[0]),
    )
    ids = AclIds(lambda: node.loader.image)
    node.loader.publishers.append(OnPublish(ids.on_change))
    decision_log = None
    if config.decision_log is not None:
        ids.enable()  # maintained from the first publish on
        decision_log = DecisionLog(config.decision_log, config.decision_log_max_bytes, config.decision_log_backups, ids)
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kraft-acl-writer")
    state = ServeState(
        config,
        node,
        metrics,
        decision_log,
        ids,
        writer,
        ControllerRole(config, backend, writer),
        trusted=config.broker_principals | config.authorizer.super_users,
    )
    node.loader.publishers.append(OnPublish(state.changes.on_change))
    holder.append(state)
    return state


def _lag(state: ServeState) -> float:
    tail = state.tailer.status() if state.tailer is not None else None
    return float("nan") if tail is None or tail.lag is None else float(tail.lag)


def _log_error(state: ServeState) -> float:
    tail = state.tailer.status() if state.tailer is not None else None
    return 1.0 if tail is not None and tail.last_error is not None and tail.diverged is None else 0.0


def _diverged(state: ServeState) -> float:
    tail = state.tailer.status() if state.tailer is not None else None
    return 1.0 if tail is not None and tail.diverged is not None else 0.0


class Serve:
    """The running process: listeners, the initial load, the tailer, and shutdown."""

    def __init__(self, config: ServeConfig, state: ServeState, api: Api, out: Announcer | None = None) -> None:
        self.config = config
        self.out = out or Announcer()
        self.state = state
        self.api = api
        self.connections = Connections()
        self.limits = Limits(
            config.request_max_bytes,
            config.idle_timeout_s,
            config.request_timeout_s,
            {IMPORT_ACLS.path.encode(): (config.import_max_bytes, "import.max.bytes")},
        )
        self.contexts = {listener.name: tls_context(listener) for listener in config.listeners}
        self.sockets = {listener.name: bind(listener) for listener in config.listeners}
        self.servers: list[asyncio.AbstractServer] = []
        self.stop = asyncio.Event()

    def _factory(self, listener: Listener) -> Callable[[], HttpProtocol]:
        return lambda: HttpProtocol(self.api.dispatch, listener.name, self.limits, self.connections, principal_of_cert)

    async def _open(self, listener: Listener, note: str) -> None:
        sock = self.sockets[listener.name]
        server = await asyncio.get_running_loop().create_server(
            self._factory(listener), sock=sock, ssl=self.contexts[listener.name], backlog=1024
        )
        self.servers.append(server)
        url = listener.url(sock.getsockname()[1])
        self.out.say(
            "listening",
            f"listening on {listener.name} {url}{note}",
            listener=listener.name,
            url=url,
            early_start=listener.early_start,
        )

    async def run(self) -> None:
        """Serve until SIGTERM/SIGINT; raises ServeError when the initial load fails."""
        loop = asyncio.get_running_loop()
        self.state.changes.bind(loop)
        self.state.freeze.start(loop)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop.set)
        early = [listener for listener in self.config.listeners if listener.early_start]
        for listener in early:
            await self._open(listener, " (early start: super users only until the ACLs are loaded)")
        for listener in self.config.listeners:
            if not listener.early_start:
                port = self.sockets[listener.name].getsockname()[1]
                url = listener.url(port)
                self.out.say(
                    "waiting", f"{listener.name} {url} opens after the initial load", listener=listener.name, url=url
                )
        loaded = await self._initial_load()
        if loaded:
            for listener in self.config.listeners:
                if not listener.early_start:
                    await self._open(listener, "")
            self.state.tailer = self.state.node.tail(self.config.log.poll_interval_s)
            index, offset = self.state.authorizer.state()
            self.out.say(
                "ready", f"ready: {len(index)} ACLs, last applied offset {offset}", acls=len(index), offset=offset
            )
            self.state.role.start()
            await self.stop.wait()
        await self._shutdown()

    async def _initial_load(self) -> bool:
        """Snapshot then log tail to the high-water mark, on a daemon thread; False if stopped first."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def load() -> None:
            try:
                self.state.node.start()
            except BaseException as exc:
                loop.call_soon_threadsafe(_settle, done, exc)
            else:
                loop.call_soon_threadsafe(_settle, done, None)

        threading.Thread(target=load, name="kraft-acl-initial-load", daemon=True).start()
        stopping: asyncio.Future[None] = asyncio.ensure_future(self._stopped())
        await asyncio.wait([done, stopping], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not done.done():
            self.out.say("stopped", "stopped before the initial load completed", loaded=False)
            return False
        error = done.exception()
        if error is not None:
            raise ServeError(f"the initial load failed: {error}") from error
        return True

    async def _stopped(self) -> None:
        await self.stop.wait()

    async def _shutdown(self) -> None:
        """Stop accepting, let in-flight requests finish (bounded), stop tailing, close the log."""
        for server in self.servers:
            server.close()
        self.state.changes.close()  # the change feed's waiting polls answer now, not after their wait_ms
        self.connections.close_idle()
        deadline = asyncio.get_running_loop().time() + self.config.shutdown_timeout_s
        while self.connections.busy() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self.connections.open):
            if conn.transport is not None:
                conn.transport.close()
        self.state.role.stop()  # leave the election first: a standby takes over at once
        self.state.writer.shutdown(wait=True, cancel_futures=True)
        if self.state.tailer is not None:
            self.state.tailer.stop()
        if self.state.decision_log is not None:
            self.state.decision_log.close()
        self.state.node.close()
        self.out.say("stopped", "stopped", loaded=True)


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


def serve(config: ServeConfig, out: Announcer | None = None) -> int:
    """Run serve until stopped, its status lines through `out` (text on stdout by default); 0 on a clean stop.
    ServeError when it cannot start or the load fails."""
    tokens = load_tokens(config.token_file) if config.token_file is not None else {}
    state = build_state(config)
    try:
        process = Serve(config, state, Api(state, Authenticator(tokens)), out)
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(process.run())
    except ServeError:
        with contextlib.suppress(Exception):
            state.node.close()
        raise
    return 0


def setup_logging(config: ServeConfig) -> None:
    """Logs to stderr, as text or JSON lines, at log.level (Kafka's audit logger logs denials at INFO)."""
    handler = logging.StreamHandler(sys.stderr)
    if config.log_format == "json":
        from pythonjsonlogger.json import JsonFormatter

        handler.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s", timestamp=True))
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(config.log_level)
