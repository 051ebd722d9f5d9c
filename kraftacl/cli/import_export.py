"""`kraft-acl import` (acls.json, a Kafka metadata directory or a live cluster -> a kraft-acl log, one batch)
and `kraft-acl export` (a log's ACLs -> acls.json, sorted and stable).

Stateless; each invocation reads its source once (twice with `--check` on a live cluster) and opens the
target for the one write.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from kraftacl.api.acl_targets import AclTarget, Imported, LogAclTarget, ServerAclTarget
from kraftacl.api.client import ServerError, ServerTarget
from kraftacl.api.targets import LogTarget
from kraftacl.authorizer.decision.config import load_properties
from kraftacl.authorizer.history.metadata_source import read_state
from kraftacl.authorizer.inputs.acls_json import acls_json_text
from kraftacl.authorizer.inputs.validate import InputError
from kraftacl.authorizer.inputs.whatif import acl_to_json, load_acls
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.controller import InvalidImportError
from kraftacl.authorizer.state.gc_pause import paused_gc
from kraftacl.cli.acls_flags import BootstrapServer, CommandConfig, MetadataTopic
from kraftacl.cli.errors import EXIT_FAILED, EXIT_INPUT, fail
from kraftacl.cli.log_check import LockTimeout
from kraftacl.cli.log_state import library_errors
from kraftacl.cli.options import Server, check_one_target, server_failed
from kraftacl.cli.output import Output, output_option


@dataclass(frozen=True)
class AclSource:
    """Where imported ACLs come from: a label for messages and a reader (called again by --check)."""

    label: str
    read: Callable[[], list[StandardAcl]]


def _cluster_acls(bootstrap: str, command_config: Path | None) -> list[StandardAcl]:
    from kraftacl.metadata_log.kafka_cluster import describe_all_acls

    client = {**(load_properties(command_config) if command_config else {}), "bootstrap.servers": bootstrap}
    return [
        StandardAcl(
            ResourceType.from_code(rt),
            name,
            PatternType.from_code(pt),
            principal,
            host,
            AclOperation.from_code(op),
            AclPermissionType.from_code(pm),
        )
        for rt, name, pt, principal, host, op, pm in describe_all_acls(client)
    ]


def _source(
    json_file: Path | None, kafka_dir: Path | None, cluster: bool, bootstrap: str | None, config: Path | None
) -> AclSource:
    if [json_file is not None, kafka_dir is not None, cluster].count(True) != 1:
        fail("give exactly one source: --from-json FILE, --from-kafka-dir DIR or --from-cluster")
    if json_file is not None:
        return AclSource(f"{json_file} (acls.json)", lambda: load_acls(json_file))
    if kafka_dir is not None:
        return AclSource(f"{kafka_dir}", lambda: list(read_state(kafka_dir).image.acls.values()))
    if bootstrap is None:
        fail("--from-cluster reads the cluster at --bootstrap-server HOST:PORT: give it")
    return AclSource(f"the cluster at {bootstrap} (describe_acls)", lambda: _cluster_acls(bootstrap, config))


def _target(
    log_dir: Path | None,
    bootstrap: str | None,
    config: Path | None,
    topic: str | None,
    cluster: bool,
    server: ServerTarget | None,
    lock_s: float,
) -> AclTarget:
    """A running serve, the embedded log, or a Kafka-backed one on --bootstrap-server (with --from-cluster:
    the same cluster, named explicitly by --metadata-topic so no cluster gets a topic by accident)."""
    if server is not None:
        if log_dir is not None or (bootstrap is not None and not cluster):
            fail("give one place to import into: --server URL, --log-dir DIR or --bootstrap-server HOST:PORT")
        return ServerAclTarget(server)
    if log_dir is not None:
        return LogAclTarget(LogTarget(log_dir=log_dir, lock_timeout_s=lock_s))
    if bootstrap is None or (cluster and topic is None):
        fail(
            "give where to import: --log-dir DIR (embedded log), --server URL (a running kraft-acl serve) or "
            "--bootstrap-server HOST:PORT [--metadata-topic NAME] (a Kafka-backed log; with --from-cluster, "
            "--metadata-topic names it)"
        )
    return LogAclTarget(LogTarget(bootstrap_servers=bootstrap, command_config=config, topic=topic))


def _read(source: AclSource) -> list[StandardAcl]:
    with library_errors(), paused_gc():  # a million ACLs: millions of objects, no cycles to find meanwhile
        try:
            return source.read()
        except InputError as exc:
            fail(str(exc))


def import_command(
    from_json: Annotated[
        Path | None,
        typer.Option("--from-json", metavar="FILE", help="an acls.json file (a JSON array of ACL objects)"),
    ] = None,
    from_kafka_dir: Annotated[
        Path | None,
        typer.Option(
            "--from-kafka-dir",
            metavar="DIR",
            help="Apache Kafka's metadata: a metadata.log.dir, __cluster_metadata-0 or a .checkpoint",
        ),
    ] = None,
    from_cluster: Annotated[
        bool, typer.Option("--from-cluster", help="a live cluster's ACLs (describe_acls) at --bootstrap-server")
    ] = False,
    log_dir: Annotated[
        Path | None,
        typer.Option("--log-dir", metavar="DIR", help="the embedded kraft-acl log to import into (created if absent)"),
    ] = None,
    bootstrap_server: Annotated[
        str | None,
        typer.Option(
            "--bootstrap-server",
            metavar="HOST:PORT",
            help="the cluster: the source of --from-cluster, else the Kafka-backed log to import into",
        ),
    ] = None,
    command_config: CommandConfig = None,
    metadata_topic: MetadataTopic = None,
    server: Server = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print what would be added; write nothing")] = False,
    lock_timeout: LockTimeout = 5.0,
    check: Annotated[
        bool, typer.Option("--check", help="afterwards compare source and log; exit 1 on a difference")
    ] = False,
    output: Annotated[
        Output, output_option("table (a report for people; text is the same) or json (one object)")
    ] = Output.table,
) -> None:
    """Write every ACL of a source into a kraft-acl log as ONE atomic batch through the controller: each ACL
    validated as CreateAcls validates it (any invalid one: nothing is written), those already stored and
    repeats skipped and counted.

    \b
    Example:
      kraft-acl import --from-json acls.json --log-dir data/meta --check
      kraft-acl import --from-json acls.json --server http://127.0.0.1:9191 --token-file admin.token
      kraft-acl import --from-kafka-dir /var/lib/kafka/meta --log-dir data/meta --dry-run
      kraft-acl import --from-cluster --bootstrap-server kafka:9092 --command-config client.properties \\
        --log-dir data/meta -o json
    """
    source = _source(from_json, from_kafka_dir, from_cluster, bootstrap_server, command_config)
    target = _target(log_dir, bootstrap_server, command_config, metadata_topic, from_cluster, server, lock_timeout)
    acls = _read(source)
    with library_errors(), _server_errors(source):
        try:
            result = target.import_acls(acls, dry_run)
        except InvalidImportError as exc:
            fail(f"{source.label}: {exc}")
        try:
            report: dict[str, Any] = _report(source, target, acls, result, dry_run)
            if check:
                result.finish()  # the log is read back through the snapshot the import left to the policy
                report["check"] = _check(source, target, acls)
            if output.is_json:
                typer.echo(json.dumps(report))
            else:
                _print_report(report)
            sys.stdout.flush()
        finally:
            result.finish()  # the report is out: now the policy's snapshot (seconds for 1M ACLs), then close
    if check and not report["check"]["equal"]:
        raise typer.Exit(EXIT_FAILED)


@contextmanager
def _server_errors(source: AclSource | None = None) -> Iterator[None]:
    """serve's refusal as one line: a 400 (an ACL it refuses, naming the element and field) exits 2."""
    try:
        yield
    except ServerError as exc:
        if exc.status == 400 and source is not None:
            fail(f"{source.label}: {exc}", EXIT_INPUT)
        server_failed(exc)


