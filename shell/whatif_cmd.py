"""`kraft-acl authorize`: evaluate requests against ACLs with no running service (dry runs, CI checks).

Stateless; one command invocation builds one authorizer.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from authorizer.config import AuthorizerConfig, load_config
from authorizer.errors import AuthorizerError, ConfigError, ImageError
from authorizer.metadata_source import authorizer_for
from authorizer.model import StandardAcl
from authorizer.standard import StandardAuthorizer
from authorizer.whatif import InputError, Request, evaluate, load_acls, load_requests
from shell.errors import EXIT_FAILED, fail
from shell.kafka_source import kafka_files, kafka_state
from shell.log_state import STATE_AT_HELP, replayed


class Output(StrEnum):
    """Output formats."""

    json = "json"
    table = "table"


def build_authorizer(acls: list[StandardAcl], config: AuthorizerConfig) -> StandardAuthorizer:
    """A loaded authorizer over these ACLs (ids are positions: the what-if has no log)."""
    authorizer = StandardAuthorizer(config)
    authorizer.load_snapshot((f"acl-{n}", acl) for n, acl in enumerate(acls))
    authorizer.complete_initial_load()
    return authorizer


def _row(request: Request) -> list[str]:
    if request.kind == "describe":
        return [request.kind, "", "", "", "filter"]
    rtype = request.resource_type.name if request.resource_type is not None else ""
    resource = f"{rtype}:{request.resource_name}" if request.resource_name is not None else rtype
    op = request.operation.name if request.operation is not None else ""
    return [request.kind, request.principal or "", request.host or "", op, resource]


def _answer_text(answer: dict[str, Any]) -> str:
    if "result" in answer:
        return str(answer["result"])
    if "authorized_operations" in answer:
        return str(answer["authorized_operations"])
    if "acls" in answer:
        return f"{len(answer['acls'])} ACL(s)"
    return f"ERROR: {answer.get('error')}"


Requests = Annotated[Path, typer.Option("--requests", help="requests.jsonl: one request per line")]
AclsFile = Annotated[Path | None, typer.Option("--acls", help="acls.json: a JSON array of ACL objects")]
LogDir = Annotated[
    Path | None,
    typer.Option(
        "--log-dir",
        help="instead of --acls: the ACL state replayed from this metadata log directory (kraft-acl's, or "
        "Apache Kafka's own KRaft metadata: a metadata.log.dir, __cluster_metadata-0, a .log or .checkpoint)",
    ),
]
AtOffset = Annotated[int | None, typer.Option("--at-offset", metavar="N", help=f"with --log-dir: {STATE_AT_HELP}")]
ConfigFile = Annotated[Path | None, typer.Option("--config", help="server.properties (super.users, ...)")]
Explain = Annotated[bool, typer.Option("--explain", help="add the rule that decided each request")]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="json (one object per line) or table")]


def authorize_command(
    requests: Requests,
    acls: AclsFile = None,
    log_dir: LogDir = None,
    at_offset: AtOffset = None,
    config: ConfigFile = None,
    explain: Explain = False,
    output: OutputOpt = Output.json,
) -> None:
    """Evaluate requests against ACLs exactly as Kafka's StandardAuthorizer would, without a running service.

    The ACLs come from an acls.json file (--acls) or a metadata log at an offset (--log-dir, --at-offset).
    """
    if (acls is None) == (log_dir is None):
        fail("give exactly one of --acls FILE and --log-dir DIR")
    if at_offset is not None and log_dir is None:
        fail("--at-offset needs --log-dir")
    try:
        cfg = load_config(config) if config is not None else AuthorizerConfig()
        parsed = list(load_requests(requests))
    except (InputError, ConfigError) as exc:
        fail(str(exc))
    if log_dir is not None and kafka_files(log_dir) is not None:  # Apache Kafka's own metadata
        state = kafka_state(log_dir, at_offset, "--at-offset")
        _answer(authorizer_for(state, cfg), parsed, requests, explain, output)
        return
    if log_dir is not None:
        with replayed(log_dir, at_offset, option="--at-offset", config=cfg) as node:
            _answer(node.authorizer, parsed, requests, explain, output)
        return
    assert acls is not None
    try:
        authorizer = build_authorizer(load_acls(acls), cfg)
    except InputError as exc:
        fail(str(exc))
    except ImageError as exc:
        fail(f"{acls}: {exc}")
    _answer(authorizer, parsed, requests, explain, output)


def _answer(
    authorizer: StandardAuthorizer,
    parsed: list[tuple[int, Request]],
    requests: Path,
    explain: bool,
    output: Output,
) -> None:
    """Evaluate every request and print the answers; exit 1 if any request failed."""
    answers: list[tuple[Request, dict[str, Any]]] = []
    failed = False
    for number, request in parsed:
        try:
            answer = evaluate(authorizer, request, explain=explain)
        except AuthorizerError as exc:
            answer, failed = {"error": f"{requests}: line {number}: {exc}"}, True
        answers.append((request, answer))
    if output is Output.json:
        for _, answer in answers:
            typer.echo(json.dumps(answer))
    else:
        _print_table(answers, explain)
    if failed:
        raise typer.Exit(EXIT_FAILED)


def _print_table(answers: list[tuple[Request, dict[str, Any]]], explain: bool) -> None:
    table = Table("#", "kind", "principal", "host", "operation", "resource", "answer")
    if explain:
        table.add_column("rule", overflow="fold")
    for number, (request, answer) in enumerate(answers, start=1):
        cells = [str(number), *_row(request), _answer_text(answer)]
        if explain:
            cells.append(str(answer.get("rule", "")))
        table.add_row(*cells)
    Console(width=200).print(table)
