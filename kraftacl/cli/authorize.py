"""`kraft-acl authorize`: evaluate requests against ACLs with no running service (dry runs, CI checks).

Stateless; one command invocation builds one authorizer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from kraftacl.api.client import ServerError
from kraftacl.authorizer.decision.config import AuthorizerConfig, load_config
from kraftacl.authorizer.decision.standard import StandardAuthorizer
from kraftacl.authorizer.errors import AuthorizerError, ConfigError, ImageError
from kraftacl.authorizer.history.metadata_source import authorizer_for
from kraftacl.authorizer.inputs.validate import InputError, Request, parse_acls, parse_request, parse_requests
from kraftacl.authorizer.inputs.whatif import evaluate, read_input
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.controller import validate_new_acl
from kraftacl.cli.acls_options import AclOptions as ResourceFlags
from kraftacl.cli.acls_options import OptionError, check_principal, parse_operation, resources
from kraftacl.cli.authorize_view import answers_table
from kraftacl.cli.errors import EXIT_FAILED, fail
from kraftacl.cli.kafka_files import kafka_files, kafka_state
from kraftacl.cli.log_state import STATE_AT_HELP, replayed
from kraftacl.cli.options import Server, server_failed
from kraftacl.cli.output import Output, output_option, print_table

Evaluator = Callable[[Request, bool], dict[str, Any]]

STDIN = "-"


def build_authorizer(acls: list[StandardAcl], config: AuthorizerConfig) -> StandardAuthorizer:
    """A loaded authorizer over these ACLs (ids are positions: the what-if has no log)."""
    authorizer = StandardAuthorizer(config)
    authorizer.load_snapshot((f"acl-{n}", acl) for n, acl in enumerate(acls))
    authorizer.complete_initial_load()
    return authorizer


def _read(path: Path) -> tuple[bytes, str]:
    """The bytes of an input file, or of standard input for `-`, and the name errors give it."""
    if str(path) == STDIN:
        return sys.stdin.buffer.read(), "<stdin>"
    return read_input(path), str(path)


Requests = Annotated[
    Path | None,
    typer.Option(
        "--requests", metavar="FILE", help="requests.jsonl: one request (JSON object) per line; - reads standard input"
    ),
]
AclsFile = Annotated[
    Path | None, typer.Option("--acls", metavar="FILE", help="acls.json: a JSON array of ACL objects; - for stdin")
]
LogDir = Annotated[
    Path | None,
    typer.Option(
        "--log-dir",
        metavar="DIR",
        help="instead of --acls: the ACL state replayed from this metadata log directory (kraft-acl's, or "
        "Apache Kafka's own KRaft metadata: a metadata.log.dir, __cluster_metadata-0, a .log or .checkpoint)",
    ),
]
AtOffset = Annotated[int | None, typer.Option("--at-offset", metavar="N", help=f"with --log-dir: {STATE_AT_HELP}")]
ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="the broker's server.properties: super.users and allow.everyone.if.no.acl.found",
    ),
]
Explain = Annotated[
    bool, typer.Option("--explain", help="add the rule that decided each request (in the words of Kafka's audit log)")
]
OutputOpt = Annotated[
    Output,
    output_option("json (the default: one answer object per request line, in order) or table (text is the same)"),
]


def _flag(name: str, metavar: str, text: str) -> Any:
    return typer.Option(name, metavar=metavar, help=f"one quick question, instead of --requests: {text}")


Principal = Annotated[str | None, _flag("--principal", "PRINCIPAL", "the client's principal, Type:name (User:alice)")]
Host = Annotated[str | None, _flag("--host", "IP", "the client's IP address")]
Operation = Annotated[str | None, _flag("--operation", "OPERATION", "Read, Write, Describe, ... (kafka-acls' names)")]
Topic = Annotated[str | None, _flag("--topic", "NAME", "the topic asked about")]
Group = Annotated[str | None, _flag("--group", "NAME", "the consumer group asked about")]
Cluster = Annotated[bool, typer.Option("--cluster", help="one quick question: about the cluster (kafka-cluster)")]
TransactionalId = Annotated[str | None, _flag("--transactional-id", "ID", "the transactional id asked about")]
DelegationToken = Annotated[str | None, _flag("--delegation-token", "ID", "the delegation token asked about")]
UserPrincipal = Annotated[str | None, _flag("--user-principal", "PRINCIPAL", "the user (resource) asked about")]
MinOffset = Annotated[
    int | None,
    typer.Option(
        "--min-offset",
        metavar="N",
        min=0,
        help="with --server: answer from a state that has applied log offset N (the offset `kraft-acl acls --add/"
        "--remove --server` printed): serve waits for it, bounded by its min.offset.wait.max.ms (read-your-writes)",
    ),
]


def warn_refused(acls: list[StandardAcl], source: str, most: int = 10) -> None:
    """One warning line per ACL that CreateAcls (and `import`) would refuse (the first `most`, then how many more):
    it is still decided as stored, as Kafka's StandardAuthorizer decides an ACL that reached its log some other way,
    but no cluster can be brought to that state through its API."""
    refused = ((n, e) for n, acl in enumerate(acls) if (e := validate_new_acl(acl, api_checks=True)) is not None)
    count = 0
    for position, error in refused:
        count += 1
        if count <= most:
            print(
                f"kraft-acl: warning: {source}: element {position}: {error.message or error.name} (CreateAcls and "
                "import refuse this ACL; it is decided as stored)",
                file=sys.stderr,
            )
    if count > most:
        print(f"kraft-acl: warning: {source}: {count - most} more ACLs that CreateAcls would refuse", file=sys.stderr)


def authorize_command(
    requests: Requests = None,
    acls: AclsFile = None,
    log_dir: LogDir = None,
    at_offset: AtOffset = None,
    config: ConfigFile = None,
    explain: Explain = False,
    output: OutputOpt = Output.json,
    principal: Principal = None,
    host: Host = None,
    operation: Operation = None,
    topic: Topic = None,
    group: Group = None,
    cluster: Cluster = False,
    transactional_id: TransactionalId = None,
    delegation_token: DelegationToken = None,
    user_principal: UserPrincipal = None,
    min_offset: MinOffset = None,
    server: Server = None,
) -> None:
    """Decide requests against ACLs exactly as Kafka's StandardAuthorizer would.

    The ACLs come from an acls.json file (--acls), a metadata log at an offset (--log-dir,
    --at-offset), or a running serve (--server, which decides with its own state and
    configuration); the questions from a requests.jsonl file (--requests), or one question given with
    --principal, --host, --operation and one resource (--topic, --group, --cluster, ...). A request
    Kafka itself refuses is answered with an error on its line, and the command exits 1.

    \b
    Example:
      kraft-acl authorize --acls acls.json --principal User:alice --host 10.0.0.1 --operation Read --topic orders
      kraft-acl authorize --acls acls.json --requests requests.jsonl --explain -o table
      cat requests.jsonl | kraft-acl authorize --log-dir data/meta --at-offset 120 --requests -
      kraft-acl authorize --server http://127.0.0.1:9191 --token-file broker.token --requests requests.jsonl
      kraft-acl authorize --server http://127.0.0.1:9191 --token-file broker.token --min-offset 42 \\
        --principal User:alice --host 10.0.0.1 --operation Read --topic orders
    """
    if [acls is None, log_dir is None, server is None].count(False) != 1:
        fail("give exactly one of --acls FILE, --log-dir DIR and --server URL")
    if at_offset is not None and log_dir is None:
        fail("--at-offset needs --log-dir")
    if min_offset is not None and server is None:
        fail("--min-offset needs --server (a log or a file is read whole: it is always current)")
    if config is not None and server is not None:
        fail("--config does not apply to --server (serve decides with its own super.users and defaults)")
    if acls is not None and requests is not None and str(acls) == str(requests) == STDIN:
        fail("--acls and --requests cannot both read standard input")
    flags = ResourceFlags(
        [topic] if topic is not None else [],
        [group] if group is not None else [],
        cluster,
        [transactional_id] if transactional_id is not None else [],
        [delegation_token] if delegation_token is not None else [],
        [user_principal] if user_principal is not None else [],
    )
    try:
        cfg = load_config(config) if config is not None else AuthorizerConfig()
        parsed, source = _questions(requests, principal, host, operation, flags)
    except (InputError, ConfigError, OptionError) as exc:
        fail(str(exc))
    if server is not None:
        client = server.connect()
        try:
            _answer(lambda r, e: client.evaluate(r, e, min_offset), parsed, source, explain, output)
        except ServerError as exc:
            server_failed(exc)
        finally:
            client.close()
        return
    if log_dir is not None and kafka_files(log_dir) is not None:  # Apache Kafka's own metadata
        state = kafka_state(log_dir, at_offset, "--at-offset")
        _answer(_local(authorizer_for(state, cfg)), parsed, source, explain, output)
        return
    if log_dir is not None:
        with replayed(log_dir, at_offset, option="--at-offset", config=cfg) as node:
            _answer(_local(node.authorizer), parsed, source, explain, output)
        return
    assert acls is not None
    try:
        loaded = parse_acls(*_read(acls))
        authorizer = build_authorizer(loaded, cfg)
    except InputError as exc:
        fail(str(exc))
    except ImageError as exc:
        fail(f"{acls}: {exc}")
    warn_refused(loaded, str(acls))  # only about a file that is used: bad input stays one error line
    _answer(_local(authorizer), parsed, source, explain, output)


def _questions(
    requests: Path | None, principal: str | None, host: str | None, operation: str | None, flags: ResourceFlags
) -> tuple[list[tuple[int, Request]], str]:
    """The requests of --requests, or the one question of the flags (exactly one of the two forms), and
    the name an answer's error gives their source."""
    asked = {"--principal": principal, "--host": host, "--operation": operation}
    named = resources(flags, flags.pattern_type)
    if requests is not None:
        if any(v is not None for v in asked.values()) or named:
            raise OptionError("give either --requests FILE or the options of one question, not both")
        data, source = _read(requests)
        return parse_requests(data, source), source
    missing = [option for option, value in asked.items() if value is None]
    if len(missing) == len(asked) and not named:
        raise OptionError("give --requests FILE, or one question: --principal, --host, --operation and a resource")
    if missing:
        raise OptionError(f"a question needs {missing[0]} (or give --requests FILE)")
    if len(named) != 1:
        raise OptionError(
            "a question names exactly one resource: --topic, --group, --cluster, --transactional-id, "
            f"--delegation-token or --user-principal (got {len(named)})"
        )
    assert principal is not None and operation is not None
    (rtype, name), op = named[0], parse_operation(operation)
    fields = {
        "principal": check_principal(principal, "--principal"),
        "host": host,
        "operation": op,
        "resource_type": rtype,
    }
    try:
        return [(1, parse_request({**fields, "resource_name": name}))], "the question"
    except InputError as exc:
        raise OptionError(f"--{exc.field}: {exc.reason}") from None


def _local(authorizer: StandardAuthorizer) -> Evaluator:
    return lambda request, explain: evaluate(authorizer, request, explain=explain)


def _answer(
    evaluator: Evaluator,
    parsed: list[tuple[int, Request]],
    source: str,
    explain: bool,
    output: Output,
) -> None:
    """Evaluate every request and print the answers; exit 1 if any request failed."""
    answers: list[tuple[Request, dict[str, Any]]] = []
    failed = False
    for number, request in parsed:
        try:
            answer = evaluator(request, explain)
        except ServerError as exc:
            if exc.status == 0 or exc.status in (401, 403, 503) or exc.field == "$.min_offset":
                raise  # serve unreachable, this caller may not ask, or --min-offset is wrong: every line fails alike
            answer, failed = {"error": f"{source}: line {number}: {exc}"}, True
        except AuthorizerError as exc:
            answer, failed = {"error": f"{source}: line {number}: {exc}"}, True
        answers.append((request, answer))
    if output.is_json:
        for _, answer in answers:
            typer.echo(json.dumps(answer))
    else:
        print_table(answers_table(answers, explain))
    if failed:
        raise typer.Exit(EXIT_FAILED)
