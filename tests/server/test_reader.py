"""heavy.reads.process: serve hands describe, the ACL image, ACL history and large explains to its reader process (a
second, broker-role serve on the same log) and relays the answers; the answers are the ones serve itself gives,
read-your-writes holds through the reader, serve answers itself while the reader is gone and starts it again, the
reader ends with serve however serve ends, and nobody but serve can ask the reader. Real serve processes over real
sockets."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kraftacl.authorizer.decision.config import SUPER_USERS
from kraftacl.server.reader import OWNER, PRINCIPAL, PRIVATE_PREFIX, reader_properties
from tests.server.serve_process import ADMIN_TOKEN, BROKER_TOKEN, ServeProcess, base_properties

READY = re.compile(r"heavy reads: reader process (\d+) ready on (http://\S+)")


def _acl(i: int, permission: str = "ALLOW") -> dict[str, str]:
    return {
        "resource_type": "TOPIC",
        "resource_name": f"orders-{i % 7}",
        "pattern_type": "LITERAL" if i % 3 else "PREFIXED",
        "principal": f"User:u{i % 5}",
        "host": "*",
        "operation": "READ" if i % 2 else "WRITE",
        "permission_type": permission,
    }


def _reader(serve: ServeProcess, after: int = 0, timeout: float = 60.0) -> tuple[int, str]:
    """The pid and URL of the reader serve announced (the `after`-th announcement onwards), waiting for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = READY.findall(serve.output())
        if len(found) > after:
            return int(found[after][0]), found[after][1]
        time.sleep(0.1)
    raise AssertionError(f"no reader process announced:\n{serve.output()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has ended
        return stat.read().split(")")[-1].split()[0] != "Z"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    """Two serves of one log: the controller with a reader (heavy.reads.process=on), a broker-role one without."""
    work: Path = tmp_path_factory.mktemp("reader")
    props = base_properties(work / "a", log_dir=work / "log", heavy_reads_process="on")
    with ServeProcess(work / "a" / "serve", props).start() as serve, serve.client(token=ADMIN_TOKEN) as admin:
        answer = admin.post("/v1/acls/create", json={"acls": [_acl(i) for i in range(40)] + [_acl(99, "DENY")]})
        assert answer.status_code == 200
        _reader(serve)
        plain = base_properties(work / "b", log_dir=work / "log", heavy_reads_process="off", process_roles="broker")
        with ServeProcess(work / "b" / "serve", plain).start() as other:
            yield serve, other


def _same(a: ServeProcess, b: ServeProcess, method: str, path: str, body: Any = None) -> dict[str, Any]:
    """The answers of both serves to one call, once both have applied the same offset; the first one's JSON."""
    for _ in range(100):
        with a.client(token=ADMIN_TOKEN) as ca, b.client(token=ADMIN_TOKEN) as cb:
            one, two = ca.request(method, path, json=body), cb.request(method, path, json=body)
        assert one.status_code == two.status_code == 200, (one.text, two.text)
        if one.json().get("offset") == two.json().get("offset"):
            first, second = dict(one.json()), dict(two.json())
            if "super_users" in first:  # the image: its ACLs in no set order
                first["acls"].sort(key=lambda a: a["id"])
                second["acls"].sort(key=lambda a: a["id"])
            assert first == second
            return first
        time.sleep(0.05)
    raise AssertionError("the two serves never agreed on an offset")


def test_heavy_reads_answer_as_serve_itself_does(pair: tuple[ServeProcess, ServeProcess]) -> None:
    serve, other = pair
    described = _same(serve, other, "POST", "/v1/acls/describe", {})
    assert len(described["acls"]) == 41
    assert len(_same(serve, other, "POST", "/v1/acls/describe", {"filter": {"principal": "User:u1"}})["acls"]) == 8
    image = _same(serve, other, "GET", "/v1/acls/image")
    assert sorted(a["id"] for a in image["acls"]) == sorted(a["id"] for a in described["acls"])
    history = _same(serve, other, "POST", "/v1/acls/history", {"ids": [described["acls"][0]["id"]]})
    assert [e["acl"]["id"] for e in history["events"]] == [described["acls"][0]["id"]]
    assert _heavy(serve)["reader"] >= 4 and _heavy(serve)["serve"] == 0  # every call went through the reader


def _heavy(serve: ServeProcess) -> dict[str, int]:
    """kraft_acl_heavy_reads_total by who answered."""
    families = text_string_to_metric_families(serve.metrics_text(ADMIN_TOKEN))
    samples = [s for f in families if f.name == "kraft_acl_heavy_reads" for s in f.samples]
    return {s.labels["by"]: int(s.value) for s in samples if s.name.endswith("_total")}


def test_a_large_explain_is_answered_by_the_reader_as_by_serve(pair: tuple[ServeProcess, ServeProcess]) -> None:
    serve, other = pair
    actions = [
        {"operation": op, "resource_type": "TOPIC", "resource_name": f"orders-{i}"}
        for i in range(7)
        for op in ("READ", "WRITE", "DESCRIBE", "DELETE", "ALTER", "CREATE")
    ]
    body = {"principal": "User:u4", "client_address": "10.0.0.1", "explain": True, "actions": actions}
    assert len(actions) > 32  # above explain.INLINE_RULES: handed to the reader
    for _ in range(100):
        with serve.client(token=BROKER_TOKEN) as ca, other.client(token=BROKER_TOKEN) as cb:
            one, two = ca.post("/v1/authorize", json=body), cb.post("/v1/authorize", json=body)
        assert one.status_code == two.status_code == 200, (one.text, two.text)
        if one.json()["offset"] == two.json()["offset"]:
            break
        time.sleep(0.05)
    assert one.json() == two.json()
    assert "DENIED" in one.json()["results"] and "ALLOWED" in one.json()["results"]
    denial = re.compile(r"INFO kafka\.authorizer\.logger: Principal = User:u4 is Denied operation")
    deadline = time.monotonic() + 10
    while not denial.search(serve.output()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert denial.search(serve.output()), "the reader's audit lines reach serve's log, as Kafka writes them"


def test_read_your_writes_through_the_reader(pair: tuple[ServeProcess, ServeProcess]) -> None:
    serve, _ = pair
    with serve.client(token=ADMIN_TOKEN) as admin:
        for i in range(5):
            created = admin.post("/v1/acls/create", json={"acls": [{**_acl(i), "resource_name": f"rw-{i}"}]}).json()
            new_id = created["results"][0]["id"]
            described = admin.post("/v1/acls/describe", json={"min_offset": created["offset"]}).json()
            assert new_id in {a["id"] for a in described["acls"]}
            assert described["offset"] >= created["offset"]
            image = admin.get("/v1/acls/image").json()  # no min_offset: serve's own offset is the floor
            assert new_id in {a["id"] for a in image["acls"]}
    assert _heavy(serve)["serve"] == 0  # the reader read each write when asked (it polls a minute apart otherwise)


def test_nobody_but_serve_can_ask_the_reader(pair: tuple[ServeProcess, ServeProcess]) -> None:
    serve, _ = pair
    _, url = _reader(serve)
    assert httpx.post(f"{url}/v1/acls/describe", json={}).status_code == 401
    answer = httpx.post(f"{url}/v1/acls/describe", json={}, headers={"authorization": f"Bearer {ADMIN_TOKEN}"})
    assert answer.status_code == 401  # serve's tokens are not the reader's
    assert url.startswith("http://127.0.0.1:")


def test_serve_answers_itself_while_the_reader_is_gone_and_starts_it_again(tmp_path: Path) -> None:
    props = base_properties(tmp_path, heavy_reads_process="on")
    with ServeProcess(tmp_path / "serve", props).start() as serve, serve.client(token=ADMIN_TOKEN) as admin:
        assert admin.post("/v1/acls/create", json={"acls": [_acl(1)]}).status_code == 200
        pid, _ = _reader(serve)
        os.kill(pid, signal.SIGKILL)
        for _ in range(20):  # whatever the moment, every call is answered, by serve or the new reader
            answer = admin.post("/v1/acls/describe", json={})
            assert answer.status_code == 200 and len(answer.json()["acls"]) == 1
            time.sleep(0.05)
        again, _ = _reader(serve, after=1)
        assert _heavy(serve)["serve"] >= 1  # answered by serve itself while the reader was gone
        assert again != pid
        assert "heavy reads: the reader process ended" in serve.output()
        assert len(admin.post("/v1/acls/describe", json={}).json()["acls"]) == 1


def test_serve_answers_itself_when_the_reader_stops_answering(tmp_path: Path) -> None:
    """A reader that hangs (SIGSTOP here; a reader starved of CPU alike) is not waited for beyond
    min.offset.wait.max.ms: serve answers the heavy read itself, as when the reader is gone, and the next ones at once
    until the reader answers again; then the reader answers them again."""
    props = base_properties(tmp_path, heavy_reads_process="on", min_offset_wait_max_ms="2000")
    with ServeProcess(tmp_path / "serve", props).start() as serve, serve.client(token=ADMIN_TOKEN, timeout=40) as admin:
        assert admin.post("/v1/acls/create", json={"acls": [_acl(1)]}).status_code == 200
        pid, _ = _reader(serve)
        assert admin.post("/v1/acls/describe", json={}).status_code == 200
        os.kill(pid, signal.SIGSTOP)
        took: list[float] = []
        try:
            for _ in range(3):
                started = time.monotonic()
                try:
                    answer = admin.post("/v1/acls/describe", json={})
                except httpx.TimeoutException:
                    answer = None
                took.append(time.monotonic() - started)
                assert answer is not None and answer.status_code == 200, f"no answer within {took[-1]:.0f} s"
                assert len(answer.json()["acls"]) == 1
        finally:
            os.kill(pid, signal.SIGCONT)
        assert took[0] < 10 and max(took[1:]) < 1, took  # the first waited the 2 s, the next ones nothing
        assert "heavy reads: the reader did not answer" in serve.output()
        deadline = time.monotonic() + 10
        while "the reader answers again" not in serve.output() and time.monotonic() < deadline:
            time.sleep(0.1)
        by_reader = _heavy(serve).get("reader", 0)
        assert admin.post("/v1/acls/describe", json={}).status_code == 200
        assert _heavy(serve).get("reader", 0) == by_reader + 1, "the reader is not used again once it answers"


def test_the_reader_ends_with_serve_even_when_serve_is_killed(tmp_path: Path) -> None:
    stale = Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX))  # a reader's, whose serve was killed with its group
    (stale / OWNER).write_text(str(_dead_pid()))
    props = base_properties(tmp_path, heavy_reads_process="on")
    serve = ServeProcess(tmp_path / "serve", props).start()
    try:
        pid, _ = _reader(serve)
        assert not stale.exists(), "a dead serve's reader directory was not swept"
        config = Path(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[-2].decode())
        assert (config.parent / "tokens").stat().st_mode & 0o077 == 0
        assert config.stat().st_mode & 0o077 == 0 and config.parent.stat().st_mode & 0o077 == 0
        assert serve.pid is not None
        os.kill(serve.pid, signal.SIGKILL)  # serve alone: its reader is left to notice
        deadline = time.monotonic() + 15
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid), "the reader outlived the serve that started it"
        assert not config.parent.exists(), "the reader's private directory (its token) was left behind"
    finally:
        serve.kill()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_no_reader_when_off_or_with_few_acls(tmp_path: Path) -> None:
    for mode in ("off", "auto"):
        props = base_properties(tmp_path / mode, heavy_reads_process=mode)
        with ServeProcess(tmp_path / mode / "serve", props).start() as serve, serve.client(token=ADMIN_TOKEN) as c:
            assert c.post("/v1/acls/create", json={"acls": [_acl(1)]}).status_code == 200
            assert c.post("/v1/acls/describe", json={}).status_code == 200
            time.sleep(0.5)
            assert "reader process" not in serve.output()
            assert _heavy(serve)["reader"] == 0


