"""The connection options to a running serve that every `--server` command shares (`--server`, `--token`,
`--token-file`, `--cert`, `--key`, `--cacert`), defined once, and collapsed into one parameter: a command takes
`server: Server = None` and receives the `ServerTarget` (None without --server); typer-injector expands the six
options into its signature where that parameter stands (the app is an `InjectingTyper`).

Immutable typer annotations and a pure function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer_injector import Depends

from kraftacl.api.client import TOKEN_ENV, ServerTarget

ServerUrl = Annotated[
    str | None,
    typer.Option(
        "--server",
        metavar="URL",
        help="instead of a log: a running kraft-acl serve, e.g. http://127.0.0.1:9191; several comma-separated: "
        "the next is asked when one is unreachable, loading (503) or not the active controller (421)",
    ),
]
Token = Annotated[
    str | None,
    typer.Option("--token", metavar="TOKEN", help=f"with --server: the bearer token (or the {TOKEN_ENV} variable)"),
]
TokenFile = Annotated[
    Path | None, typer.Option("--token-file", metavar="FILE", help="with --server: a file holding the bearer token")
]
Cert = Annotated[
    Path | None, typer.Option("--cert", metavar="FILE", help="with --server: PEM client certificate for mutual TLS")
]
Key = Annotated[Path | None, typer.Option("--key", metavar="FILE", help="with --server: PEM private key of --cert")]
CaCert = Annotated[
    Path | None,
    typer.Option("--cacert", metavar="FILE", help="with --server: PEM CA bundle serve's certificate chains to"),
]


def server_target(
    server: ServerUrl = None,
    token: Token = None,
    token_file: TokenFile = None,
    cert: Cert = None,
    key: Key = None,
    cacert: CaCert = None,
) -> ServerTarget | None:
    """The serve a command talks to, from its six connection options (None: no --server)."""
    return None if server is None else ServerTarget(server, token, token_file, cert, key, cacert)


Server = Annotated[ServerTarget | None, Depends(server_target)]
