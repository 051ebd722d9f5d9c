"""`kraft-acl acls --add | --remove | --list`: kafka-acls' options and output against the embedded metadata log.

Stateless; each invocation opens the log directory (as the single writer for --add/--remove).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Annotated, Any

import typer

from kraftacl.api.client import ServerError, ServerTarget
from kraftacl.api.targets import AclService, KafkaStateService, LogTarget, NodeService
from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.inputs.whatif import acl_to_json
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.model.filters import AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter
from kraftacl.cli.acls_flags import (
    Add,
    AllowHost,
    AllowPrincipal,
    BootstrapServer,
    Cluster,
    CommandConfig,
    Consumer,
    DelegationToken,
    DenyHost,
    DenyPrincipal,
    Force,
    Group,
    Idempotent,
    ListFlag,
    LogDir,
    MetadataTopic,
    Operation,
    OutputOpt,
    Principal,
    Producer,
    Remove,
    ResourcePatternType,
    Topic,
    TransactionalId,
    UserPrincipal,
)
from kraftacl.cli.acls_options import (
    AclOptions,
    OptionError,
    bindings_to_add,
    check_principal,
    filters_for,
    parse_pattern_type,
)
from kraftacl.cli.errors import EXIT_FAILED, fail
from kraftacl.cli.kafka_files import kafka_files, kafka_state
from kraftacl.cli.log_state import acl_json
from kraftacl.cli.options import Server, check_one_target, server_failed
from kraftacl.cli.output import Output
from kraftacl.metadata_log.errors import LogError
from kraftacl.snapshots.errors import SnapshotError


def _blocks(acls: Iterable[StandardAcl]) -> dict[str, list[str]]:
    """kafka-acls groups entries by resource pattern; sorted here so the output is stable."""
    out: dict[str, list[str]] = {}
    for acl in sorted(
        acls,
        key=lambda a: (
            a.resource_type,
            a.resource_name,
            a.pattern_type,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        ),
    ):
        binding = acl.binding()
        out.setdefault(str(binding.pattern), []).append(str(binding.entry))
    return out


def _print_current(acls: list[StandardAcl]) -> None:
    """kafka-acls' `Current ACLs for resource` blocks (a blank line after each)."""
    for pattern, entries in _blocks(acls).items():
        typer.echo(f"Current ACLs for resource `{pattern}`:\n\t" + "\n\t".join(entries) + "\n")


def acls_command(
    log_dir: LogDir = None,
    bootstrap_server: BootstrapServer = None,
    command_config: CommandConfig = None,
    metadata_topic: MetadataTopic = None,
    server: Server = None,
    add: Add = False,
    remove: Remove = False,
    list_: ListFlag = False,
    topic: Topic = None,
    group: Group = None,
    cluster: Cluster = False,
    transactional_id: TransactionalId = None,
    delegation_token: DelegationToken = None,
    user_principal: UserPrincipal = None,
    resource_pattern_type: ResourcePatternType = "LITERAL",
    operation: Operation = None,
    allow_principal: AllowPrincipal = None,
    deny_principal: DenyPrincipal = None,
    allow_host: AllowHost = None,
    deny_host: DenyHost = None,
    principal: Principal = None,
    producer: Producer = False,
    consumer: Consumer = False,
    idempotent: Idempotent = False,
    force: Force = False,
    output: OutputOpt = Output.table,
    lock_timeout: Annotated[
        float,
        typer.Option("--lock-timeout", metavar="SECONDS", help="how long to wait for another writer's lock"),
    ] = 5.0,
) -> None:
    """Add, remove or list ACLs with kafka-acls' options and messages; every change is one atomic batch on
    the log (an embedded --log-dir, a Kafka topic with --bootstrap-server, or through a running serve
    with --server).

    \b
    Example:
      kraft-acl acls --log-dir data/meta --add --allow-principal User:alice --operation Read --topic orders
      kraft-acl acls --log-dir data/meta --add --producer --topic orders --allow-principal User:svc
      kraft-acl acls --log-dir data/meta --list --topic orders --resource-pattern-type match
      kraft-acl acls --log-dir data/meta --remove --topic orders --force
      kraft-acl acls --server http://127.0.0.1:9191 --token-file admin.token --list --topic orders
    """
    if [add, remove, list_].count(True) != 1:
        fail("Command must include exactly one action: --list, --add, --remove.")
    check_one_target(log_dir, bootstrap_server, server)
    target: LogTarget | ServerTarget
    if server is not None:
        target = server
    else:
        target = LogTarget(log_dir, bootstrap_server, command_config, metadata_topic, lock_timeout)
    try:
        opts = AclOptions(
            topic or [],
            group or [],
            cluster,
            transactional_id or [],
            delegation_token or [],
            user_principal or [],
            parse_pattern_type(resource_pattern_type),
            operation or [],
            allow_principal or [],
            deny_principal or [],
            allow_host or [],
            deny_host or [],
            producer,
            consumer,
            idempotent,
            [check_principal(p, "--principal") for p in principal or []],
        )
        if add:
            _add(target, bindings_to_add(opts), output)
        elif remove:
            _remove(target, filters_for(opts, "remove"), force, output)
        else:
            _list(target, filters_for(opts, "list"), opts.principals, output)
    except OptionError as exc:
        fail(str(exc))
    except ServerError as exc:
        server_failed(exc)
    except (LogError, SnapshotError, AuthorizerError) as exc:
        fail(str(exc), EXIT_FAILED)