def test_history_of_a_long_log_starts_the_reader_however_few_acls_are_loaded(tmp_path: Path) -> None:
    """A history call scans the whole log: with 12,000 offsets and never more than 3,000 ACLs loaded, auto starts
    the reader for it (the ACL count alone never would) and the reader answers as serve did."""
    props = base_properties(tmp_path, heavy_reads_process="auto")
    with ServeProcess(tmp_path / "serve", props).start() as serve, serve.client(token=ADMIN_TOKEN) as c:
        ids: list[str] = []
        for round_ in range(2):
            acls = [{**_acl(0), "resource_name": f"t-{round_}-{i}"} for i in range(3_000)]
            created = c.post("/v1/acls/create", json={"acls": acls})
            assert created.status_code == 200, created.text
            ids += [r["id"] for r in created.json()["results"][:2]]
            filters = [{"resource_name": f"t-{round_}-{i}"} for i in range(3_000)]
            deleted = c.post("/v1/acls/delete", json={"filters": filters})
            assert deleted.status_code == 200, deleted.text
        assert c.post("/v1/acls/describe", json={}).status_code == 200  # 0 ACLs: no reader for a describe
        time.sleep(0.5)
        assert "reader process" not in serve.output()
        first = c.post("/v1/acls/history", json={"ids": ids})
        assert first.status_code == 200, first.text
        assert len(first.json()["events"]) == 2 * len(ids)  # each added, then removed
        _reader(serve)
        for _ in range(100):
            again = c.post("/v1/acls/history", json={"ids": ids})
            assert again.status_code == 200, again.text
            if _heavy(serve)["reader"] >= 1:
                break
            time.sleep(0.1)
        assert _heavy(serve)["reader"] >= 1, "the reader never answered a history call"
        assert again.json() == first.json()


