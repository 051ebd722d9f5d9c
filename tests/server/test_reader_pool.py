"""The reader process's connections are not one caller's to hold (`server.reader`, OTHERS_POOL): a caller allowed
DESCRIBE on the cluster but not a broker asks GET /v1/acls/image on 32 connections and reads none of the answers;
each relayed answer holds a connection to the reader until its client has read it, and with all 32 held a broker's
heavy read (an authorize call of more than 32 actions with its rules) waited the pool's 30 s, then ran on serve's
own loop. Against a real serve process with its reader."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from tests.server.raw_http import address, head
from tests.server.serve_process import (
    ADMIN_TOKEN,
    ALICE_READ_ORDERS,
    ALICE_TOKEN,
    BROKER_TOKEN,
    ServeProcess,
    base_properties,
)

EXPLAIN = {
    "principal": "User:alice",
    "client_address": "10.0.0.1",
    "explain": True,
    "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": f"t-{i}"} for i in range(40)],
}
ALICE_DESCRIBES = {
    "resource_type": "CLUSTER",
    "resource_name": "kafka-cluster",
    "pattern_type": "LITERAL",
    "principal": "User:alice",
    "host": "*",
    "operation": "DESCRIBE",
    "permission_type": "ALLOW",
}


def test_unread_relayed_answers_of_one_caller_do_not_hold_every_connection_to_the_reader(tmp_path: Path) -> None:
    props = base_properties(tmp_path, heavy_reads_process="on", connections_max_unsent_bytes="16384")
    with ServeProcess(tmp_path / "serve", props).start() as serve:
        serve.wait_for("heavy reads: reader process", 60)
        acls = [{**ALICE_READ_ORDERS, "resource_name": f"topic-{i:06d}-" + "x" * 200} for i in range(20000)]
        with serve.client(token=ADMIN_TOKEN, timeout=120) as admin:
            assert admin.post("/v1/acls/import", json={"acls": [*acls, ALICE_DESCRIBES]}).status_code == 200
        with serve.client(token=BROKER_TOKEN, timeout=120) as broker:
            assert broker.post("/v1/authorize", json=EXPLAIN).status_code == 200  # the reader has caught up
            held = []
            try:
                for _ in range(32):
                    sock = socket.socket()
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    sock.connect(address(serve.url("CLIENT")))
                    sock.sendall(head("GET", "/v1/acls/image", ALICE_TOKEN))
                    held.append(sock)
                time.sleep(2.0)  # every image relayed as far as its client reads: not at all
                started = time.monotonic()
                assert broker.post("/v1/authorize", json=EXPLAIN).status_code == 200
                waited = time.monotonic() - started
            finally:
                for sock in held:
                    sock.close()
        assert waited < 10.0, f"a broker's heavy read waited {waited:.1f} s for a connection to the reader"
