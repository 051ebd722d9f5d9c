"""`make broker` / `make broker-stop`: a real Kafka broker in the background whose authorizer is the plugin, asking
the serve `make run` started, with ready-made client property files for its SASL/PLAIN users.

Stateless functions over a broker directory (`data/broker`); the broker itself is scripts/kafka-broker.sh's, in its
own process group. Every path written into a property file is absolute, so the files work from any directory (the
broker's JVM runs in the broker directory, where a path relative to the checkout would not resolve).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from kraftacl.authorizer.decision.config import load_properties
from kraftacl.authorizer.errors import ConfigError
from kraftacl.harness.plugin_jar import AUTHORIZER_CLASS
from kraftacl.server.config import load

#: The SASL/PLAIN users scripts/kafka-broker.sh gives a `--sasl` broker (admin is the broker's super user), each
#: with what it is in the demo (examples/serve/acls.json grants alice and bob their ACLs).
USERS: dict[str, tuple[str, str]] = {
    "admin": ("admin-secret", "a super user of the broker (decided in the broker, never asked of serve)"),
    "alice": ("alice-secret", "User:alice: reads orders* (examples/serve/acls.json)"),
    "bob": ("bob-secret", "User:bob: creates, describes and writes payments"),
}
SUPER_USERS = "User:admin;User:ANONYMOUS"  # ANONYMOUS: the broker's PLAINTEXT controller listener
EXIT_INPUT, EXIT_FAILED = 2, 1


class DemoBrokerError(Exception):
    """What stops `make broker`, in one line for the operator; `code` is the exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def serve_url(serve_config: Path) -> str:
    """The URL the plugin asks: serve's first early-start listener (it answers while serve loads, KIP-801)."""
    try:
        settings = load(serve_config)
    except ConfigError as exc:
        raise DemoBrokerError(str(exc), EXIT_INPUT) from exc
    listeners = sorted(settings.listeners, key=lambda listener: not listener.early_start)
    return listeners[0].url()


def check_serve(url: str, serve_config: Path) -> None:
    """One GET /v1/status: any HTTP answer (ready, loading, 401) means serve is there; no answer is an error."""
    try:
        with urllib.request.urlopen(f"{url}/v1/status", timeout=5):
            return
    except urllib.error.HTTPError:
        return
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DemoBrokerError(
            f"no kraft-acl serve answers at {url} (the early-start listener of {serve_config}): {reason}; "
            "start it first with `make run` (in another terminal)"
        ) from exc


def plugin_properties(template: Path, url: str) -> str:
    """The broker properties of the plugin: the template's, with serve's URL and every file path made absolute
    (relative paths in the template are relative to the checkout, the directory `make broker` runs in)."""
    try:
        props = load_properties(template)
    except ConfigError as exc:
        raise DemoBrokerError(str(exc), EXIT_INPUT) from exc
    props.setdefault("authorizer.class.name", AUTHORIZER_CLASS)
    props["kraft.acl.urls"] = url
    props["super.users"] = SUPER_USERS
    for key in ("kraft.acl.token.file",):
        if key in props:
            path = Path(props[key]).absolute()
            if not path.is_file():
                raise DemoBrokerError(f"{template}: {key}={props[key]}: no such file", EXIT_INPUT)
            props[key] = str(path)
    lines = [
        "# Written by `make broker` (kraftacl/harness/demo_broker.py) from " + str(template) + ": the properties that",
        "# make kraft-acl serve a Kafka 4.1+ broker's authorizer",
        "# (Kafka 4.0: authorizer.class.name=io.github.kraftacl.plugin.KraftAclAuthorizerKafka40).",
        "# Every path is absolute: paste these lines into any broker's server.properties, started from any directory.",
        *(f"{k}={v}" for k, v in props.items()),
    ]
    return "\n".join(lines) + "\n"


def client_properties(user: str) -> str:
    """A Kafka client's properties for one SASL/PLAIN user of the broker (kafka-acls, console producer, ...)."""
    password, what = USERS[user]
    return (
        f"# {user}: {what}\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{password}";\n'
    )