def test_reader_properties_keep_the_log_and_authorizer_and_nothing_of_the_network(tmp_path: Path) -> None:
    props = {
        "listeners": "CLIENT://0.0.0.0:9191,SSL://0.0.0.0:9443",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,SSL:SSL",
        "listener.name.ssl.ssl.certfile": "/x.pem",
        "early.start.listeners": "CLIENT",
        "ssl.keyfile": "/k.pem",
        "auth.token.file": "/tokens",
        "auth.anonymous.listeners": "CLIENT",
        "auth.public.endpoints": "status",
        "process.roles": "broker,controller",
        "super.users": "User:admin",
        "broker.principals": "User:broker",
        "allow.everyone.if.no.acl.found": "true",
        "metadata.log.dir": "/log",
        "metadata.log.poll.interval.ms": "250",
        "decision.log.file": "/var/log/decisions.jsonl",
        "heavy.reads.process": "on",
        "max.connections": "50",
    }
    out = reader_properties(props, tmp_path / "tokens", tmp_path)
    assert out == {
        "listeners": "READER://127.0.0.1:0",
        "process.roles": "broker",
        "auth.token.file": str(tmp_path / "tokens"),
        "super.users": "User:admin",
        "broker.principals": PRINCIPAL,
        "allow.everyone.if.no.acl.found": "true",
        "metadata.log.dir": "/log",
        "metadata.log.poll.interval.ms": "60000",
        "metadata.log.poll.on.request": "true",
        "decision.log.file": "/var/log/decisions.jsonl.reader",
        "heavy.reads.process": "off",
        "max.connections": "64",  # at least twice serve's pool to the reader: a lower limit would refuse serve
    }
    kafka = reader_properties({"metadata.log.bootstrap.servers": "k:9092"}, tmp_path / "t", tmp_path)
    assert kafka["metadata.log.snapshot.dir"] == str(tmp_path / "snapshots")
    assert SUPER_USERS not in kafka


