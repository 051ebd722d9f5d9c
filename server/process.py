"""The `kraft-acl serve` process: hold every listener's port, open the log, serve the early-start listeners at
once, load the ACLs (KIP-801), then open the other listeners and tail the log; on SIGTERM/SIGINT stop cleanly.

One process, one asyncio (uvloop) event loop that answers every request; the initial load runs on a
daemon thread, the tailer on its own thread, ACL writes on one writer thread. Every port is taken before any
file is created (`server.listeners`), so a port conflict exits with nothing written. A listener that is not
early-start only listens after the load: until then its port refuses connections, as a Kafka broker's does.
The GIL switch interval is 0.2 ms instead of 5: a thread running Python code (an import, a tail of many records,
the decision log's writer) then gives the loop the GIL back within 0.2 ms when a decision arrives (BENCHMARKS.md,
"the GIL's switch interval": a broker's p99 during a 200k-ACL import about halved against 1 ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import socket
import sys
import threading

import uvloop

from kraftacl.metadata_log.pace import lower_paced_threads_by
from kraftacl.server.announce import Announcer
from kraftacl.server.api import Api
from kraftacl.server.auth import Authenticator, load_tokens, principal_of_cert
from kraftacl.server.config import Listener, ServeConfig
from kraftacl.server.connections import Connections
from kraftacl.server.context import ServeState
from kraftacl.server.http import HttpProtocol
from kraftacl.server.listeners import bind_all, ready_to_listen, tls_context
from kraftacl.server.log_backend import LogDirectoryMissingError, ServeError
from kraftacl.server.log_format import OneLineFormatter
from kraftacl.server.log_queue import LogQueue
from kraftacl.server.reader import Reader
from kraftacl.server.state_build import build_state, warn_if_exposed
from kraftacl.server.tls_listener import TlsListener

SWITCH_INTERVAL_S = 0.0002
BACKLOG = 1024

log = logging.getLogger("kraft_acl.serve")


class Serve:
    """The running process: listeners, the initial load, the tailer, and shutdown."""

    def __init__(
        self,
        config: ServeConfig,
        state: ServeState,
        api: Api,
        sockets: dict[str, socket.socket],
        conns: Connections,
        out: Announcer | None = None,
    ) -> None:
        self.config = config
        self.out = out or Announcer()
        self.state = state
        self.api = api
        self.connections = conns
        self.contexts = {listener.name: tls_context(listener) for listener in config.listeners}
        self.sockets = sockets
        self.servers: list[asyncio.AbstractServer | TlsListener] = []
        self.stop = asyncio.Event()
        self._stop_flag = threading.Event()  # `stop`, for the load thread

    def _factory(self, listener: Listener) -> functools.partial[HttpProtocol]:
        """A new connection's protocol (called with the `Handshake` that held its place, on a TLS listener)."""
        api, limits, trusted = self.api, self.config.limits, self.state.trusted
        return functools.partial(
            HttpProtocol, api.admit, api.dispatch, listener, limits, self.connections, principal_of_cert, trusted
        )

    async def _open(self, listener: Listener, note: str) -> None:
        sock = self.sockets[listener.name]
        ready_to_listen(sock)
        tls = self.contexts[listener.name]
        server: asyncio.AbstractServer | TlsListener
        if tls is None:
            server = await asyncio.get_running_loop().create_server(self._factory(listener), sock=sock, backlog=BACKLOG)
        else:  # counted from the accept, its handshake included
            timeout = self.config.limits.request_timeout_s
            server = TlsListener(sock, listener, tls, self._factory(listener), self.connections, timeout)
            server.start(BACKLOG)
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
        self.state.stopping = self.stop
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
            # a node that reads when asked (serve's reader process) does not long-poll: it applies nothing unasked
            follow = self.config.log
            self.state.tailer = self.state.node.tail(follow.poll_interval_s, long_poll=not follow.poll_on_request)
            index, offset = self.state.authorizer.state()
            self.out.say(
                "ready", f"ready: {len(index)} ACLs, last applied offset {offset}", acls=len(index), offset=offset
            )
            self.state.role.start()
            if self.config.heavy_reads_process != "off":
                self.state.reader = Reader(self.config, self.out.say, self.state.metrics.figures.heavy_reads)
                self.state.reader.maybe_start(len(index))
            await self.stop.wait()
        await self._shutdown()

    async def _initial_load(self) -> bool:
        """Snapshot then log tail to the high-water mark, on a daemon thread; False if stopped first."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def load() -> None:
            try:
                self._start_node()
            except BaseException as exc:
                loop.call_soon_threadsafe(_settle, done, exc)
            else:
                loop.call_soon_threadsafe(_settle, done, None)

        threading.Thread(target=load, name="kraft-acl-initial-load", daemon=True).start()
        stopping: asyncio.Future[None] = asyncio.ensure_future(self._stopped())
        await asyncio.wait([done, stopping], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not done.done() or self.stop.is_set():
            self.out.say("stopped", "stopped before the initial load completed", loaded=False)
            return False
        error = done.exception()
        if error is not None:
            raise ServeError(f"the initial load failed: {error}") from error
        return True

    def _start_node(self) -> None:
        """The node's start (on the load thread); a broker-role serve whose log directory does not exist yet
        waits for it, not ready, and says so in /v1/status."""
        waited = False
        while True:
            try:
                self.state.node.start()
                self.state.start_error = None
                return
            except LogDirectoryMissingError as exc:
                if not waited:
                    self.out.say("waiting", f"waiting for the metadata log: {exc}", reason=str(exc))
                    waited = True
                self.state.start_error = str(exc)
                if self._stop_flag.wait(self.config.log.poll_interval_s * 10):
                    raise ServeError("stopped while waiting for the metadata log") from exc

    async def _stopped(self) -> None:
        await self.stop.wait()
        self._stop_flag.set()

    async def _shutdown(self) -> None:
        """Stop accepting, let in-flight requests finish (bounded), stop tailing, close the log."""
        for server in self.servers:
            server.close()
        for sock in self.sockets.values():
            sock.close()  # a listener that never listened (stopped during the load) too
        self.state.changes.close()  # the change feed's waiting polls answer now, not after their wait_ms
        self.connections.close_idle()
        deadline = asyncio.get_running_loop().time() + self.config.shutdown_timeout_s
        while self.connections.busy() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        for conn in list(self.connections.open):
            conn.abort()
        if self.state.reader is not None:  # after the drain: answers relayed from the reader finish first
            await self.state.reader.stop()
        if self.state.write_recovery is not None:
            self.state.write_recovery.stop()
        self.state.role.stop()  # leave the election first: a standby takes over at once
        self.state.writer.shutdown(wait=True, cancel_futures=True)
        self.state.rules.shutdown(wait=False, cancel_futures=True)
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
    ServeError when it cannot start or the load fails.

    Every listener's port is taken first: a conflict ends here, before the log or any file is opened."""
    tokens = load_tokens(config.token_file) if config.token_file is not None else {}
    if config.token_file is not None:
        warn_if_exposed(config.token_file)
    sockets = bind_all(config.listeners)
    connections = Connections(config.limits)
    lower_paced_threads_by(config.bulk_threads_nice)  # before any bulk thread starts
    try:
        state = build_state(config, connections)
    except BaseException:
        for sock in sockets.values():
            sock.close()
        raise
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        process = Serve(config, state, Api(state, Authenticator(tokens)), sockets, connections, out)
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(process.run())
    except ServeError:
        with contextlib.suppress(Exception):
            state.node.close()
        raise
    return 0


def setup_logging(config: ServeConfig) -> LogQueue:
    """Logs to stderr, as text (one line per record: a caller's newline is escaped) or JSON lines, at log.level
    (Kafka's audit logger logs denials at INFO), through a bounded queue and a writer thread (`server.log_queue`:
    a stderr that is not read never blocks the event loop); the caller flushes it at exit."""
    handler = logging.StreamHandler(sys.stderr)
    if config.log_format == "json":
        from pythonjsonlogger.json import JsonFormatter

        handler.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s", timestamp=True))
    else:
        handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    records = LogQueue(handler)
    root = logging.getLogger()
    root.handlers[:] = [records.handler]
    root.setLevel(config.log_level)
    return records
