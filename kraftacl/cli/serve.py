"""`kraft-acl serve`: load the configuration, set up logging, and run serve until it is stopped; or, with
`--check-config`, only check the configuration (for CI pipelines: exit 2 on any unknown or invalid key).

Stateless; every invocation is its own process.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kraftacl.cli.errors import EXIT_FAILED, EXIT_INPUT, error_line, error_text, fail
from kraftacl.cli.output import Output, output_option

if TYPE_CHECKING:
    from kraftacl.server.config import ServeConfig


def serve_command(
    config: Annotated[
        Path,
        typer.Option(
            "--config",
            metavar="FILE",
            help="Kafka-style properties file: listeners, early.start.listeners, super.users, metadata.log.dir, "
            "auth.token.file, broker.principals, ... (docs/serve.md: Configuration)",
        ),
    ],
    check_config: Annotated[
        bool,
        typer.Option(
            "--check-config",
            help="only check the configuration: exit 0 when every key is known and valid, else one line per "
            "problem and exit 2; nothing is opened",
        ),
    ] = False,
    output: Annotated[
        Output,
        output_option("table (status lines for people; text is the same) or json (one JSON object per status line)"),
    ] = Output.table,
) -> None:
    """Run the authorizer process Kafka brokers, scripts and the CLI ask: KIP-801 start-up (early-start
    listeners answer super users first, the others open once the ACLs are loaded), then tail the log and
    answer the HTTP API on every listener until SIGTERM or SIGINT. Status lines go to stdout (`ready: ...`
    once every listener is open), logs to stderr; serve goes on if its stdout is closed.

    \b
    Example:
      kraft-acl serve --config examples/serve/server.properties
      kraft-acl serve --config examples/serve/server.properties --check-config
      kraft-acl serve --config examples/serve/server.properties -o json | head -1
    """
    from kraftacl.authorizer.errors import ConfigError
    from kraftacl.server.announce import Announcer
    from kraftacl.server.config import load, unknown_key_message
    from kraftacl.server.log_backend import ServeError
    from kraftacl.server.process import serve, setup_logging

    try:
        settings = load(config)
    except ConfigError as exc:
        if check_config and output.is_json:
            typer.echo(json.dumps({"config": str(config), "valid": False, "errors": [str(exc)]}))
            raise typer.Exit(EXIT_INPUT) from exc
        fail(str(exc))
    if check_config:
        errors = [unknown_key_message(config, key, ignored=False) for key in settings.unknown_keys]
        _print_check(settings, errors, output)
        raise typer.Exit(EXIT_INPUT if errors else 0)
    records = setup_logging(settings)
    for warning in settings.warnings:
        logging.getLogger("kraft_acl.serve").warning(warning)
    try:
        serve(settings, Announcer(json_lines=output.is_json))
    except ConfigError as exc:
        records.exit(EXIT_INPUT, error_text(str(exc)))  # a stderr nobody reads does not hold any exit
    except ServeError as exc:
        records.exit(EXIT_FAILED, error_text(str(exc)))
    records.exit(0)


def _print_check(settings: ServeConfig, errors: list[str], output: Output) -> None:
    """The result of --check-config: what serve would open, or every problem (one line each, on stderr)."""
    listeners = [
        {"name": listener.name, "url": listener.url(), "early_start": listener.early_start}
        for listener in settings.listeners
    ]
    log = settings.log
    where = str(log.log_dir) if log.log_dir is not None else f"Kafka topic at {log.bootstrap_servers}"
    roles = ["broker", "controller"] if settings.controller else ["broker"]
    if output.is_json:
        report = {"config": str(settings.path), "valid": not errors, "errors": errors, "listeners": listeners}
        typer.echo(json.dumps({**report, "log": where, "roles": roles}))
        return
    for line in errors:
        error_line(line)
    if errors:
        return
    opened = ", ".join(f"{x['name']} {x['url']}" + (" (early start)" if x["early_start"] else "") for x in listeners)
    typer.echo(f"{settings.path}: valid: listeners {opened}; log {where}; roles {','.join(roles)}")