def _report(
    source: AclSource, target: AclTarget, acls: list[StandardAcl], result: Imported, dry_run: bool
) -> dict[str, Any]:
    offsets = None if result.base_offset is None else [result.base_offset, result.base_offset + result.added - 1]
    report: dict[str, Any] = {
        "source": source.label,
        "target": target.description,
        "read": len(acls),
        "added": result.added,
        "present": result.present,
        "repeated": result.repeated,
        "offsets": offsets,
        "dry_run": dry_run,
    }
    if dry_run:
        report["would_add"] = [acl_to_json(a) for a in _sorted(result.would_add)]
    return report


def _sorted(acls: Iterable[StandardAcl]) -> list[StandardAcl]:
    return sorted(acls, key=lambda a: tuple(acl_to_json(a).values()))


def _check(source: AclSource, target: AclTarget, acls: list[StandardAcl]) -> dict[str, Any]:
    """Source and target compared as sets of ACLs (ids differ by nature); the cluster is asked again."""
    expected = set(_read(source)) if source.label.startswith("the cluster") else set(acls)
    with library_errors():
        actual = set(target.acls_at(None).values())
    missing, extra = _sorted(expected - actual), _sorted(actual - expected)
    return {
        "equal": not missing and not extra,
        "target": "serve" if isinstance(target, ServerAclTarget) else "the log",  # where the extra ACLs are
        "count": len(actual),
        "missing": [acl_to_json(a) for a in missing],
        "extra": [acl_to_json(a) for a in extra],
    }