def test_a_consistent_describe_through_the_reader_sees_every_write(pair: tuple[ServeProcess, ServeProcess]) -> None:
    serve, _ = pair
    before = _heavy(serve)
    with serve.client(token=ADMIN_TOKEN) as admin:
        for i in range(3):
            created = admin.post("/v1/acls/create", json={"acls": [{**_acl(i), "resource_name": f"cs-{i}"}]}).json()
            described = admin.post("/v1/acls/describe", json={"consistent": True}).json()
            assert created["results"][0]["id"] in {a["id"] for a in described["acls"]}
            assert described["offset"] >= created["offset"]
    after = _heavy(serve)
    assert after["reader"] - before["reader"] == 3 and after["serve"] == before["serve"]


def test_the_reader_is_asked_for_serves_offset_not_the_logs_end_again() -> None:
    from kraftacl.api.wire import DescribeIn
    from kraftacl.server.describe import _relayed
    from kraftacl.server.http_wire import Request

    def request(body: bytes) -> Request:
        return Request("POST", "/v1/acls/describe", "", {}, "127.0.0.1", "admin", None, body)

    consistent = request(b'{"consistent": true, "filter": {"principal": "User:u1"}}')
    body = msgspec.json.decode(consistent.body, type=DescribeIn)
    relayed = msgspec.json.decode(_relayed(consistent, body, 41).body, type=DescribeIn)
    assert relayed == DescribeIn(filter=body.filter, min_offset=41) and not relayed.consistent
    plain = request(b'{"filter": {"principal": "User:u1"}}')
    assert _relayed(plain, msgspec.json.decode(plain.body, type=DescribeIn), 41) is plain