def _open(target: LogTarget | ServerTarget, write: bool) -> AclService:
    """The log's node, or a client of serve; to list, Apache Kafka's own metadata too (a writer refuses it)."""
    if isinstance(target, ServerTarget):
        return target.connect()
    if not write and target.log_dir is not None and kafka_files(target.log_dir) is not None:
        return KafkaStateService(kafka_state(target.log_dir, None, "--log-dir"))
    return NodeService(target.open_node(write=write))


def _add(target: LogTarget | ServerTarget, acls: list[StandardAcl], output: Output) -> None:
    """Create `acls` in one atomic batch; print like kafka-acls 4.x (duplicates first, then what was added)."""
    service = _open(target, write=True)
    try:
        results = service.create_acls(acls)
    finally:
        service.close()
    _warn_snapshot(service)
    _say_offset(target, service)
    outcomes = list(zip(acls, results, strict=True))
    if output.is_json:
        typer.echo(
            json.dumps(
                [
                    {
                        **acl_to_json(a),
                        "result": "created" if r.acl_id else ("exists" if r.error.code == 0 else str(r.error)),
                        "id": r.acl_id,
                    }
                    for a, r in outcomes
                ]
            )
        )
    else:
        existing: dict[str, list[str]] = {}
        for acl, result in outcomes:
            if result.error.code == 0 and result.acl_id is None:
                binding = acl.binding()
                existing.setdefault(str(binding.pattern), []).append(f"Acl {binding} already exists.")
        added = _blocks(a for a, r in outcomes if r.acl_id is not None)
        for pattern in _blocks(acls):
            for line in existing.get(pattern, []):
                typer.echo(line)
            if pattern in added:
                typer.echo(f"Adding ACLs for resource `{pattern}`: \n \t" + "\n\t".join(added[pattern]) + "\n")
        for acl, result in outcomes:
            if result.error.code != 0:
                typer.echo(f"Error while adding {acl.binding()}: {result.error}", err=True)
    if any(r.error.code != 0 for r in results):
        raise typer.Exit(EXIT_FAILED)


def _warn_snapshot(service: AclService) -> None:
    """The batch is durable and applied; an automatic snapshot that failed after it is only a warning, and what
    retention removed after one that succeeded is said too (a serve reports its own snapshots)."""
    if not isinstance(service, NodeService):
        return
    node = service.node
    if node.snapshot_failure is not None:
        print(f"kraft-acl: warning: {node.snapshot_failure}", file=sys.stderr)
    kept = node.snapshots.retain if node.snapshots is not None else 0
    for name in node.retention_deleted:
        print(f"deleted by retention (newest {kept} usable kept): {name}", file=sys.stderr)


