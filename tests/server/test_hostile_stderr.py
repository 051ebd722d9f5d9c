"""A serve whose stderr nobody reads (a pipe never drained, a stalled log shipper): its log records wait in a
bounded queue for one writer thread, so the event loop answering brokers never blocks on a write. Before, one
caller's denied self-queries (each an INFO audit line) filled the pipe and every broker's decision, and SIGTERM,
waited for good."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from kraftacl.harness.serve_process import kraft_acl_command
from tests.server.serve_process import ALICE_TOKEN, BROKER_TOKEN, base_properties

DENIED = {"principal": "User:alice", "client_address": "10.0.0.7", "request": "Produce"}


@contextmanager
def _serve_with_stderr_not_read(tmp_path: Path, reader: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A serve whose stderr is a pipe never read (about 64 KiB fit, then every write to it blocks), once it answers
    its status: its process and CLIENT URL. Killed at the end if it still runs."""
    props = base_properties(tmp_path, heavy_reads_process=reader)
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    client = "http://" + re.findall(r"CLIENT://([^,]+)", props["listeners"])[0]
    proc = subprocess.Popen(
        [*kraft_acl_command(), "serve", "--config", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(client + "/v1/status", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        yield proc, client
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.parametrize("reader", ["off", "on"])
def test_a_stderr_nobody_reads_never_blocks_decisions_or_shutdown(tmp_path: Path, reader: str) -> None:
    """With the reader process too (it shares serve's stderr): its exit does not wait for stderr either, so
    SIGTERM is not held by serve waiting for its reader."""
    with _serve_with_stderr_not_read(tmp_path, reader) as (proc, client):
        actions = [{"operation": "WRITE", "resource_type": "TOPIC", "resource_name": f"t-{n}"} for n in range(1000)]
        with httpx.Client(timeout=10) as http:
            for _ in range(20):  # 20,000 denials, each an INFO audit line of about 250 bytes: 5 MB
                answer = http.post(  # a broker's: a caller asking about itself has a budget of audit lines
                    client + "/v1/authorize",
                    json={**DENIED, "actions": actions},
                    headers={"Authorization": f"Bearer {BROKER_TOKEN}"},
                )
                assert answer.status_code == 200
            explained = http.post(  # more than 32 actions with explain: the reader's work, and its audit lines
                client + "/v1/authorize",
                json={**DENIED, "actions": actions[:100], "explain": True},
                headers={"Authorization": f"Bearer {ALICE_TOKEN}"},
            )
            assert explained.status_code == 200
            broker = http.post(
                client + "/v1/authorize",
                json={**DENIED, "actions": actions[:1]},
                headers={"Authorization": f"Bearer {BROKER_TOKEN}"},
            )
            assert broker.json()["results"] == ["DENIED"], "a broker's decision waited for stderr"
            metrics = http.get(client + "/metrics").text
        dropped = re.findall(r"^kraft_acl_log_records_dropped_total (\S+)$", metrics, re.M)
        assert dropped and float(dropped[0]) > 0, "the records that did not fit are counted"
        proc.send_signal(signal.SIGTERM)
        stopping = time.monotonic()
        assert proc.wait(timeout=20) == 0, "SIGTERM waited for stderr"
        assert time.monotonic() - stopping < 8, "serve's exit waited for its reader (killed after 10 s)"


def test_the_records_waiting_for_a_stderr_nobody_reads_are_bounded_in_size(tmp_path: Path) -> None:
    """A broker's denial is an INFO audit line with the names its Kafka client chose (a group id of 32,767
    characters): 10,000 records of two such names waited for stderr, 650 MB of serve (437 MB after 6000). The queue
    holds at most QUEUE_CHARS characters of records; the rest are dropped and counted."""

    def rss_mb() -> int:
        with open(f"/proc/{proc.pid}/status") as status:
            return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS"))

    with _serve_with_stderr_not_read(tmp_path, "off") as (proc, client):
        before = rss_mb()
        long = "g" * 32_767
        body = {**DENIED, "request": long, "actions": [{"operation": "READ", "resource_type": "GROUP"}]}
        with httpx.Client(timeout=10, headers={"Authorization": f"Bearer {BROKER_TOKEN}"}) as http:
            for n in range(5000):
                body["actions"][0]["resource_name"] = f"{n:04d}{long[4:]}"  # type: ignore[index]
                assert http.post(client + "/v1/authorize", json=body).json()["results"] == ["DENIED"]
        grown = rss_mb() - before
        assert grown < 120, f"serve grew by {grown} MB holding log records stderr did not take"
