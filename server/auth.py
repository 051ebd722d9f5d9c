"""Who is calling serve (bearer token, client certificate, or anonymous on listeners that allow it) and what
that caller may do: brokers ask on behalf of anyone, everyone else is authorized by the ACLs themselves.

`Authenticator`'s tokens are fixed at construction (the token file is read once at start-up); it remembers
the plain header values it has verified (`Bearer <token>`), and is used from the event loop thread only. Tokens
are looked up by their SHA-256, so the time a lookup takes does not depend on how many characters a
guess shares with a real token.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kraftacl.authorizer.errors import ConfigError

ANONYMOUS = "User:ANONYMOUS"


class TokenFileError(ConfigError):
    """auth.token.file cannot be used; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller: its principal and the address it connects from."""

    principal: str
    host: str


def load_tokens(path: Path) -> dict[bytes, str]:
    """`<principal> <token>` per line (`#` comments and blank lines skipped) -> {sha256(token): principal}."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenFileError(f"{path}: cannot read the token file: {exc}") from exc
    tokens: dict[bytes, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or ":" not in parts[0]:
            raise TokenFileError(f"{path}: line {number}: expected '<Type:name> <token>'")
        principal, token = parts
        if len(token) < 16:
            raise TokenFileError(f"{path}: line {number}: the token of {principal} is shorter than 16 characters")
        digest = hashlib.sha256(token.encode()).digest()
        if digest in tokens:
            raise TokenFileError(f"{path}: line {number}: this token is already given to {tokens[digest]}")
        tokens[digest] = principal
    return tokens


def principal_of_cert(cert: Mapping[str, object]) -> str | None:
    """`User:<CN>` from a verified client certificate's subject (the first commonName)."""
    subject = cert.get("subject")
    if not isinstance(subject, tuple):
        return None
    for rdn in subject:
        for pair in rdn:
            if isinstance(pair, tuple) and len(pair) == 2 and pair[0] == "commonName":
                return f"User:{pair[1]}"
    return None


class Authenticator:
    """Maps a request's credentials to a principal; None means 'no credentials offered'."""

    MAX_REMEMBERED = 1024

    def __init__(self, tokens: dict[bytes, str]) -> None:
        self.tokens = tokens
        # Authorization header values already verified -> their principal, so that a keep-alive broker's
        # every call is one dict probe instead of a SHA-256 (1.8 µs). Only accepted tokens enter it; a dict
        # compares a guess with an entry only on a full hash match (randomized), so timing reveals nothing.
        self._verified: dict[bytes, str] = {}

    def from_header(self, authorization: bytes | None) -> tuple[str | None, bool]:
        """(principal, offered): a bearer token's principal, or (None, True) for a token nobody holds."""
        if authorization is None:
            return None, False
        known = self._verified.get(authorization)
        if known is not None:
            return known, True
        scheme, _, token = authorization.partition(b" ")
        bare = token.strip()
        if scheme.lower() != b"bearer" or not bare:
            return None, True
        principal = self.tokens.get(hashlib.sha256(bare).digest())
        # only the plain form is remembered (`Bearer <token>`, the scheme in any case): padded with whitespace up to
        # serve's 64 KiB head, each of 1024 variants of one valid token was kept, 60 MB of serve (a padded header is
        # still accepted, at the cost of its SHA-256)
        if principal is not None and len(bare) == len(token):
            if len(self._verified) >= self.MAX_REMEMBERED:
                self._verified.clear()
            self._verified[authorization] = principal
        return principal, True
