"""Adversarial, class 3 (everything a caller can make serve hold is bounded): request bodies over all connections
(queued.max.request.bytes, with a share kept for brokers), answers a client does not read (write back-pressure),
open connections (process-wide, per listener, places kept for brokers, early-start listeners exempt), and the
deadlines of a new connection; resident memory before, during and after a flood (the figures are printed)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

from kraftacl.api.frames import upgrade_head
from kraftacl.authorizer.state.controller import MAX_REPORTED_PER_DELETE
from kraftacl.harness.rss import rss_kb
from kraftacl.server.admin import MAX_DELETE_FILTERS
from tests.server.raw_http import Answer, Raw, address, head, post
from tests.server.serve_process import (
    ADMIN_TOKEN,
    ALICE_TOKEN,
    BROKER_TOKEN,
    ServeProcess,
    add_tls_listener,
    base_properties,
    free_port,
    reader_pid,
)

ONE_ACTION = {
    "principal": "User:alice",
    "client_address": "10.0.0.1",
    "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}],
}


ACL_TEMPLATE = {
    "resource_type": "TOPIC",
    "pattern_type": "LITERAL",
    "principal": "User:bob",
    "host": "*",
    "operation": "READ",
    "permission_type": "ALLOW",
}


def _padded(size: int) -> bytes:
    """A valid authorize body of exactly `size` bytes (JSON allows trailing spaces)."""
    body = json.dumps(ONE_ACTION).encode()
    return body + b" " * (size - len(body))


def test_request_memory_is_bounded_and_brokers_keep_their_share(tmp_path: Path) -> None:
    # 3/4 of 256 KiB for alice (196,608 bytes): three 60,000-byte bodies fit, a fourth waits
    props = base_properties(tmp_path, queued_max_request_bytes="262144", request_max_bytes="65536")
    with ServeProcess(tmp_path, props).start() as serve:
        url = serve.url("CLIENT")
        body = _padded(60_000)
        uploads = [Raw(url) for _ in range(4)]
        try:
            for raw in uploads[:3]:
                raw.send(head("POST", "/v1/authorize", ALICE_TOKEN, len(body)) + body[:1000])
            time.sleep(0.3)
            uploads[3].send(head("POST", "/v1/authorize", ALICE_TOKEN, len(body)) + body)  # all of it
            uploads[3].sock.settimeout(1.0)
            try:
                early = uploads[3].sock.recv(1024)
            except TimeoutError:
                early = b""
            assert early == b"", "the fourth body was read and answered although the memory was taken"
            with Raw(url) as broker:  # a broker's request still fits (the share kept for brokers)
                broker.send(post("/v1/authorize", ONE_ACTION, BROKER_TOKEN))
                assert broker.answer().status == 200
            uploads[0].send(body[1000:])  # the first upload completes: its memory comes back after its answer
            assert uploads[0].answer().status == 200
            uploads[3].sock.settimeout(10)
            assert uploads[3].answer().status == 200  # now read and answered
        finally:
            for raw in uploads:
                raw.close()


def test_a_request_waiting_for_request_memory_is_not_timed_out_for_it(tmp_path: Path) -> None:
    """While serve does not read a request because the request memory is taken (by answers that take long: explains
    handed to a stopped reader process), the client is not blamed: no 408 at request.timeout.ms, not even when an
    earlier pipelined answer ends meanwhile; once the memory comes back the request is read and answered, and every
    byte reserved is given back (requests that arrived whole while others waited included). Before, such a request
    got 408 "did not arrive whole in time", and the bytes of waits that ended otherwise were never given back."""
    props = base_properties(
        tmp_path,
        queued_max_request_bytes="262144",
        request_max_bytes="65536",
        request_timeout_ms="1000",
        heavy_reads_process="on",
    )
    action = {"operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}
    explain = {**ONE_ACTION, "explain": True, "actions": [action] * 40}  # handed to the reader
    held = json.dumps(explain).encode()
    held += b" " * (60_000 - len(held))
    body, small = _padded(60_000), _padded(3_800)
    with ServeProcess(tmp_path, props).start() as serve:
        url, reader = serve.url("CLIENT"), reader_pid(serve)
        holders = [Raw(url) for _ in range(3)]
        waiting, behind_poll = Raw(url), Raw(url)
        smalls = [Raw(url) for _ in range(12)]
        os.kill(reader, signal.SIGSTOP)
        try:
            for raw in holders:  # a broker's explains: 180,000 bytes held until answered
                raw.send(head("POST", "/v1/authorize", BROKER_TOKEN, len(held)) + held)
            time.sleep(0.3)
            # alice may hold 196,608 bytes: hers do not fit; one waits behind a long poll that ends meanwhile
            waiting.send(head("POST", "/v1/authorize", ALICE_TOKEN, len(body)) + body)
            poll = head("GET", "/v1/changes?wait_ms=1500", BROKER_TOKEN)
            behind_poll.send(poll + head("POST", "/v1/authorize", ALICE_TOKEN, len(body)) + body)
            for raw in smalls:  # small ones, head and body in one read: answered or waiting, never lost
                raw.send(head("POST", "/v1/authorize", ALICE_TOKEN, len(small)) + small)
            assert behind_poll.answer().status == 200  # the long poll, after 1.5 s
            for raw in (waiting, behind_poll):
                raw.sock.settimeout(1.5)  # three request timeouts after the first byte in all
                try:
                    early = raw.sock.recv(1024)
                except TimeoutError:
                    early = b""
                assert early == b"", f"answered while its memory was taken: {early[:120]!r}"
        finally:
            os.kill(reader, signal.SIGCONT)
        try:
            assert [raw.answer().status for raw in holders] == [200, 200, 200]
            for raw in (waiting, behind_poll, *smalls):
                raw.sock.settimeout(10)
                assert raw.answer().status == 200
        finally:
            for raw in [*holders, waiting, behind_poll, *smalls]:
                raw.close()
        deadline = time.monotonic() + 10
        while (held_bytes := _request_bytes(serve)) != 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert held_bytes == 0, f"{held_bytes} bytes of request memory were never given back"


def test_request_memory_waits_neither_deadlock_nor_outlive_the_waiter_ahead(tmp_path: Path) -> None:
    """The others' waits are first come first served, but a chunked body's next piece (its request holds memory
    already) does not queue behind a waiter that waits for it to finish, and when the waiter ahead leaves (503
    REQUEST_MEMORY_BUSY after connections.max.idle.ms) the ones behind that fit are granted at once."""
    props = base_properties(
        tmp_path,
        queued_max_request_bytes="262144",
        request_max_bytes="65536",
        connections_max_idle_ms="3000",
        request_timeout_ms="30000",
    )
    with ServeProcess(tmp_path, props).start() as serve:
        url, body = serve.url("CLIENT"), _padded(64_000)
        uploads = [Raw(url, timeout=20) for _ in range(3)]
        big, small = Raw(url, timeout=20), Raw(url, timeout=20)
        try:
            for raw in uploads:  # 180,000 of alice's 196,608 bytes, chunked
                raw.send(head("POST", "/v1/authorize", ALICE_TOKEN, None, "Transfer-Encoding: chunked"))
                raw.send(_chunk(body[:60_000]))
            time.sleep(0.3)
            big.send(head("POST", "/v1/authorize", ALICE_TOKEN, 60_000) + _padded(60_000))  # waits: does not fit
            time.sleep(0.3)
            for raw in uploads:  # 4,000 more bytes each (the end in another read): they fit, and must not wait
                raw.send(_chunk(body[60_000:]))  # behind `big`, which waits for them to finish
            time.sleep(0.3)
            for raw in uploads:
                raw.send(b"0\r\n\r\n")
            assert [raw.answer().status for raw in uploads] == [200, 200, 200], "a chunked body waited for a waiter"
            assert big.answer().status == 200  # granted when the uploads were answered
            holders = [Raw(url, timeout=20) for _ in range(3)]  # again 180,000 held, never finished
            for raw in holders:
                raw.send(head("POST", "/v1/authorize", ALICE_TOKEN, len(body)) + body[:1000])
            time.sleep(0.3)
            big.send(head("POST", "/v1/authorize", ALICE_TOKEN, 60_000) + _padded(60_000))  # waits: 503 at 3 s
            time.sleep(1.5)
            small.send(post("/v1/authorize", _padded(3_800), ALICE_TOKEN))  # fits, but waits behind `big`
            left = big.answer()
            answered_after = time.monotonic()
            assert left.status == 503 and left.json()["error"]["code"] == "REQUEST_MEMORY_BUSY"
            assert small.answer().status == 200
            assert time.monotonic() - answered_after < 1.0, "the waiter behind waited for its own deadline"
            for raw in holders:
                raw.close()
        finally:
            for raw in [*uploads, big, small]:
                raw.close()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _request_bytes(serve: ServeProcess) -> float:
    metrics = httpx.get(serve.url("CONTROLLER") + "/metrics", timeout=10).text
    return float(next(line.split()[1] for line in metrics.splitlines() if line.startswith("kraft_acl_request_bytes ")))


def test_a_client_that_does_not_read_its_answers_stops_being_read(tmp_path: Path) -> None:
    props = base_properties(tmp_path, connections_max_unsent_bytes="65536")
    with ServeProcess(tmp_path, props).start() as serve:
        assert serve.proc is not None
        before = rss_kb(serve.proc.pid)
        count = 3000  # 3,000 answers of the OpenAPI document: about 160 MB if serve kept writing them
        with Raw(serve.url("CLIENT")) as raw:
            raw.sock.setblocking(False)
            pending = head("GET", "/v1/openapi.json") * count
            sent, stalled_at = 0, None
            deadline = time.monotonic() + 10
            while sent < len(pending) and time.monotonic() < deadline:
                try:
                    sent += raw.sock.send(pending[sent : sent + 65536])
                except BlockingIOError:
                    stalled_at = sent
                    time.sleep(0.05)
                    continue
            time.sleep(1.0)
            during = rss_kb(serve.proc.pid)
            raw.sock.setblocking(True)
            raw.sock.settimeout(30)
            answers = raw.answers(count) if sent == len(pending) else []
        print(f"serve RSS before {before} kB, with {count} unread answers pending {during} kB")
        assert during - before < 30_000, f"serve held the unread answers: RSS {before} -> {during} kB"
        assert stalled_at is not None or len(answers) == count
        if answers:
            assert {a.status for a in answers} == {200}


def test_connection_limits_keep_places_for_brokers_and_exempt_early_start_listeners(tmp_path: Path) -> None:
    props = base_properties(
        tmp_path, max_connections="12", max_connections_reserved_brokers="4", request_timeout_ms="60000"
    )
    props["listener.name.controller.max.connections"] = "2"
    with ServeProcess(tmp_path, props).start() as serve:
        url = serve.url("CLIENT")
        held = [Raw(url) for _ in range(8)]  # the places anyone may take
        try:
            time.sleep(0.2)
            with Raw(url) as alice:  # a kept place: only a broker principal may use it
                alice.send(head("GET", "/v1/acls/count", ALICE_TOKEN))
                refused = alice.until_closed()
            assert [a.status for a in refused] == [503] and refused[0].json()["error"]["code"] == "CONNECTION_LIMIT"
            broker = Raw(url)
            broker.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
            assert broker.answer().status == 200
            silent = [Raw(url) for _ in range(3)]  # 12 open: the last places are held by silent connections
            time.sleep(0.2)
            newcomer = Raw(url)  # the oldest silent one in a kept place makes room
            newcomer.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
            assert newcomer.answer().status == 200
            evicted = silent[0].until_closed()
            assert [a.status for a in evicted] == [503], evicted
            early = httpx.get(serve.url("CONTROLLER") + "/v1/status", timeout=10)  # exempt
            assert early.status_code == 200
            with Raw(serve.url("CONTROLLER")) as a, Raw(serve.url("CONTROLLER")) as b:
                time.sleep(0.2)
                with Raw(serve.url("CONTROLLER")) as third:  # its own limit: 2
                    assert [x.status for x in third.until_closed()] == [503]
                a.send(head("GET", "/v1/status"))
                assert a.answer().status == 200
                del b
            for raw in [*silent[1:], broker, newcomer]:
                raw.close()
        finally:
            for raw in held:
                raw.close()
        metrics = httpx.get(serve.url("CONTROLLER") + "/metrics", timeout=10).text
        assert 'kraft_acl_connections_refused_total{listener="CLIENT",reason="reserved"} 1.0' in metrics
        assert 'kraft_acl_connections_refused_total{listener="CLIENT",reason="evicted"} 1.0' in metrics


def test_one_client_address_holds_at_most_max_connections_per_ip(tmp_path: Path) -> None:
    """max.connections.per.ip counts one client address's connections over every listener, the early-start one
    included, as Kafka's ConnectionQuotas does: one more is refused (503 then close on a plain listener, closed at
    once before TLS) and makes nobody else leave; an override gives an address its own limit; a connection that
    closes gives its place back."""
    props = base_properties(tmp_path, max_connections_per_ip="3", max_connections_per_ip_overrides="127.0.0.2:5")
    client_tls = add_tls_listener(props, tmp_path)
    with ServeProcess(tmp_path, props).start() as serve:
        url = serve.url("CLIENT")
        mine = [Raw(url), Raw(serve.url("CONTROLLER")), Raw(serve.url("TLS"), tls=client_tls)]
        others: list[Raw] = []
        try:
            time.sleep(0.2)
            with Raw(url) as fourth:
                refused = fourth.until_closed()
            assert [a.status for a in refused] == [503], refused
            assert refused[0].json()["error"]["code"] == "CONNECTION_LIMIT"
            assert "127.0.0.1 has its max.connections.per.ip (3) open" in refused[0].json()["error"]["message"]
            with socket.create_connection(address(serve.url("TLS")), timeout=10) as before_tls:
                assert _closed_by_serve(before_tls), "a connection over the address's limit stayed open"
            for raw in mine:  # nobody made room for the refused ones
                raw.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
                assert raw.answer().status == 200
            others = [Raw(url, source="127.0.0.2") for _ in range(5)]  # its override: 5
            for raw in others:
                raw.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
                assert raw.answer().status == 200
            with Raw(url, source="127.0.0.2") as sixth:
                assert [a.status for a in sixth.until_closed()] == [503]
            mine.pop(0).close()
            time.sleep(0.3)
            with Raw(url) as again:  # the closed connection's place is free again
                again.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
                assert again.answer().status == 200
        finally:
            for raw in [*mine, *others]:
                raw.close()
        time.sleep(0.3)
        metrics = httpx.get(serve.url("CONTROLLER") + "/metrics", timeout=10).text
        assert 'kraft_acl_connections_refused_total{listener="CLIENT",reason="ip"} 2.0' in metrics
        assert 'kraft_acl_connections_refused_total{listener="TLS",reason="ip"} 1.0' in metrics


def test_a_connection_upgraded_to_frames_and_an_ipv4_mapped_peer_hold_their_address_place(tmp_path: Path) -> None:
    """max.connections.per.ip: the HTTP -> frames upgrade moves the connection's place, it neither frees nor doubles
    it (a second connection from the address is refused while the frames connection is open, admitted once it
    closed); on a dual-stack listener an IPv4 client (::ffff:127.0.0.2) is its IPv4 address, as in Kafka."""
    props = base_properties(tmp_path, max_connections_per_ip="1", max_connections_per_ip_overrides="127.0.0.3:2")
    v6 = free_port()
    props["listeners"] += f",V6://[::]:{v6}"

    def second(host: str, port: int, source: str) -> int:
        with Raw(f"http://{host}:{port}", source=source) as raw:
            raw.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
            return raw.answer().status

    with ServeProcess(tmp_path, props).start() as serve:
        host, port = address(serve.url("CLIENT"))
        frames = socket.create_connection((host, port), timeout=10, source_address=("127.0.0.2", 0))
        try:
            frames.sendall(upgrade_head(host, BROKER_TOKEN))
            got = b""
            while not got.endswith(b"\r\n\r\n"):
                got += frames.recv(1)
            assert got.startswith(b"HTTP/1.1 101 "), got
            time.sleep(0.2)
            assert second(host, port, "127.0.0.2") == 503, "the upgraded connection gave its place up"
        finally:
            frames.close()
        time.sleep(0.5)
        assert second(host, port, "127.0.0.2") == 200, "the closed frames connection still holds its place"
        mapped = f"http://127.0.0.1:{v6}"
        with Raw(mapped, source="127.0.0.3"), Raw(mapped, source="127.0.0.3") as two:  # ::ffff:127.0.0.3: 2
            two.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
            assert two.answer().status == 200
            with Raw(mapped, source="127.0.0.3") as third:
                assert [a.status for a in third.until_closed()] == [503]


def test_a_new_connection_must_bring_its_first_request_within_the_request_timeout(tmp_path: Path) -> None:
    props = base_properties(tmp_path, request_timeout_ms="800")  # connections.max.idle.ms stays 10 minutes
    with ServeProcess(tmp_path, props).start() as serve:
        url = serve.url("CLIENT")
        started = time.monotonic()
        with Raw(url) as silent:
            assert silent.until_closed() == []
        silent_closed = time.monotonic() - started
        started = time.monotonic()
        with Raw(url) as trickle:  # a slow head: one byte every 200 ms, never whole
            answers: list[Answer] = []
            for byte in b"GET /v1/status HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":
                try:
                    trickle.send(bytes([byte]))
                except OSError:
                    break
                time.sleep(0.2)
                if time.monotonic() - started > 6:
                    break
            answers = trickle.until_closed()
        trickled = time.monotonic() - started
    assert silent_closed < 5, f"a silent connection stayed {silent_closed:.1f}s"
    assert trickled < 6 and [getattr(a, "status", None) for a in answers] == [408], answers


def test_memory_goes_back_down_after_an_unauthenticated_flood(tmp_path: Path) -> None:
    """200 connections each announce a 16 MiB upload without credentials and send 1 MiB of it: refused at the head,
    nothing buffered (before, serve read every body whole before answering 401)."""
    with ServeProcess(tmp_path, base_properties(tmp_path)).start() as serve:
        assert serve.proc is not None
        host, port = address(serve.url("CLIENT"))
        with httpx.Client(base_url=serve.url("CLIENT"), timeout=10) as warm:
            for _ in range(50):
                warm.get("/v1/status")
        before = rss_kb(serve.proc.pid)
        socks = []
        chunk = b"x" * (1024 * 1024)
        for _ in range(200):
            s = socket.create_connection((host, port), timeout=10)
            s.sendall(head("POST", "/v1/acls/import", None, 16 * 1024 * 1024))
            with contextlib.suppress(OSError):  # serve answered and closed: the client sees it mid-upload
                s.sendall(chunk)
            socks.append(s)
        during = rss_kb(serve.proc.pid)
        statuses = []
        for s in socks:
            s.settimeout(10)
            try:
                statuses.append(s.recv(64)[:12])
            except OSError:
                statuses.append(b"reset")
            s.close()
        time.sleep(1.0)
        after = rss_kb(serve.proc.pid)
    print(f"serve RSS before {before} kB, during a 200 x 1 MiB unauthenticated flood {during} kB, after {after} kB")
    assert set(statuses) <= {b"HTTP/1.1 401", b"reset"} and b"HTTP/1.1 401" in statuses
    assert during - before < 40_000, f"{before} -> {during} kB"
    assert after - before < 20_000, f"{before} -> {after} kB"


def test_refused_connections_give_their_places_up_at_once(tmp_path: Path) -> None:
    """A refused connection stays open a moment to deliver its answer, but holds no place meanwhile: callers that
    connect without credentials over and over (each refused, then lingering) cannot fill the places kept for
    brokers. Before, each refusal held its place for 2 s, and 360 refusals a second locked brokers out."""
    props = base_properties(
        tmp_path, max_connections="12", max_connections_reserved_brokers="4", request_timeout_ms="60000"
    )
    with ServeProcess(tmp_path, props).start() as serve:
        url = serve.url("CLIENT")
        held = [Raw(url) for _ in range(8)]  # the places anyone may take, held silently
        refused: list[Raw] = []
        try:
            time.sleep(0.2)
            for _ in range(40):  # refused at their heads (no credentials), never closed by the client
                raw = Raw(url)
                raw.send(head("GET", "/v1/acls/count"))
                assert raw.answer().status in (401, 503)
                refused.append(raw)
            broker = Raw(url)
            broker.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
            assert broker.answer().status == 200, "a broker found no place"
            broker.close()
        finally:
            for raw in [*held, *refused]:
                raw.close()


def test_a_connection_that_never_shows_credentials_keeps_no_place_for_long(tmp_path: Path) -> None:
    """A caller of the public endpoints only (no credentials) gets the short idle limit (request.timeout.ms)
    after its answer, not connections.max.idle.ms (10 minutes): it cannot hold places idle. A broker's
    connection keeps the long one."""
    props = base_properties(tmp_path, request_timeout_ms="800")
    with ServeProcess(tmp_path, props).start() as serve:
        url = serve.url("CLIENT")
        with Raw(url) as anonymous, Raw(url) as broker:
            anonymous.send(head("GET", "/v1/status"))
            broker.send(head("GET", "/v1/status", BROKER_TOKEN))
            assert anonymous.answer().status == 200 and broker.answer().status == 200
            started = time.monotonic()
            assert anonymous.until_closed() == []
            assert time.monotonic() - started < 5, "the anonymous connection idled past request.timeout.ms"
            time.sleep(1.0)
            broker.send(head("GET", "/v1/status", BROKER_TOKEN))
            assert broker.answer().status == 200, "the broker's connection was closed as idle"


def _still_open(sock: socket.socket) -> bool:
    """True while serve has not closed `sock` (nothing to read yet)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def _closed_by_serve(sock: socket.socket, timeout: float = 10.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_tls_handshake_holds_a_place_from_its_accept(tmp_path: Path) -> None:
    """On a TLS listener a connection is counted from its accept, its handshake included: TCP connections that
    never send a ClientHello take the listener's places, the next one is closed at once, and they are closed
    after request.timeout.ms. Before, a handshake in progress was counted nowhere: any number could be held."""
    props = base_properties(tmp_path, request_timeout_ms="3000")
    client_tls = add_tls_listener(props, tmp_path)
    props["listener.name.tls.max.connections"] = "4"
    with ServeProcess(tmp_path, props).start() as serve:
        stalled = [socket.create_connection(address(serve.url("TLS")), timeout=10) for _ in range(4)]
        try:
            time.sleep(0.3)
            metrics = httpx.get(serve.url("CONTROLLER") + "/metrics", timeout=10).text
            assert 'kraft_acl_connections{listener="TLS"} 4.0' in metrics
            with socket.create_connection(address(serve.url("TLS")), timeout=10) as fifth:
                assert _closed_by_serve(fifth), "a connection beyond the listener's max.connections stayed open"
            assert all(_still_open(s) for s in stalled), "the handshakes in progress were closed before their time"
            assert all(_closed_by_serve(s) for s in stalled), "a stalled handshake outlived request.timeout.ms"
        finally:
            for s in stalled:
                s.close()
        time.sleep(0.3)
        with Raw(serve.url("TLS"), tls=client_tls) as client:  # the places are free again
            client.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
            assert client.answer().status == 200
        metrics = httpx.get(serve.url("CONTROLLER") + "/metrics", timeout=10).text
        assert 'kraft_acl_connections_refused_total{listener="TLS",reason="limit"} 1.0' in metrics


def test_brokers_get_in_past_a_flood_of_stalled_tls_handshakes(tmp_path: Path) -> None:
    """Stalled handshakes in the places kept for brokers make room for a newcomer like any connection that has not
    shown who it is: a caller that is not a broker is then refused at its first request, and a broker gets in."""
    props = base_properties(
        tmp_path, max_connections="12", max_connections_reserved_brokers="4", request_timeout_ms="60000"
    )
    client_tls = add_tls_listener(props, tmp_path)
    with ServeProcess(tmp_path, props).start() as serve:
        stalled = [socket.create_connection(address(serve.url("TLS")), timeout=10) for _ in range(12)]
        try:
            time.sleep(0.3)
            with Raw(serve.url("TLS"), tls=client_tls) as alice:
                alice.send(head("GET", "/v1/acls/count", ALICE_TOKEN))
                refused = alice.until_closed()
            assert [a.status for a in refused] == [503] and refused[0].json()["error"]["code"] == "CONNECTION_LIMIT"
            with Raw(serve.url("TLS"), tls=client_tls) as broker:
                broker.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
                assert broker.answer().status == 200
            assert _closed_by_serve(stalled[8]), "the oldest handshake in a kept place stayed"
            assert all(_still_open(s) for s in stalled[:8]), "a handshake in a place anyone may take was evicted"
        finally:
            for s in stalled:
                s.close()
        metrics = httpx.get(serve.url("CONTROLLER") + "/metrics", timeout=10).text
        assert 'kraft_acl_connections_refused_total{listener="TLS",reason="evicted"}' in metrics


def test_a_tls_listener_outlives_running_out_of_file_descriptors(tmp_path: Path) -> None:
    """Connections beyond the process's file descriptors fail at the accept (EMFILE): serve says so in its log and
    keeps accepting once descriptors are free again, as a Kafka acceptor does."""
    props = base_properties(tmp_path, request_timeout_ms="60000")
    client_tls = add_tls_listener(props, tmp_path)
    with ServeProcess(tmp_path, props).start() as serve:
        assert serve.pid is not None
        open_fds = len(os.listdir(f"/proc/{serve.pid}/fd"))
        limit = open_fds + 8
        subprocess.run(["prlimit", f"--pid={serve.pid}", f"--nofile={limit}:{limit}"], check=True)
        flood = [socket.create_connection(address(serve.url("TLS")), timeout=10) for _ in range(16)]
        try:
            deadline = time.monotonic() + 10
            while "accept failed" not in serve.output() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert "Too many open files" in serve.output(), serve.output()
        finally:
            for s in flood:
                s.close()
        time.sleep(0.5)
        with Raw(serve.url("TLS"), tls=client_tls) as client:
            client.send(head("GET", "/v1/acls/count", BROKER_TOKEN))
            assert client.answer().status == 200
        assert serve.output().count("accept failed") <= 3, "one line per run of failures, not one per retry"


def test_silent_connections_on_the_early_start_listener_keep_no_broker_out(tmp_path: Path) -> None:
    """The early-start listener is the brokers' port: silent connections filling it (nobody's credentials needed to
    open one) neither count against max.connections (every other listener stays open to brokers) nor hold its own
    last places (kept for brokers, as the process keeps its own: the oldest silent one there makes room)."""
    props = base_properties(tmp_path, max_connections="20", max_connections_reserved_brokers="4")
    with ServeProcess(tmp_path, props).start() as serve:
        silent = [socket.create_connection(address(serve.url("CONTROLLER"))) for _ in range(20)]
        try:
            time.sleep(0.3)
            for listener in ("CLIENT", "CONTROLLER"):
                with Raw(serve.url(listener)) as broker:
                    broker.send(post("/v1/authorize", ONE_ACTION, BROKER_TOKEN))
                    answer = broker.answer()
                    assert answer.status == 200, (listener, answer)
            with Raw(serve.url("CONTROLLER")) as alice:  # a kept place of that listener: brokers only
                alice.send(post("/v1/authorize", ONE_ACTION, ALICE_TOKEN))
                assert [a.status for a in alice.until_closed()] == [503]
        finally:
            for sock in silent:
                sock.close()


def test_a_delete_cannot_make_serve_answer_without_bound(tmp_path: Path) -> None:
    """A few KB of match-all filters made a delete answer with every ACL once per filter (96 MB for 100 filters over
    5,000 ACLs, the loop held 450 ms): one delete reports at most MAX_REPORTED_PER_DELETE entries over its filters
    (else every filter is INVALID_REQUEST and nothing is deleted; Kafka's own cap, 10,000 removals, is checked first)
    and takes at most MAX_DELETE_FILTERS filters (a 400 naming $.filters); within them, a filter sent twice reports
    its ACLs twice and each is removed once, as Kafka."""
    acls = [{**ACL_TEMPLATE, "resource_name": f"t-{n}"} for n in range(9_000)]  # under Kafka's 10,000 removals
    with ServeProcess(tmp_path, base_properties(tmp_path)).start() as serve, serve.client(token=ADMIN_TOKEN) as admin:
        for start in range(0, len(acls), 5000):
            created = admin.post("/v1/acls/create", json={"acls": acls[start : start + 5000]})
            assert created.status_code == 200, created.text
        copies = MAX_REPORTED_PER_DELETE // len(acls) + 1  # each reports all 9,000: one copy too many
        refused = admin.post("/v1/acls/delete", json={"filters": [{}] * copies})
        assert refused.status_code == 200, refused.text
        results = refused.json()["results"]
        assert {r["error"] for r in results} == {"INVALID_REQUEST"} and "nothing was deleted" in results[0]["message"]
        too_many = admin.post("/v1/acls/delete", json={"filters": [{"principal": "User:x"}] * (MAX_DELETE_FILTERS + 1)})
        assert too_many.status_code == 400 and too_many.json()["error"]["field"] == "$.filters", too_many.text
        assert admin.get("/v1/acls/count").json()["count"] == len(acls)
        twice = admin.post("/v1/acls/delete", json={"filters": [{"resource_name": "t-1"}] * 2}).json()["results"]
        assert [len(r["acls"]) for r in twice] == [1, 1]
        assert admin.get("/v1/acls/count").json()["count"] == len(acls) - 1
