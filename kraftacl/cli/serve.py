"""`kraft-acl serve`: load the configuration, set up logging, and run serve until it is stopped.

Stateless; every invocation is its own process.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from kraftacl.cli.errors import EXIT_FAILED, fail


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
) -> None:
    """Run the authorizer process Kafka brokers, scripts and the CLI ask: KIP-801 start-up (early-start
    listeners answer super users first, the others open once the ACLs are loaded), then tail the log and
    answer the HTTP API on every listener until SIGTERM or SIGINT.

    \b
    Example:
      kraft-acl serve --config examples/serve/server.properties
    """
    from kraftacl.authorizer.errors import ConfigError
    from kraftacl.server.config import load
    from kraftacl.server.log_backend import ServeError
    from kraftacl.server.process import serve, setup_logging

    try:
        settings = load(config)
    except ConfigError as exc:
        fail(str(exc))
    setup_logging(settings)
    for warning in settings.warnings:
        logging.getLogger("kraft_acl.serve").warning(warning)
    try:
        serve(settings)
    except ConfigError as exc:
        fail(str(exc))
    except ServeError as exc:
        fail(str(exc), EXIT_FAILED)