def _say_offset(target: LogTarget | ServerTarget, service: AclService) -> None:
    """Through serve, the offset a decision can require to see this write (read-your-writes), on stderr (stdout
    stays kafka-acls')."""
    if isinstance(target, ServerTarget) and service.last_offset is not None:
        print(
            f"kraft-acl: written at log offset {service.last_offset}; any serve answers from a state holding it "
            f"with kraft-acl authorize --server URL --min-offset {service.last_offset}",
            file=sys.stderr,
        )


def _confirmed(filters: list[AclBindingFilter], to_stderr: bool) -> list[AclBindingFilter]:
    """Ask kafka-acls' question per resource filter (on stderr when stdout carries JSON); those answered `y`."""
    by_pattern: dict[ResourcePatternFilter, list[AclBindingFilter]] = {}
    for acl_filter in filters:
        by_pattern.setdefault(acl_filter.pattern, []).append(acl_filter)
    chosen: list[AclBindingFilter] = []
    for pattern, group in by_pattern.items():
        entries = [f.entry for f in group if f.entry != AccessControlEntryFilter()]
        if not entries:
            question = f"Are you sure you want to delete all ACLs for resource filter `{pattern}`? (y/n)"
        else:
            listed = "\n".join(f"\t{e}" for e in entries)
            question = f"Are you sure you want to remove ACLs: \n {listed}\n from resource filter `{pattern}`? (y/n)"
        typer.echo(question, err=to_stderr)
        answer = sys.stdin.readline()
        if not answer:
            fail("no answer on standard input to the removal question; use --force to remove without asking")
        if answer.strip().lower() == "y":
            chosen += group
    return chosen


def _remove(target: LogTarget | ServerTarget, filters: list[AclBindingFilter], force: bool, output: Output) -> None:
    """Delete the ACLs matching `filters` (those confirmed, unless --force) in one atomic batch."""
    if not force:
        filters = _confirmed(filters, to_stderr=output.is_json)
        if not filters:
            return
    service = _open(target, write=True)
    try:
        results = service.delete_acls(filters)
    finally:
        service.close()
    _warn_snapshot(service)
    _say_offset(target, service)
    if output.is_json:
        payload: list[dict[str, Any]] = [
            {
                "error": None if r.error.code == 0 else str(r.error),
                "deleted": [acl_json(i, a) for i, a in r.deleted],
            }
            for r in results
        ]
        typer.echo(json.dumps(payload))
    else:
        removed = {i: a for r in results for i, a in r.deleted}
        for pattern, entries in _blocks(removed.values()).items():
            typer.echo(f"Removed ACLs for resource `{pattern}`:\n\t" + "\n\t".join(entries) + "\n")
        if not removed:
            typer.echo("No ACLs matched.")
    if any(r.error.code != 0 for r in results):
        raise typer.Exit(EXIT_FAILED)


def _list(
    target: LogTarget | ServerTarget, filters: list[AclBindingFilter], principals: list[str], output: Output
) -> None:
    """Print the ACLs matching any of `filters` (of `principals` only, when given), like kafka-acls --list."""
    service = _open(target, write=False)
    try:
        found: dict[str, StandardAcl] = {}
        for acl_filter in filters:
            found.update(service.describe(acl_filter))
    finally:
        service.close()
    if principals:
        found = {i: a for i, a in found.items() if a.principal in principals}
    if output.is_json:
        typer.echo(json.dumps([acl_json(i, a) for i, a in sorted(found.items())]))
    elif not principals:
        _print_current(list(found.values()))
    else:
        for principal in principals:
            typer.echo(f"ACLs for principal `{principal}`")
            _print_current([a for a in found.values() if a.principal == principal])
