"""An operator's first mistakes with the plugin, in a real broker: a token serve does not know is an ERROR naming the
cause and the fix at its first occurrence (not an INFO every 10 s while the broker waits forever), and a relative
kraft.acl.token.file that does not exist stops the broker with one line saying what it is resolved against.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest

from kraftacl.harness.serve_process import ServeProcess
from tests.integration.plugin.conftest import plugin_jar, plugin_props, serve_props, start_serve
from tests.kafka_broker import KafkaBroker, KafkaBrokerError

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(600)]


def broker_log(broker: KafkaBroker) -> str:
    logs = broker.log_dir
    return "\n".join(p.read_text(errors="replace") for p in (logs / "server.log", logs / "kafka.out") if p.exists())


def test_a_token_serve_does_not_know_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    jar = plugin_jar()
    serve = ServeProcess(tmp_path / "serve", serve_props(tmp_path / "serve", tmp_path / "log"))
    start_serve(serve)
    props = plugin_props([serve.url("CONTROLLER")], tmp_path / "plugin.token")
    token_file = tmp_path / "wrong.token"
    token_file.write_text("not-the-plugin-token-0123456789\n")
    props["kraft.acl.token.file"] = str(token_file)
    broker = KafkaBroker(tmp_path / "broker", authorizer=True, extra_props=props, classpath=str(jar),
                         start_timeout=120)  # fmt: skip
    starting = threading.Thread(target=lambda: _start_quietly(broker), daemon=True)
    starting.start()
    try:
        deadline = time.monotonic() + 180
        while "cannot be used until this is fixed" not in broker_log(broker):
            assert time.monotonic() < deadline, broker_log(broker)[-3000:]
            time.sleep(0.5)
        time.sleep(3)  # the listeners wait and keep asking: the ERROR must not repeat at once
        errors = [line for line in broker_log(broker).splitlines() if "cannot be used until this is fixed" in line]
        assert len(errors) == 1, errors
        assert "] ERROR " in errors[0], errors[0]
        assert "with HTTP 401 UNAUTHENTICATED" in errors[0], errors[0]
        assert f"the token in kraft.acl.token.file={token_file} is not in serve's auth.token.file" in errors[0]
    finally:
        broker.stop()
        serve.stop()
        starting.join(120)


def _start_quietly(broker: KafkaBroker) -> None:
    with contextlib.suppress(KafkaBrokerError):  # it never opens its listeners: the test stops it
        broker.start()


def test_a_relative_token_file_that_does_not_exist_names_the_working_directory(tmp_path: Path) -> None:
    jar = plugin_jar()
    props = plugin_props(["http://127.0.0.1:9"], tmp_path / "plugin.token")
    props["kraft.acl.token.file"] = "examples/plugin/no-such.token"
    broker = KafkaBroker(tmp_path / "broker", authorizer=True, extra_props=props, classpath=str(jar))
    try:
        with pytest.raises(KafkaBrokerError):
            broker.start()
        log = broker_log(broker)
        assert "kraft.acl.token.file" in log and "resolved against the broker's working directory (" in log, log[-3000:]
    finally:
        broker.stop()