def test_reader_properties_drop_the_per_ip_limits_serve_itself_would_be_refused_by(tmp_path: Path) -> None:
    """serve is the reader's only client, from 127.0.0.1, with up to POOL connections: a limit meant for brokers and
    clients (max.connections.per.ip=0 with overrides for the brokers, as Kafka configures it) refused serve, and
    every heavy read waited min.offset.wait.max.ms before serve answered it itself."""
    props = {
        "listeners": "CLIENT://0.0.0.0:9191",
        "metadata.log.dir": "/log",
        "max.connections": "500",
        "max.connections.per.ip": "0",
        "max.connections.per.ip.overrides": "10.0.0.1:100",
    }
    out = reader_properties(props, tmp_path / "tokens", tmp_path)
    assert "max.connections.per.ip" not in out and "max.connections.per.ip.overrides" not in out
    assert out["max.connections"] == "500"


def test_a_call_at_an_offset_the_reader_was_seen_to_have_applied_asks_no_status_first() -> None:
    """Each heavy read asked the reader's status before the call itself, even at an offset the reader had already
    answered: a third of serve's relaying when callers ask over and over. A new reader (another client) is asked."""
    from kraftacl.server.http_wire import Request
    from kraftacl.server.reader import Reader

    class Client:
        def __init__(self, applied: int) -> None:
            self.applied, self.asked = applied, 0

        async def get(self, path: str, timeout: float) -> Any:
            self.asked += 1
            return SimpleNamespace(json=lambda: {"ready": True, "last_applied_offset": self.applied})

        def build_request(self, method: str, path: str, content: bytes) -> Any:
            return None

        async def send(self, request: Any, stream: bool) -> Any:
            async def nothing() -> None:
                return None

            return SimpleNamespace(status_code=200, aread=lambda: asyncio.sleep(0, b"{}"), aclose=nothing)

    config: Any = SimpleNamespace(min_offset_wait_s=3.0, trusted_principals=frozenset())
    reader = Reader(config, lambda *a, **k: None, {"reader": 0, "serve": 0})
    first, second = Client(10), Client(10)
    request = Request("POST", "/v1/acls/describe", "", {}, "127.0.0.1", "CLIENT", None, b"{}")

    async def asks() -> list[int]:
        counts = []
        for client, offset in ((first, 5), (first, 10), (first, 3), (second, 5), (first, 7)):
            reader._client = client  # type: ignore[assignment]
            assert await reader._ask(request, offset, whole=True) is not None
            counts.append(first.asked + second.asked)
        first.applied = 12
        assert await reader._ask(request, 11, whole=True) is not None
        counts.append(first.asked + second.asked)
        return counts

    assert asyncio.run(asks()) == [1, 1, 1, 2, 3, 4]