def _write_if_changed(path: Path, text: str) -> bool:
    """Write `text` to `path`; True when the file was missing or held something else."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def _kafka_script(args: Sequence[str], cwd: Path, env: Mapping[str, str]) -> str:
    """Run scripts/kafka-broker.sh (its notes pass through to stderr); its KEY=VALUE lines."""
    script = Path("scripts/kafka-broker.sh").absolute()
    proc = subprocess.run(
        ["bash", str(script), *args], cwd=cwd, env={**os.environ, **env}, stdout=subprocess.PIPE, text=True, check=False
    )
    if proc.returncode != 0:
        raise DemoBrokerError(f"scripts/kafka-broker.sh {args[0]} exited {proc.returncode} (its messages are above)")
    return proc.stdout


def start(directory: Path, port: int, serve_config: Path, plugin_jar: Path, template: Path) -> list[str]:
    """Start (or find running) the demo broker; the lines to print: BOOTSTRAP=..., the files, what to try."""
    directory = directory.absolute()
    directory.mkdir(parents=True, exist_ok=True)
    if not plugin_jar.is_file():
        raise DemoBrokerError(f"no plugin jar {plugin_jar}: `make plugin` builds it (Maven, Java 17)")
    url = serve_url(serve_config)
    check_serve(url, serve_config)
    props = plugin_properties(template, url)
    changed = _write_if_changed(directory / "plugin.properties", props)
    clients = {user: directory / f"{user}.properties" for user in USERS}
    for user, path in clients.items():
        _write_if_changed(path, client_properties(user))
    extra = props + "auto.create.topics.enable=true\n"  # a producer allowed CREATE on a topic creates it
    args = ["start", "--authorizer", "--port", str(port), "--classpath", str(plugin_jar.absolute())]
    # the JVM runs in the broker directory: a path relative to the checkout would not resolve there
    out = _kafka_script(
        [*args, *(["--fresh"] if changed else []), str(directory)], directory, {"KAFKA_EXTRA_PROPS": extra}
    )
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    rel = os.path.relpath(directory)
    shown = rel if not rel.startswith("..") else str(directory)
    lines = [
        f"BOOTSTRAP={env['BOOTSTRAP']}",
        f"kraft-acl: Kafka {env.get('KAFKA_VERSION', '')} broker (pid {env.get('PID', '?')}) in {shown}, "
        f"its authorizer the plugin asking kraft-acl serve at {url}; logs in {shown}/logs",
        "kraft-acl: the plugin's broker properties (absolute paths: paste them into any broker): "
        f"{shown}/plugin.properties",
        "kraft-acl: client properties (SASL/PLAIN; --command-config, --producer.config, --consumer.config):",
    ]
    width = max(len(f"{shown}/{path.name}") for path in clients.values())
    lines += [f"  {f'{shown}/{path.name}':<{width}}  {USERS[user][1]}" for user, path in clients.items()]
    lines.append("kraft-acl: Kafka's own tools: scripts/kafka/bin/kafka-acls.sh, kafka-console-producer.sh, ...")
    lines.append("kraft-acl: stop it with `make broker-stop`")
    return lines


def stop(directory: Path) -> None:
    """Stop the demo broker (SIGTERM, then SIGKILL after 30 s); its data stays for the next `make broker`."""
    directory = directory.absolute()
    if not directory.is_dir():
        print(f"kraft-acl: no demo broker in {directory}", file=sys.stderr)
        return
    _kafka_script(["stop", str(directory)], directory, {})


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m kraftacl.harness.demo_broker start|stop ...` (the Makefile's broker and broker-stop)."""
    parser = argparse.ArgumentParser(prog="make broker", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    begin = sub.add_parser("start")
    begin.add_argument("--port", type=int, default=9092)
    begin.add_argument("--serve-config", type=Path, default=Path("examples/serve/server.properties"))
    begin.add_argument("--plugin-jar", type=Path, required=True)
    begin.add_argument("--template", type=Path, default=Path("examples/plugin/broker.properties"))
    begin.add_argument("directory", type=Path)
    end = sub.add_parser("stop")
    end.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "stop":
            stop(args.directory)
            return 0
        for line in start(args.directory, args.port, args.serve_config, args.plugin_jar, args.template):
            print(line, flush=True)
    except DemoBrokerError as exc:
        print(f"kraft-acl: error: {exc}", file=sys.stderr)
        return exc.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