def _print_report(r: dict[str, Any]) -> None:
    typer.echo(f"Read {r['read']} ACL(s) from {r['source']}")
    skipped = f"{r['present']} already present, {r['repeated']} repeated in the source"
    if r["dry_run"]:
        typer.echo(f"Dry run: would add {r['added']} ACL(s) to {r['target']} ({skipped}):")
        for acl in r["would_add"]:
            typer.echo(f"+ {_acl_text(acl)}")
    elif r["offsets"] is None:
        typer.echo(f"Nothing to add to {r['target']} ({skipped})")
    else:
        first, last = r["offsets"]
        typer.echo(f"Added {r['added']} ACL(s) to {r['target']} in one batch at offsets {first}..{last} ({skipped})")
    check = r.get("check")
    if check is None:
        return
    if check["equal"]:
        typer.echo(f"Check: {r['target']} holds exactly the {check['count']} ACL(s) of the source")
        return
    typer.echo(
        f"Check: {len(check['missing']) + len(check['extra'])} difference(s) between the source and {r['target']}:"
    )
    for sign, key, where in (("-", "missing", "in the source only"), ("+", "extra", f"in {check['target']} only")):
        for acl in check[key]:
            typer.echo(f"{sign} {_acl_text(acl)} ({where})")


def _acl_text(acl: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in acl.items())


def export_command(
    log_dir: Annotated[
        Path | None,
        typer.Option(
            "--log-dir",
            metavar="DIR",
            help="a kraft-acl log directory, or Apache Kafka's metadata (metadata.log.dir, __cluster_metadata-0, "
            "a .log or .checkpoint)",
        ),
    ] = None,
    bootstrap_server: BootstrapServer = None,
    command_config: CommandConfig = None,
    metadata_topic: MetadataTopic = None,
    server: Server = None,
    at_offset: Annotated[int | None, typer.Option("--at-offset", metavar="N", help="the state at offset N")] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="FILE", help="write acls.json to FILE (replaced whole); default: stdout"),
    ] = None,
    output: Annotated[Output, output_option("json (the only format: acls.json)")] = Output.json,
) -> None:
    """Write a log's ACLs as acls.json: sorted, one ACL per line, the same bytes for the same set (for git).

    \b
    Example:
      kraft-acl export --log-dir data/meta --out acls.json
      kraft-acl export --log-dir /var/lib/kafka/meta/__cluster_metadata-0 --at-offset 120 > acls.json
      kraft-acl export --server http://127.0.0.1:9191 --token-file admin.token --out acls.json
    """
    if not output.is_json:
        fail("export writes acls.json only; use -o json or leave -o out")
    if at_offset is not None and at_offset < 0:
        fail(f"--at-offset {at_offset} is negative")
    check_one_target(log_dir, bootstrap_server, server)
    target: AclTarget
    if server is not None:
        if at_offset is not None:
            fail("--at-offset reads a log (--log-dir or --bootstrap-server); serve answers its current state")
        target = ServerAclTarget(server)
    else:
        log = LogTarget(log_dir, bootstrap_server, command_config, metadata_topic)
        target = LogAclTarget(log)
    with library_errors(), _server_errors():
        acls = target.acls_at(at_offset)
    text = acls_json_text(acls.values())
    if out is None:
        sys.stdout.write(text)
        return
    with library_errors():
        partial = out.with_name(f".{out.name}.{os.getpid()}.part")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, out)  # never a half-written acls.json
    print(f"kraft-acl: wrote {len(acls)} ACL(s) from {target.description} to {out}", file=sys.stderr)
