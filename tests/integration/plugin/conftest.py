"""Fixtures for the Kafka broker plugin tests: the plugin jar, two `kraft-acl serve` processes on one embedded
log (A: controller role, B: broker role, a read-only follower of A's log) and a real SASL/PLAIN KRaft broker
whose `authorizer.class.name` is the plugin, asking A and failing over to B.

Like every Kafka test these never skip with CI=true; without Java or Maven elsewhere they skip loudly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kraftacl.harness.plugin_jar import AUTHORIZER_CLASS, PluginBuildError, ensure_built
from kraftacl.harness.serve_process import ServeProcess, ServeProcessError, free_port
from tests.integration.conftest import _unavailable, start_or_fail
from tests.integration.plugin.clients import ADMIN_TOKEN
from tests.kafka_broker import KafkaBroker, KafkaBrokerError, fetch_jars, java_problem, maven_problem

PLUGIN_TOKEN = "plugin-token-0123456789abcdef"
#: One SASL user per test, besides the script's admin (a super user), alice and bob.
SASL_USERS = ("carol", "dave", "erin", "frank", "gina", "hank", "ivan", "judy", "kim", "leo", "mia", "nora", "oscar")


@dataclass
class PluginSetup:
    """The broker, the serves it asks (in order) and the files they share."""

    broker: KafkaBroker
    serves: list[ServeProcess]
    log_dir: Path

    @property
    def primary(self) -> ServeProcess:
        return self.serves[0]


def serve_props(directory: Path, log_dir: Path, *, controller: bool = True) -> dict[str, str]:
    """A serve on `log_dir`: CONTROLLER (early start, the one the plugin asks) and CLIENT, bearer tokens."""
    tokens = directory / "tokens"
    directory.mkdir(parents=True, exist_ok=True)
    tokens.write_text(f"User:broker {PLUGIN_TOKEN}\nUser:admin {ADMIN_TOKEN}\n", encoding="utf-8")
    return {
        "node.id": "1" if controller else "2",
        "process.roles": "broker,controller" if controller else "broker",
        "listeners": f"CONTROLLER://127.0.0.1:{free_port()},CLIENT://127.0.0.1:{free_port()}",
        "early.start.listeners": "CONTROLLER",
        "super.users": "User:admin",
        "metadata.log.dir": str(log_dir),
        "metadata.log.poll.interval.ms": "20",
        "auth.token.file": str(tokens),
        "broker.principals": "User:broker",
    }


def plugin_props(urls: list[str], token_file: Path) -> dict[str, str]:
    """The broker properties that make the plugin its authorizer."""
    token_file.write_text(f"# the plugin's bearer token (User:broker in serve's auth.token.file)\n{PLUGIN_TOKEN}\n")
    return {
        "authorizer.class.name": AUTHORIZER_CLASS,
        "kraft.acl.urls": ",".join(urls),
        "kraft.acl.token.file": str(token_file),
        "kraft.acl.ready.poll.ms": "100",
    }


def plugin_jar() -> Path:
    """The built jar (building it when stale); unavailable Java/Maven fails in CI and skips elsewhere."""
    for problem in (java_problem(), maven_problem()):
        if problem is not None:
            _unavailable(problem)
    try:
        fetch_jars()
        return ensure_built()
    except (KafkaBrokerError, PluginBuildError) as exc:
        pytest.fail(f"KAFKA PLUGIN COULD NOT BE BUILT: {exc}", pytrace=False)


def start_serve(serve: ServeProcess, wait_ready: bool = True) -> None:
    """Start, failing with serve's output."""
    try:
        serve.start(wait_ready=wait_ready)
    except ServeProcessError as exc:
        serve.stop()
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def plugin_setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PluginSetup]:
    """Serve A (controller) and B (broker role) on one log, and the broker asking A then B."""
    jar = plugin_jar()
    root = tmp_path_factory.mktemp("plugin")
    log_dir = root / "log"
    serves = [
        ServeProcess(root / "serve-a", serve_props(root / "serve-a", log_dir)),
        ServeProcess(root / "serve-b", serve_props(root / "serve-b", log_dir, controller=False)),
    ]
    for serve in serves:
        start_serve(serve)
    props = plugin_props([s.url("CONTROLLER") for s in serves], root / "plugin.token")
    props["auto.create.topics.enable"] = "true"
    broker = KafkaBroker(root / "broker", authorizer=True, extra_props=props, classpath=str(jar), sasl_users=SASL_USERS)
    try:
        start_or_fail(broker)
        yield PluginSetup(broker, serves, log_dir)
    finally:
        broker.stop()
        for serve in serves:
            serve.stop()
