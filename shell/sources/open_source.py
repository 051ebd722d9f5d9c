"""The one place that turns the shell's command-line options into an `AclSource`.

Stateless. A new kind of source is one more branch here. Apache Kafka's own metadata (a metadata.log.dir,
`__cluster_metadata-0`, a `.log` or a `.checkpoint`) is recognised before any kraft-acl reader opens it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kraftacl.api.client import ServerTarget
from kraftacl.api.targets import LogTarget
from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.errors import ConfigError
from kraftacl.authorizer.history.metadata_source import MetadataSourceError, detect_format
from kraftacl.metadata_log.backend import LogBackend
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.kafka_files.files import locate
from kraftacl.shell.sources.base import AclSource, OffsetError, SourceError
from kraftacl.shell.sources.kafka_files import KafkaFilesSource
from kraftacl.shell.sources.node import SOURCE_ERRORS, NodeSource
from kraftacl.shell.sources.server import ServerSource
from kraftacl.shell.sources.snapshot import SnapshotSource

ONE_SOURCE = "give exactly one of --log-dir DIR, --snapshot FILE, --bootstrap-server HOST:PORT and --server URL"


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """Where the ACLs come from, as the command line gave it."""

    log_dir: Path | None = None
    snapshot: Path | None = None
    bootstrap_servers: str | None = None
    command_config: Path | None = None
    topic: str | None = None
    at_offset: int | None = None
    config: AuthorizerConfig = field(default_factory=AuthorizerConfig)
    server: ServerTarget | None = None


def open_source(options: SourceOptions) -> AclSource:
    """Open the one source the options name, at `--at-offset` if given; SourceError says what is wrong."""
    chosen = [
        o for o in (options.log_dir, options.snapshot, options.bootstrap_servers, options.server) if o is not None
    ]
    if len(chosen) != 1:
        raise SourceError(ONE_SOURCE)
    try:
        if options.server is not None:
            return _server(options.server, options)
        named = options.log_dir if options.log_dir is not None else options.snapshot
        if named is not None and locate(named) is not None:  # Kafka's files: before any kraft-acl reader opens them
            return _kafka_files(named, options)
        if options.snapshot is not None:
            return _snapshot(options.snapshot, options)
        if options.log_dir is not None:
            return _log_dir(options.log_dir, options)
        return _kafka(options)
    except OffsetError as exc:
        raise SourceError(f"--at-offset: {exc}") from exc
    except (*SOURCE_ERRORS, ConfigError) as exc:
        raise SourceError(str(exc)) from exc


def _snapshot(path: Path, options: SourceOptions) -> AclSource:
    if options.at_offset is not None:
        raise SourceError("--at-offset needs a log (--log-dir or --bootstrap-server): a snapshot holds one state")
    if not path.is_file():
        raise SourceError(f"{path}: no such snapshot file")
    try:
        detect_format(path)  # neither kraft-acl's nor Kafka's: say so, rather than what is wrong with its bytes
    except MetadataSourceError as exc:
        raise SourceError(str(exc)) from exc
    return SnapshotSource(path, options.config)


def _log_dir(log_dir: Path, options: SourceOptions) -> AclSource:
    if not log_dir.is_dir():
        missing = not log_dir.exists()
        raise SourceError(f"log directory {log_dir} does not exist" if missing else f"{log_dir} is not a directory")
    backend = FileLog(log_dir, read_only=True)  # no lock: a writer may be appending while the shell follows
    return _node(backend, f"log directory {log_dir}", options, log_dir)


def _kafka(options: SourceOptions) -> AclSource:
    from kraftacl.metadata_log.backends.kafka_topic.log import (
        DEFAULT_TOPIC,  # confluent_kafka is loaded only for a Kafka log
    )

    target = LogTarget(None, options.bootstrap_servers, options.command_config, options.topic)
    description = f"Kafka topic {options.topic or DEFAULT_TOPIC} at {options.bootstrap_servers}"
    return _node(target.backend(write=False), description, options, None)


def _kafka_files(path: Path, options: SourceOptions) -> AclSource:
    try:
        return KafkaFilesSource(path, options.config, options.at_offset)
    except SourceError as exc:
        raise SourceError(
            f"--at-offset {options.at_offset}: {exc}" if options.at_offset is not None else str(exc)
        ) from exc


def _server(target: ServerTarget, options: SourceOptions) -> AclSource:
    if options.at_offset is not None:
        raise SourceError(
            "--at-offset needs a log (--log-dir or --bootstrap-server): serve answers with its current state"
        )
    return ServerSource(target)


def _node(backend: LogBackend, description: str, options: SourceOptions, snapshot_dir: Path | None) -> AclSource:
    try:
        return NodeSource(backend, description, options.config, snapshot_dir, options.at_offset)
    except SourceError:
        backend.close()
        raise
