"""A real single-node KRaft Kafka broker for tests, driven through scripts/kafka-broker.sh.

The script fetches the broker jars from Maven Central, formats a data dir and starts the JVM in its own
process group; this class parses its ``KEY=VALUE`` output and makes sure the JVM dies with the test run
(process-group kill on stop, an ``atexit`` hook, and the script's watchdog on this Python process).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from kraftacl.harness.cluster.kafka_cluster import KafkaScriptError, parse_env, run_script

REPO_ROOT = Path(__file__).resolve().parent.parent
SCRIPT = REPO_ROOT / "scripts" / "kafka-broker.sh"

#: SASL/PLAIN users that ``sasl=True`` brokers know (user -> password). ``admin`` is a super user.
SASL_USERS: dict[str, str] = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}

#: confluent-kafka configuration dict (the type its constructors are annotated with).
ClientConf = dict[str, str | int | float | bool]

_LIVE: set[KafkaBroker] = set()


class KafkaBrokerError(RuntimeError):
    """The broker could not be fetched, started or stopped."""


def java_available() -> bool:
    """True when a ``java`` that runs is on PATH (Kafka 4.x needs Java 17+, see :func:`java_problem`)."""
    return java_problem() is None


def java_problem() -> str | None:
    """Why the broker's JVM cannot run here, or None when Java 17+ is on PATH."""
    java = shutil.which("java")
    if java is None:
        return "no java on PATH (Kafka 4.x needs Java 17+)"
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`java -version` failed: {exc}"
    if proc.returncode != 0:
        return f"`java -version` exited {proc.returncode}: {proc.stderr.strip()[:200]}"
    first = (proc.stderr or proc.stdout).splitlines()[0] if (proc.stderr or proc.stdout) else ""
    version = first.split('"')[1] if first.count('"') >= 2 else ""
    major = version.split(".")[0]
    if major == "1" or (major.isdigit() and int(major) < 17):
        return f"java {version} on PATH is too old (Kafka 4.x needs Java 17+)"
    return None


def _version_args(kafka_version: str | None) -> list[str]:
    return ["--kafka-version", kafka_version] if kafka_version else []


def default_kafka_version() -> str:
    """The Kafka release the tests run by default (``<kafka.version>`` of scripts/kafka/pom.xml)."""
    return _run_script(["version"], timeout=30).strip()


def lib_dir(kafka_version: str | None = None) -> Path:
    """Where ``scripts/kafka-broker.sh fetch`` puts a release's jars (.kafka/lib-<version>, or KAFKA_LIB_DIR)."""
    return Path(_run_script(["libdir", *_version_args(kafka_version)], timeout=30).strip())


def jars_cached(kafka_version: str | None = None) -> bool:
    """True when ``scripts/kafka-broker.sh fetch`` has already put that release's jars in place."""
    return (lib_dir(kafka_version) / ".fetched").is_file()


def maven_problem(kafka_version: str | None = None) -> str | None:
    """Why the jars cannot be fetched, or None (Maven is on PATH or the jars are already cached)."""
    if shutil.which("mvn") is not None or jars_cached(kafka_version):
        return None
    return f"no mvn on PATH and no cached jars in {lib_dir(kafka_version)} (needed to fetch the Kafka broker)"


def fetch_jars(timeout: float = 900.0, kafka_version: str | None = None) -> None:
    """Run ``scripts/kafka-broker.sh fetch`` for a release (the default one when None; fast when cached)."""
    _run_script(["fetch", *_version_args(kafka_version)], timeout=timeout)


def _run_script(args: list[str], timeout: float, env: Mapping[str, str] | None = None) -> str:
    try:
        return run_script(SCRIPT, args, timeout, env)
    except KafkaScriptError as exc:
        raise KafkaBrokerError(str(exc)) from exc


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as dead.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def copy_live_dir(source: Path, target: Path, attempts: int = 5) -> Path:
    """Copy a running broker's directory as one moment of it: Kafka writes snapshots to ``*.part`` files and
    renames files it deletes to ``*.deleted`` (both skipped), and a file it removes while the copy runs (snapshot
    or segment retention) makes the copy start over."""
    skip = shutil.ignore_patterns("*.part", "*.deleted")
    for attempt in range(attempts):
        shutil.rmtree(target, ignore_errors=True)
        try:
            return Path(shutil.copytree(source, target, ignore=skip))
        except shutil.Error as err:  # a file listed a moment ago is gone: the broker moved on, copy again
            if attempt == attempts - 1 or not all("No such file" in str(why) for *_, why in err.args[0]):
                raise
    raise AssertionError("unreachable")


