"""KIP-801 start-up through the plugin: a broker started before serve has loaded its ACLs opens only its
early-start listener (where its super user is served); its other listener accepts no connection until serve,
loading a large log, reports ready; then the broker opens it with no restart.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from kraftacl.api.endpoints import STATUS
from kraftacl.harness.serve_process import ServeProcess
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec.avro import new_uuid
from kraftacl.metadata_log.records import AccessControlEntryRecord
from tests.integration.conftest import start_or_fail
from tests.integration.plugin.clients import ADMIN_TOKEN, create_topics, produce, visible_topics
from tests.integration.plugin.conftest import plugin_jar, plugin_props, serve_props
from tests.kafka_broker import KafkaBroker

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(600)]

LOG_RECORDS = 400_000  # serve loads these in several seconds on the test machine
TOPIC = "early-topic"


def write_large_log(log_dir: Path) -> None:
    """LOG_RECORDS ACLs of other principals, then alice's DESCRIBE on TOPIC (the last record)."""
    with FileLog(log_dir) as log:
        for start in range(0, LOG_RECORDS, 5000):
            log.append(
                [
                    AccessControlEntryRecord(
                        new_uuid(), 2, f"svc{n % 997}.events-{n}", 3, f"User:u{n % 5000}", "*", 3, 3
                    )
                    for n in range(start, start + 5000)
                ]
            )
        log.append([AccessControlEntryRecord(new_uuid(), 2, TOPIC, 3, "User:alice", "*", 8, 3)])


def accepts(address: str) -> bool:
    """True when a TCP connection to host:port succeeds."""
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def wait_for(check: object, what: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"no {what} within {timeout:.0f}s"
        time.sleep(0.1)


def serve_loading(serve: ServeProcess) -> bool:
    status, body = serve.call(STATUS, ADMIN_TOKEN, listener="CONTROLLER")
    return status == 503 and body["ready"] is False


def test_listeners_open_when_serve_has_loaded(tmp_path: Path) -> None:
    jar = plugin_jar()
    write_large_log(tmp_path / "log")
    serve = ServeProcess(tmp_path / "serve", serve_props(tmp_path / "serve", tmp_path / "log", controller=False))
    props = plugin_props([serve.url("CONTROLLER")], tmp_path / "plugin.token")
    props["early.start.listeners"] = "CONTROLLER,EARLY"
    broker = KafkaBroker(
        tmp_path / "broker", authorizer=True, extra_props=props, classpath=str(jar), listeners=["EARLY:SASL_PLAINTEXT"]
    )
    started = threading.Thread(target=start_or_fail, args=(broker,), daemon=True)
    try:
        started.start()  # returns at "Kafka Server started": only once serve is ready
        broker.wait_for_ports()
        early, main = broker.listener_bootstrap("EARLY"), broker.bootstrap_servers
        wait_for(lambda: accepts(early), "early-start listener")
        assert not accepts(main), "the listener that is not early-start must wait for serve"
        create_topics(broker, TOPIC, listener="EARLY")
        assert produce(broker, "admin", TOPIC, listener="EARLY") is None  # the super user is served
        assert TOPIC not in visible_topics(broker, "alice", listener="EARLY")  # no serve: fail closed

        serve.start(wait_ready=False)
        loading_checks = 0
        while serve_loading(serve):
            assert not accepts(main)
            if serve_loading(serve):
                loading_checks += 1
            time.sleep(0.05)
        print(f"checked the closed listener {loading_checks} times while serve loaded")
        assert loading_checks > 0, "serve finished loading before the broker could be checked; grow LOG_RECORDS"
        serve.wait_ready()
        started.join(180)
        assert not started.is_alive(), "the broker did not finish starting once serve was ready"
        assert accepts(main)
        assert TOPIC in visible_topics(broker, "alice")
        assert TOPIC in visible_topics(broker, "alice", listener="EARLY")

        # serve restarts under the running broker and answers 503 while it loads: the open listeners get denials
        # (with a WARN), never KIP-801's AuthorizerNotReadyException, which is for the broker's own start-up.
        serve.stop()
        serve.start(wait_ready=False)
        denied_while_loading = 0
        while serve_loading(serve):
            topics = visible_topics(broker, "alice")
            if serve_loading(serve):
                assert TOPIC not in topics, "decided from memory while serve was loading"
                denied_while_loading += 1
        assert denied_while_loading > 0, "serve finished loading before the broker could be checked"
        serve.wait_ready()
        wait_for(lambda: TOPIC in visible_topics(broker, "alice"), "alice's topic visible again", 120)
        log = (broker.log_dir / "server.log").read_text(errors="replace")
        assert "AuthorizerNotReadyException" not in log
        assert "fail closed" in log
    finally:
        broker.stop()
        serve.stop()
