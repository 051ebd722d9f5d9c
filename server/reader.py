"""The reader process: a second serve, broker role only, on the same log, started and watched by this one; the heavy
reads (POST /v1/acls/describe, GET /v1/acls/image, POST /v1/acls/history, authorize calls of more than 32 actions
with their rules) are handed to it (heavy.reads.process).

Why a process: in one interpreter a describe of 300k ACLs shares the GIL, the allocator and the collector with the
event loop that answers brokers' decisions, and even cut into 0.5 ms slices it made a broker's one-action decision
wait up to 15-20 ms (BENCHMARKS.md, serve noisy_neighbour). Handed to the reader, it costs this loop only the
relaying of the answer's bytes. serve still authenticates and authorizes the caller at the head and checks the
body; the reader is asked over loopback with a token only this process knows, once it has applied at least the
offset this serve had applied when the request came (read-your-writes holds through the reader).

The reader runs only on CPU time serve does not want (SCHED_IDLE, `server.reader_main`) and reads new records only
when asked (each request it gets makes it read the log) or once a minute: replaying a 200k-ACL import as it is
written took a vCPU beside serve's writer, and a broker's one-action p99 during that import went from 44 ms to
250-720 ms on the 2-vCPU machine of BENCHMARKS.md.

Fail safe: until the reader is ready, while it restarts (1 s, then up to 30 s apart), or when it cannot be asked,
serve answers the call itself, as without a reader. The reader reads its stdin (`server.reader_main`): when this
process ends, however it ends, the reader sees end of file and stops.

Used on the event loop thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import ssl
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import javaproperties

from kraftacl.api.endpoints import STATUS
from kraftacl.authorizer.decision.config import EARLY_START_LISTENERS, load_properties
from kraftacl.server.config import ServeConfig
from kraftacl.server.http_wire import Request, Response, StreamedResponse

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("kraft_acl.serve")

PRINCIPAL = "User:kraft-acl-reader"  # the reader's only broker principal: only this serve holds its token
AUTO_MIN_ACLS = 10_000  # heavy.reads.process=auto starts the reader once this many ACLs are loaded, or once a
# history call comes to a log of this many offsets (a history scan costs the log's length, not the ACL count)
RESTART_S = (1.0, 2.0, 5.0, 10.0, 30.0)  # waits before restarting a reader that ended, growing while it fails
STABLE_S = 60.0  # a reader that ran this long before it ended starts again after the first wait
POLL_S = 0.005  # how often serve asks the reader's status while it catches up with an offset
# A relayed call's answer must begin, and each piece of it come when serve asks for it, within this: a reader that
# stopped answering (hung, frozen) held every heavy read (describe, image, history) for good (read=None), and those of
# callers other than brokers took the places they share (OTHERS_POOL) for good
RELAY_READ_S = 30.0
PROBE_S = 1.0  # how often serve asks a reader that stopped answering whether it answers again
# a reader silent this long is killed, and its watcher starts a new one: one that hung (a bug, a stuck disk) kept its
# copy of the ACLs for good, and every heavy read ran on serve's own interpreter from then on
SILENT_RESTART_S = 120.0
PRIVATE_PREFIX = "kraft-acl-reader-"  # the reader's private directory (its configuration and token), in TMPDIR
OWNER = "serve.pid"  # in it: the pid of the serve that made it
READER_POLL_MS = 60_000  # the reader reads new records when asked (each request pokes its tailer), else this often
POOL = 32  # connections serve keeps to its reader; each relayed answer holds one until its client has read it
OTHERS_POOL = 24  # of them, what callers other than brokers and super users may hold at once (the rest wait)
_NOT_THE_CALLERS = (401, 403, 421)  # the reader refusing serve itself: serve answers, the caller was admitted
# max.connections.per.ip: serve is the reader's one client (from 127.0.0.1, up to POOL connections); a limit meant
# for brokers and clients (0 with overrides for the brokers, as Kafka configures it) would refuse serve itself
_DROPPED_PREFIXES = ("listener", "ssl.", "auth.", "heavy.reads.", "max.connections.per.ip", EARLY_START_LISTENERS)
DECISION_LOG_SUFFIX = ".reader"  # the reader writes the decisions it makes (explain) next to serve's decision log


def reader_properties(props: dict[str, str], token_file: Path, private: Path) -> dict[str, str]:
    """The reader's configuration from this serve's: the same log, authorizer settings and limits; one loopback
    listener on a free port, broker role only, its own token and decision log file, no reader of its own."""
    out = {k: v for k, v in props.items() if not k.startswith(_DROPPED_PREFIXES) and k != "process.roles"}
    out.update(
        {
            "listeners": "READER://127.0.0.1:0",
            "process.roles": "broker",
            "auth.token.file": str(token_file),
            "broker.principals": PRINCIPAL,
            "heavy.reads.process": "off",
            "metadata.log.poll.interval.ms": str(READER_POLL_MS),
            "metadata.log.poll.on.request": "true",
        }
    )
    if (limit := props.get("max.connections", "").strip()).isdigit() and int(limit) < 2 * POOL:
        out["max.connections"] = str(2 * POOL)  # serve's relays and status calls: a lower limit would refuse serve
    if props.get("decision.log.file"):
        out["decision.log.file"] = props["decision.log.file"] + DECISION_LOG_SUFFIX
    if props.get("metadata.log.bootstrap.servers"):  # every serve of a Kafka log writes snapshots: its own
        out["metadata.log.snapshot.dir"] = str(private / "snapshots")
    return out


class Reader:
    """Starts, watches and restarts the reader process, and asks it (through `_client`, set while it is ready)."""

    def __init__(self, config: ServeConfig, announce: Callable[..., None], answered: dict[str, int]) -> None:
        self.config = config
        self.announce = announce  # serve's status lines (`Announcer.say`)
        self.answered = answered  # calls answered by "reader" and by "serve" (metrics: kraft_acl_heavy_reads)
        self.stopping = False
        self._token = secrets.token_urlsafe(32)
        self._client: httpx.AsyncClient | None = None
        # the offset the reader behind this client was last seen to have applied: a call at or below it needs no
        # status call first (8 callers asking histories over and over spent about half of serve's relaying on them)
        self._applied: tuple[httpx.AsyncClient | None, int] = (None, -1)
        self._proc: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None
        self._private: Path | None = None
        self._trusted = config.trusted_principals
        # a caller allowed DESCRIBE (not a broker) that asked 32 images and read none of them held every connection
        # to the reader: every heavy read (a broker's batch with rule texts) waited 30 s, then ran on serve's loop
        self._others = asyncio.Semaphore(OTHERS_POOL)
        # set while the reader does not answer its status (hung, frozen, starved): heavy reads are answered by serve at
        # once meanwhile, not each after min.offset.wait.max.ms, until `_probe` hears from it again
        self._silent: asyncio.Task[None] | None = None

    def maybe_start(self, size: int) -> None:
        """Start the reader when heavy.reads.process asks for one now (on; auto once `size`, the ACLs loaded or for
        a history call the log's offsets, reaches AUTO_MIN_ACLS)."""
        mode = self.config.heavy_reads_process
        wanted = mode == "on" or (mode == "auto" and size >= AUTO_MIN_ACLS)
        if wanted and self._task is None and not self.stopping:
            self._task = asyncio.get_running_loop().create_task(self._supervise())

    async def answer(
        self, request: Request, size: int, offset: int, whole: bool = False
    ) -> Response | StreamedResponse | None:
        """The reader's answer to this admitted request once it has applied `offset` (this serve's; `size` as
        `maybe_start` takes it): streamed when 200 (unless `whole`), whole otherwise; None when serve must answer itself
        (no reader ready, it cannot be reached, it lags or fails)."""
        self.maybe_start(size)
        if request.caller is not None and request.caller.principal in self._trusted:
            answer = await self._ask(request, offset, whole)
        else:
            await self._others.acquire()
            try:
                answer = await self._ask(request, offset, whole)
            except BaseException:
                self._others.release()
                raise
            if isinstance(answer, StreamedResponse):  # the relay holds its connection until its client read it
                answer.on_close = self._others.release
            else:
                self._others.release()
        self.answered["serve" if answer is None else "reader"] += 1
        return answer

    async def _ask(self, request: Request, offset: int, whole: bool) -> Response | StreamedResponse | None:
        client = self._client
        if client is None or self._silent is not None:
            return None
        seen_by, seen = self._applied
        # at an offset the reader was seen to have applied no status is asked first (8 callers asking histories over
        # and over spent a third of serve's relaying on it); `_slow_or_silent` finds a reader silent on such a call
        known = seen_by is client and seen >= offset
        if not known and not await self._caught_up(client, offset):
            return None
        import httpx

        try:
            body = bytes(request.body)  # a large body arrives as a bytearray (`server.http`); httpx sends bytes
            sending = asyncio.ensure_future(
                client.send(client.build_request(request.method, request.path, content=body), stream=True)
            )
            try:
                if known and not await self._slow_or_silent(client, sending):
                    return None
                answer = await sending
            except BaseException:
                sending.cancel()
                raise
        except httpx.HTTPError as exc:
            log.warning("heavy reads: the reader process did not answer (%s); serve answers this call itself", exc)
            return None
        if answer.status_code >= 500 or answer.status_code in _NOT_THE_CALLERS:
            await answer.aclose()
            log.warning("heavy reads: the reader answered %d; serve answers this call itself", answer.status_code)
            return None
        if answer.status_code != 200 or whole:
            try:
                data = await answer.aread()
            except httpx.HTTPError as exc:
                log.warning("heavy reads: the reader's answer broke off (%s); serve answers this call itself", exc)
                return None
            finally:
                await answer.aclose()
            return Response(answer.status_code, data)
        return StreamedResponse(200, _relay(answer))

    async def _caught_up(self, client: httpx.AsyncClient, offset: int) -> bool:
        """True once the reader has applied `offset` (asked every POLL_S, each ask making it read the log, for
        min.offset.wait.max.ms at most)."""
        import httpx

        wait = max(1.0, self.config.min_offset_wait_s)
        deadline = time.monotonic() + wait
        while True:
            try:  # bounded by the wait: a reader that stopped answering (hung, or frozen) is not waited for forever
                status = (await client.get(STATUS.path, timeout=max(deadline - time.monotonic(), POLL_S))).json()
            except httpx.PoolTimeout:  # every connection to it busy: not a silent reader, but none free now
                return False
            except httpx.TimeoutException:
                self._gone_silent(client, f"its status within {wait:.0f} s")
                return False
            except (httpx.HTTPError, ValueError):
                return False
            if status.get("ready") and status.get("last_applied_offset", -1) >= offset:
                applied = int(status["last_applied_offset"])
                if self._applied[0] is not client or self._applied[1] < applied:
                    self._applied = (client, applied)
                return True
            if time.monotonic() >= deadline:
                log.warning("heavy reads: the reader had not applied offset %d after %.0f s", offset, wait)
                return False
            await asyncio.sleep(POLL_S)

    async def _slow_or_silent(self, client: httpx.AsyncClient, sending: asyncio.Future[httpx.Response]) -> bool:
        """For a call sent without a status call first: whether to go on waiting for its answer. Once
        min.offset.wait.max.ms (at least 1 s) has passed without its head, the reader's status is asked: a reader that
        answers it (or whose connections are all busy) is slow, not silent, and the call waits on (RELAY_READ_S for
        each piece); one that does not is silent, and the call is given up for serve to answer itself."""
        import httpx

        wait = max(1.0, self.config.min_offset_wait_s)
        done, _ = await asyncio.wait({sending}, timeout=wait)
        if done:
            return True
        try:
            await client.get(STATUS.path, timeout=PROBE_S)
            return True
        except httpx.PoolTimeout:
            return True
        except (httpx.HTTPError, ValueError):
            pass
        sending.cancel()
        await asyncio.gather(sending, return_exceptions=True)
        self._gone_silent(client, f"a call, nor then its status, within {wait:.0f} s")
        return False

    def _gone_silent(self, client: httpx.AsyncClient, what: str) -> None:
        """The reader did not answer `what` in time: serve answers the heavy reads itself until it answers again."""
        if self._silent is None:
            log.warning(
                "heavy reads: the reader did not answer %s; serve answers the heavy reads itself until it does", what
            )
            self._silent = asyncio.get_running_loop().create_task(self._probe(client))

    async def _probe(self, client: httpx.AsyncClient) -> None:
        """Ask the silent reader's status every PROBE_S until it answers (or it is replaced), then use it again; kill
        it once it has been silent SILENT_RESTART_S (its watcher then starts a new one)."""
        import httpx

        began, proc = time.monotonic(), self._proc
        try:
            while self._client is client:
                try:
                    await client.get(STATUS.path, timeout=PROBE_S)
                except (httpx.HTTPError, RuntimeError):  # RuntimeError: the client was closed (the reader replaced)
                    silent = time.monotonic() - began
                    if (
                        silent >= SILENT_RESTART_S
                        and proc is not None
                        and proc is self._proc
                        and proc.returncode is None
                    ):
                        log.warning(
                            "heavy reads: the reader process %d has not answered for %.0f s: killed, to start again",
                            proc.pid,
                            silent,
                        )
                        proc.kill()
                        return
                    await asyncio.sleep(PROBE_S)
                    continue
                log.warning("heavy reads: the reader answers again")
                return
        finally:
            self._silent = None

    async def _supervise(self) -> None:
        failures = 0
        while not self.stopping:
            began = time.monotonic()
            try:
                await self._run_once()
            except (OSError, ValueError) as exc:
                log.warning("heavy reads: the reader process could not start: %s", exc)
            except Exception:  # a bug here must not end the watching: it is logged and the reader restarted
                log.exception("heavy reads: watching the reader process failed")
            await self._forget()
            if self.stopping:
                return
            failures = 0 if time.monotonic() - began >= STABLE_S else failures + 1
            wait = RESTART_S[min(failures, len(RESTART_S) - 1)]
            code = self._proc.returncode if self._proc is not None else None
            log.warning(
                "heavy reads: the reader process ended (exit %s); serve answers the heavy reads itself until it is "
                "back; starting it again in %.0f s",
                code,
                wait,
            )
            await asyncio.sleep(wait)

    async def _run_once(self) -> None:
        """Start one reader, take its listening URL and readiness from its status lines, wait until it ends."""
        tls = await asyncio.to_thread(_prepare_client)  # not on the loop: brokers' decisions would wait 0.1 s
        import httpx

        logging.getLogger("httpx").setLevel(logging.WARNING)  # not one INFO line per relayed call
        _sweep()
        private = self._private = Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX))
        (private / OWNER).write_text(str(os.getpid()))
        tokens = _private_file(private / "tokens", f"{PRINCIPAL} {self._token}\n")
        props = reader_properties(load_properties(self.config.path), tokens, private)
        config = _private_file(private / "reader.properties", javaproperties.dumps(props, timestamp=False))
        proc = self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kraftacl.server.reader_main",
            str(config),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None
        url = None
        async for raw in proc.stdout:
            with contextlib.suppress(ValueError):
                line = json.loads(raw)
                if line.get("event") == "listening":
                    url = line["url"]
                elif line.get("event") == "ready" and url is not None:
                    self._client = httpx.AsyncClient(
                        base_url=url,
                        headers={"authorization": f"Bearer {self._token}"},
                        timeout=httpx.Timeout(
                            RELAY_READ_S
                        ),  # reads too: a reader that stops answering is not waited for
                        limits=httpx.Limits(max_connections=POOL, max_keepalive_connections=8),
                        verify=tls,
                    )
                    self.announce(
                        "reader",
                        f"heavy reads: reader process {proc.pid} ready on {url} ({line.get('acls')} ACLs)",
                        pid=proc.pid,
                        url=url,
                    )
        await proc.wait()

    async def _forget(self) -> None:
        if self._silent is not None:
            self._silent.cancel()
        client, self._client = self._client, None
        self._applied = (None, -1)
        if client is not None:
            await client.aclose()
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop the reader (its stdin closes: it stops as on SIGTERM; killed after `timeout`) and its watcher."""
        self.stopping = True
        proc = self._proc
        if proc is not None and proc.returncode is None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if self._task is not None:  # it may be waiting to start the reader again
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._forget()


def _prepare_client() -> ssl.SSLContext:
    """What the reader's client would otherwise do on the event loop the first time (on a worker thread): import
    httpx and the async backend its first call loads (anyio's, by running one call of it on a loop of this thread),
    and build the TLS context httpx makes for every client (reading the CA bundle): 0.1-0.15 s together here."""
    import anyio
    import httpx

    asyncio.run(anyio.sleep(0))
    return httpx.create_ssl_context()


def _private_file(path: Path, text: str) -> Path:
    """Write `text` to a new file only its owner may read (a token; the log's client secrets)."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
        out.write(text)
    return path


def _sweep() -> None:
    """Remove the private directories of readers whose serve is gone (killed with its whole process group: neither
    could remove it), each holding a token nobody uses any more."""
    for private in Path(tempfile.gettempdir()).glob(PRIVATE_PREFIX + "*"):
        try:
            os.kill(int((private / OWNER).read_text()), 0)
        except ProcessLookupError:
            shutil.rmtree(private, ignore_errors=True)
        except (OSError, ValueError):  # not ours to judge (another user's, or being created)
            continue


async def _relay(answer: httpx.Response) -> AsyncIterator[bytes]:
    """The reader's answer body, piece by piece as the client reads (closed when done or abandoned)."""
    try:
        async for piece in answer.aiter_raw():
            yield piece
    finally:
        await answer.aclose()