class KafkaBroker:
    """One single-node KRaft broker (combined broker + controller) on 127.0.0.1.

    ``start()`` formats ``data_dir`` on first use; ``restart()`` stops the JVM and starts it again on the
    same data dir and port, so a connected client sees an outage and a comeback.
    """

    def __init__(
        self,
        data_dir: Path | str | None = None,
        *,
        sasl: bool = False,
        authorizer: bool = False,
        extra_props: Mapping[str, str] | None = None,
        listeners: Sequence[str] = (),
        classpath: str | None = None,
        sasl_users: Sequence[str] = (),
        kafka_version: str | None = None,
        start_timeout: float = 90.0,
        stop_timeout: float = 30.0,
    ) -> None:
        self._own_dir = data_dir is None
        raw = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="kafka-"))
        self.data_dir = raw.resolve()
        self.sasl = sasl or authorizer
        self.authorizer = authorizer
        self.extra_props = dict(extra_props or {})
        self.listeners = tuple(listeners)  # extra client listeners, NAME:PROTOCOL (the script's --listener)
        self.classpath = classpath  # extra classpath entries, e.g. an authorizer plugin's jar
        self.sasl_users = tuple(sasl_users)  # more SASL/PLAIN users, each with the password <name>-secret
        self.kafka_version = kafka_version  # the Kafka release to run (None: the pom's default)
        self._listener_bootstrap: dict[str, str] = {}
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._bootstrap: str | None = None
        self._pid: int | None = None

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> str:
        """Start (or restart on the saved data dir) and return ``host:port``; waits until it serves.

        ``sasl``, ``authorizer`` and ``extra_props`` apply when the data dir is formatted (first start);
        later starts reuse the saved config, data and ports. Already running: returns its address.
        """
        args = ["start", *_version_args(self.kafka_version)]
        if self.sasl:
            args.append("--sasl")
        if self.authorizer:
            args.append("--authorizer")
        for key, value in self.extra_props.items():
            args += ["--prop", f"{key}={value}"]
        for listener in self.listeners:
            args += ["--listener", listener]
        if self.classpath:
            args += ["--classpath", self.classpath]
        args.append(str(self.data_dir))
        env = {
            "KAFKA_START_TIMEOUT": str(int(self.start_timeout)),
            "KAFKA_STOP_TIMEOUT": str(int(self.stop_timeout)),
            "KAFKA_WATCH_PID": str(os.getpid()),
        }
        if self.sasl_users:
            env["KAFKA_SASL_USERS"] = " ".join(f"{user}:{user}-secret" for user in self.sasl_users)
        _LIVE.add(self)
        try:
            out = parse_env(_run_script(args, timeout=self.start_timeout + 60, env=env))
        except KafkaBrokerError:
            self._kill_from_pidfile()
            raise
        self._bootstrap = out["BOOTSTRAP"]
        self._pid = int(out["PID"])
        self._listener_bootstrap = {k[len("BOOTSTRAP_") :]: v for k, v in out.items() if k.startswith("BOOTSTRAP_")}
        return self._bootstrap

    def stop(self, *, hard: bool = False) -> None:
        """Stop the JVM: SIGTERM to its process group (SIGKILL if ``hard`` or after ``stop_timeout``)."""
        pid = self._pid or self._read_pidfile()
        if pid is None:
            return
        if _pid_alive(pid):
            args = ["stop", *(["--kill"] if hard else []), str(self.data_dir)]
            env = {"KAFKA_STOP_TIMEOUT": str(int(self.stop_timeout))}
            with contextlib.suppress(KafkaBrokerError):
                _run_script(args, timeout=self.stop_timeout + 30, env=env)
        self._kill_group(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self._pid = None
        _LIVE.discard(self)

    def restart(self, *, hard: bool = False, downtime: float = 0.0) -> str:
        """Stop (``hard``: SIGKILL, like a crash), wait ``downtime`` seconds, start on the same dir/port."""
        port = self.port
        self.stop(hard=hard)
        if downtime > 0:
            time.sleep(downtime)
        bootstrap = self.start()
        if bootstrap.rsplit(":", 1)[1] != str(port):
            raise KafkaBrokerError(f"broker came back on {bootstrap}, expected port {port}")
        return bootstrap

    def close(self) -> None:
        """Stop the broker and delete the data dir if this object created it."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> KafkaBroker:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- state ---------------------------------------------------------------------------------------
    def is_running(self) -> bool:
        """True while the broker JVM is alive (it may still be starting or shutting down)."""
        pid = self._pid or self._read_pidfile()
        return pid is not None and _pid_alive(pid)

    def accepts_connections(self, timeout: float = 1.0) -> bool:
        """True when the client port accepts a TCP connection."""
        host, port = self.bootstrap_servers.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return True
        except OSError:
            return False

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>``; stays the same across :meth:`restart`."""
        if self._bootstrap is None:
            raise KafkaBrokerError("broker was never started")
        return self._bootstrap

    def wait_for_ports(self, timeout: float = 60.0) -> None:
        """Learn the ports from DIR/ports.env while `start()` still waits (in another thread) for the broker."""
        path = self.data_dir / "ports.env"
        deadline = time.monotonic() + timeout
        while not path.is_file():
            if time.monotonic() > deadline:
                raise KafkaBrokerError(f"no {path} within {timeout:.0f}s")
            time.sleep(0.1)
        ports = parse_env(path.read_text())
        self._bootstrap = f"127.0.0.1:{ports['PORT']}"
        self._listener_bootstrap = {k[5:]: f"127.0.0.1:{v}" for k, v in ports.items() if k.startswith("PORT_")}

    def listener_bootstrap(self, name: str) -> str:
        """``127.0.0.1:<port>`` of an extra listener (``listeners``)."""
        if name not in self._listener_bootstrap:
            raise KafkaBrokerError(f"no listener {name} (extra listeners: {sorted(self._listener_bootstrap)})")
        return self._listener_bootstrap[name]

    @property
    def port(self) -> int:
        return int(self.bootstrap_servers.rsplit(":", 1)[1])

    @property
    def pid(self) -> int | None:
        return self._pid

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    def log_tail(self, lines: int = 60) -> str:
        """The last lines of server.log and kafka.out, for failure messages."""
        parts = []
        for name in ("kafka.out", "server.log"):
            path = self.log_dir / name
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
                parts.append(f"==> {path} <==\n" + "\n".join(text))
        return "\n".join(parts)

    def client_config(
        self,
        user: str = "admin",
        overrides: Mapping[str, str | int | float | bool] | None = None,
        listener: str | None = None,
    ) -> ClientConf:
        """confluent-kafka settings to reach this broker (SASL/PLAIN credentials when ``sasl``), on the main
        client listener or on an extra one (``listener``; it must use the main listener's protocol)."""
        bootstrap = self.bootstrap_servers if listener is None else self.listener_bootstrap(listener)
        conf: ClientConf = {"bootstrap.servers": bootstrap}
        if self.sasl:
            conf.update(
                {
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN",
                    "sasl.username": user,
                    "sasl.password": SASL_USERS.get(user, f"{user}-secret"),
                }
            )
        conf.update(overrides or {})
        return conf

    # -- internals -----------------------------------------------------------------------------------
    def _read_pidfile(self) -> int | None:
        try:
            return int((self.data_dir / "broker.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def _kill_from_pidfile(self) -> None:
        pid = self._read_pidfile()
        if pid is not None:
            self._kill_group(pid, signal.SIGKILL)
        _LIVE.discard(self)

    def _kill_group(self, pid: int, sig: signal.Signals) -> None:
        # The script starts the JVM with setsid, so its pid is also its process-group id. Only signal
        # the group when it really is a Kafka JVM for this data dir (guards against pid reuse).
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            return
        if b"kafka.Kafka" not in cmdline or str(self.data_dir.resolve()).encode() not in cmdline:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)

    def __repr__(self) -> str:
        return f"KafkaBroker(data_dir={str(self.data_dir)!r}, bootstrap={self._bootstrap!r}, pid={self._pid})"


@atexit.register
def _kill_leftover_brokers() -> None:
    for broker in list(_LIVE):
        with contextlib.suppress(Exception):
            pid = broker.pid or broker._read_pidfile()
            if pid is not None:
                broker._kill_group(pid, signal.SIGKILL)
