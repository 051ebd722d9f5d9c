"""The connection options to a running serve that every `--server` command shares (`--server`, `--token`,
`--token-file`, `--cert`, `--key`, `--cacert`), defined once.

Immutable typer annotations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kraftacl.api.client import TOKEN_ENV

ServerUrl = Annotated[
    str | None,
    typer.Option(
        "--server", metavar="URL", help="instead of a log: a running kraft-acl serve, e.g. http://127.0.0.1:9191"
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
