"""`kraft-acl shell`: open a source, then run one command (non-interactive), the commands read from standard input
(when it is not a terminal), or the interactive shell.

Stateless; one invocation opens one source and closes it.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kraftacl.api.client import ServerError
from kraftacl.authorizer.decision.config import AuthorizerConfig, load_config
from kraftacl.authorizer.errors import ConfigError
from kraftacl.cli.errors import fail
from kraftacl.cli.options import Server, server_failed
from kraftacl.cli.output import Output, output_option
from kraftacl.shell.parse import EXIT_USAGE
from kraftacl.shell.session import Shell
from kraftacl.shell.sources.base import AclSource, SourceError
from kraftacl.shell.sources.open_source import SourceOptions, open_source

# Everything after the first word of COMMAND is the shell command's own (`find -x` reaches `find`).
CONTEXT: dict[str, Any] = {"allow_interspersed_args": False, "ignore_unknown_options": True}
DEFAULT_HISTORY = Path.home() / ".kraft_acl_shell_history"
EXIT_INTERRUPTED = 130

Words = Annotated[
    list[str] | None, typer.Argument(metavar="COMMAND", help="run this one command (its words: `ls /acl`) and exit")
]
LogDir = Annotated[
    Path | None,
    typer.Option(
        "--log-dir",
        metavar="DIR",
        help="an embedded metadata log directory, or Apache Kafka's metadata.log.dir (followed live)",
    ),
]
Snapshot = Annotated[
    Path | None,
    typer.Option("--snapshot", metavar="FILE", help="a .checkpoint snapshot file (kraft-acl's or Apache Kafka's)"),
]
Bootstrap = Annotated[
    str | None,
    typer.Option(
        "--bootstrap-server", metavar="HOST:PORT", help="the metadata log is a Kafka topic on this cluster (followed)"
    ),
]
CommandConfig = Annotated[
    Path | None,
    typer.Option("--command-config", metavar="FILE", help="Kafka client properties (security.protocol, sasl.*)"),
]
Topic = Annotated[
    str | None,
    typer.Option("--metadata-topic", metavar="TOPIC", help="Kafka topic of the log (default kraft-acl-metadata)"),
]
AtOffset = Annotated[
    int | None, typer.Option("--at-offset", metavar="N", help="start at the state at offset N (every record below N)")
]
Config = Annotated[
    Path | None,
    typer.Option("--config", metavar="FILE", help="server.properties: super.users, allow.everyone.if.no.acl.found"),
]
HistoryFile = Annotated[
    Path | None,
    typer.Option(
        "--history-file",
        metavar="FILE",
        help="interactive history, kept across sessions (default ~/.kraft_acl_shell_history)",
    ),
]


def shell_command(
    words: Words = None,
    log_dir: LogDir = None,
    snapshot: Snapshot = None,
    bootstrap_server: Bootstrap = None,
    command_config: CommandConfig = None,
    metadata_topic: Topic = None,
    at_offset: AtOffset = None,
    config: Config = None,
    history_file: HistoryFile = None,
    server: Server = None,
    output: Annotated[
        Output,
        output_option(
            "table (each answer as text; text is the same) or json (each command's answer as one JSON object: "
            "the command, its status and its values; not for the interactive shell)"
        ),
    ] = Output.table,
) -> None:
    """The metadata shell: Kafka's kafka-metadata-shell commands over the ACLs, plus authorize, who-can, history, at.

    With no COMMAND and a terminal it is interactive; with no COMMAND and no terminal it reads one
    command per line from standard input. `help` lists the commands, `man COMMAND` describes one.

    \b
    Example:
      kraft-acl shell --log-dir data/meta
      kraft-acl shell --log-dir data/meta who-can READ TOPIC:orders
      kraft-acl shell --server http://127.0.0.1:9191 --token-file admin.token
      echo 'ls /acl/by-principal' | kraft-acl shell --snapshot data/meta/00000000000000000012-0000000003.checkpoint
      kraft-acl shell --log-dir data/meta -o json authorize User:alice 10.0.0.1 READ TOPIC:orders
    """
    if server is not None and config is not None:
        fail("--config: with --server the decisions use serve's own super.users and allow.everyone.if.no.acl.found")
    try:
        cfg = load_config(config) if config is not None else AuthorizerConfig()
    except ConfigError as exc:
        fail(str(exc))
    options = SourceOptions(log_dir, snapshot, bootstrap_server, command_config, metadata_topic, at_offset, cfg, server)
    interactive = not words and sys.stdin.isatty()
    if interactive and output.is_json:
        fail("-o json answers a COMMAND, or the commands read from standard input; the interactive shell prints text")
    if interactive:
        print("Loading...", flush=True)
    try:
        source = open_source(options)
    except SourceError as exc:
        if isinstance(exc.__cause__, ServerError):  # the one rule of every --server command (cli.options)
            server_failed(exc.__cause__)
        fail(str(exc))
    try:
        status = _run(source, words or [], interactive, history_file, output.is_json)
    except KeyboardInterrupt:
        status = EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of our output went away (`| head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    finally:
        source.close()
    raise typer.Exit(status)


def _run(source: AclSource, words: list[str], interactive: bool, history_file: Path | None, as_json: bool) -> int:
    if interactive:
        from kraftacl.shell.interactive import history_store, run_interactive

        print("Starting...", flush=True)
        run_interactive(source, history_store(history_file or _default_history()))
        return 0
    shell = Shell(source, sys.stdout.write, sys.stderr.write)
    run = shell.run_json if as_json else shell.run_line
    if words:
        run(shlex.join(words), words)
        return shell.status
    for raw in sys.stdin:
        line = raw.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            parsed = shlex.split(line)
        except ValueError as exc:
            shell.error(f"cannot read the line '{line}': {exc}", EXIT_USAGE)
            continue
        run(line, parsed)
        sys.stdout.flush()  # a program feeding the commands one by one reads each answer before its next command
        if shell.done:
            break
    return shell.status


def _default_history() -> Path:
    configured = os.environ.get("KRAFT_ACL_SHELL_HISTORY")
    return Path(configured) if configured else DEFAULT_HISTORY
