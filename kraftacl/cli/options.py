"""The connection options to a running serve that every `--server` command shares (`--server`, `--token`,
`--token-file`, `--cert`, `--key`, `--cacert`), defined once, and collapsed into one parameter: a command takes
`server: Server = None` and receives the checked `ServerTarget` (None without --server); typer-injector expands
the six options into its signature where that parameter stands (the app is an `InjectingTyper`).

The rule, the same in every command (docs: README "Using kraft-acl"):
* exit 2, before anything is sent: a URL that is not http(s)://host[:port] (one without a scheme is taken as
  http://), a token, certificate, key or CA file that is missing or unreadable, a token file without a token;
* exit 1: serve cannot be reached (refused, timed out, no such host), or it refuses the caller (401, 403), is not
  ready (503) or is not the controller (421); exit 2 when serve finds the request malformed (400).
Each is one `kraft-acl: error:` line naming the URL or the file.

Immutable typer annotations and stateless functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn
from urllib.parse import urlsplit

import typer
from typer_injector import Depends

from kraftacl.api.client import TOKEN_ENV, ServerError, ServerTarget, TokenFileError, read_token_file
from kraftacl.cli.errors import EXIT_FAILED, EXIT_INPUT, fail

ServerUrl = Annotated[
    str | None,
    typer.Option(
        "--server",
        metavar="URL",
        help="instead of a log: a running kraft-acl serve, e.g. http://127.0.0.1:9191 (no scheme: http); several "
        "comma-separated: the next is asked when one is unreachable, loading (503) or not the active controller (421)",
    ),
]
Token = Annotated[
    str | None,
    typer.Option("--token", metavar="TOKEN", help=f"with --server: the bearer token (or the {TOKEN_ENV} variable)"),
]
TokenFile = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        metavar="FILE",
        help="with --server: a file holding the bearer token (its first line that is not blank or a # comment)",
    ),
]
Cert = Annotated[
    Path | None, typer.Option("--cert", metavar="FILE", help="with --server: PEM client certificate for mutual TLS")
]
Key = Annotated[Path | None, typer.Option("--key", metavar="FILE", help="with --server: PEM private key of --cert")]
CaCert = Annotated[
    Path | None,
    typer.Option("--cacert", metavar="FILE", help="with --server: PEM CA bundle serve's certificate chains to"),
]


def server_url(urls: str) -> str:
    """`--server`'s value as base URLs, comma-separated as given: http:// added to one without a scheme; anything
    but http(s)://host[:port] is a usage error (exit 2) naming that URL."""
    return ",".join(_one_url(url) for url in urls.split(",") if url.strip()) or _one_url(urls)


def _one_url(url: str) -> str:
    text = url.strip()
    if "://" not in text:
        text = f"http://{text}"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
    except ValueError as exc:
        fail(f"--server {url}: not a URL ({exc})")
    if parts.scheme not in ("http", "https"):
        fail(f"--server {url}: the scheme must be http or https, not {parts.scheme}")
    if not parts.hostname:
        fail(f"--server {url}: no host (expected e.g. http://127.0.0.1:9191)")
    if parts.path.strip("/") or parts.query or parts.fragment:
        fail(f"--server {url}: give serve's base URL (scheme, host and port), without a path")
    return f"{parts.scheme}://{parts.netloc}"


def server_target(
    server: ServerUrl = None,
    token: Token = None,
    token_file: TokenFile = None,
    cert: Cert = None,
    key: Key = None,
    cacert: CaCert = None,
) -> ServerTarget | None:
    """The serve a command talks to, from its six connection options (None: no --server), checked before
    anything is sent (exit 2 on bad input)."""
    if server is None:
        return None
    for option, path in (("--cert", cert), ("--key", key), ("--cacert", cacert)):
        if path is not None and not path.is_file():
            fail(f"{option} {path}: no such file")
    if token is None and token_file is not None:
        try:
            token = read_token_file(token_file)
        except TokenFileError as exc:
            fail(str(exc))
    return ServerTarget(server_url(server), token, None, cert, key, cacert)


Server = Annotated[ServerTarget | None, Depends(server_target)]


def server_exit_code(exc: ServerError) -> int:
    """The exit code of a failed call to serve: 2 for our own bad input (a request serve found malformed, a
    token file), 1 for everything else (unreachable, refused, not ready, not the controller)."""
    return EXIT_INPUT if isinstance(exc, TokenFileError) or exc.status == 400 else EXIT_FAILED


def server_failed(exc: ServerError) -> NoReturn:
    """The one error line of a failed call to serve, and its exit code."""
    fail(str(exc), server_exit_code(exc))


#: the one line of a command that reads or writes a log or a serve (acls, export) when not exactly one is given
ONE_TARGET = (
    "give exactly one of --log-dir DIR (embedded log), --bootstrap-server HOST:PORT (Kafka) and --server URL "
    "(a running kraft-acl serve)"
)


def check_one_target(log_dir: Path | None, bootstrap_server: str | None, server: ServerTarget | None) -> None:
    """Exactly one of the three places: otherwise ONE_TARGET, exit 2."""
    if sum(given is not None for given in (log_dir, bootstrap_server, server)) != 1:
        fail(ONE_TARGET)