def test_a_slow_heavy_read_at_a_known_offset_is_waited_for_while_the_reader_answers_its_status() -> None:
    """A call sent without a status call first was given up after min.offset.wait.max.ms (at least 1 s) and the
    reader marked silent, though it was only slow (a long history scan under SCHED_IDLE): serve then did the heavy
    work itself. Now its status is asked after that wait: it answers, so the call is waited for; a reader that does
    not answer its status either is silent, and the call is given up."""
    from kraftacl.server.http_wire import Request
    from kraftacl.server.reader import Reader

    slow_s, frozen = 1.6, [False]

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while line := await r.readline():
                length = 0
                while (header := await r.readline()) not in (b"\r\n", b""):
                    if header.lower().startswith(b"content-length:"):
                        length = int(header.split(b":")[1])
                await r.readexactly(length)
                if frozen[0]:
                    await asyncio.sleep(60)
                if line.split()[1] == b"/v1/status":
                    body = b'{"ready": true, "last_applied_offset": 10}'
                else:
                    await asyncio.sleep(slow_s)
                    body = b'{"acls": []}'
                w.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
                await w.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return

    async def run() -> list[tuple[bool, float]]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        config: Any = SimpleNamespace(min_offset_wait_s=0.0, trusted_principals=frozenset())
        reader = Reader(config, lambda *a, **k: None, {"reader": 0, "serve": 0})
        client = reader._client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=httpx.Timeout(30.0))
        request = Request("POST", "/v1/acls/describe", "", {}, "127.0.0.1", "CLIENT", None, b"{}")
        relayed = []
        try:
            for freeze in (False, False, True):  # unknown offset (status first), then known: slow, then frozen
                frozen[0] = freeze
                began = time.monotonic()
                relayed.append((await reader._ask(request, 10, whole=True) is not None, time.monotonic() - began))
            silent = reader._silent is not None
        finally:
            if reader._silent is not None:
                reader._silent.cancel()
            await client.aclose()
            server.close()
        assert silent, "a reader answering neither the call nor its status was not marked silent"
        return relayed

    (first, _), (slow, _), (frozen_call, took) = asyncio.run(run())
    assert first and slow, "a slow heavy read at a known offset was given up"
    assert not frozen_call and took < 10, took


def test_a_reader_silent_for_long_is_killed_for_its_watcher_to_start_a_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that hung (SIGSTOP, a bug) was skipped for good: it kept its copy of the ACLs, and every heavy read ran
    on serve's interpreter. After SILENT_RESTART_S of silence it is killed (its watcher, `_supervise`, starts another);
    one that answers before then is used again and not killed."""
    from kraftacl.server import reader as reader_module
    from kraftacl.server.reader import Reader

    monkeypatch.setattr(reader_module, "PROBE_S", 0.01)
    monkeypatch.setattr(reader_module, "SILENT_RESTART_S", 0.2)

    class Client:
        def __init__(self, answers_after: float) -> None:
            self.answers_at = time.monotonic() + answers_after

        async def get(self, path: str, timeout: float) -> Any:
            if time.monotonic() < self.answers_at:
                raise httpx.ReadTimeout("silent")
            return SimpleNamespace(status_code=200)

    class Proc:
        pid, returncode, killed = 4242, None, False

        def kill(self) -> None:
            self.killed = True

    async def probe(answers_after: float) -> bool:
        config: Any = SimpleNamespace(min_offset_wait_s=1.0, trusted_principals=frozenset())
        reader = Reader(config, lambda *a, **k: None, {"reader": 0, "serve": 0})
        client, proc = Client(answers_after), Proc()
        reader._client, reader._proc = client, proc  # type: ignore[assignment]
        await asyncio.wait_for(reader._probe(client), 5)  # type: ignore[arg-type]
        assert reader._silent is None
        return proc.killed

    assert asyncio.run(probe(60.0)), "a reader silent past SILENT_RESTART_S was not killed"
    assert not asyncio.run(probe(0.05)), "a reader that answered again was killed"
