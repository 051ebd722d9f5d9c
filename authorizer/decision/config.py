"""The authorizer's configuration, parsed exactly as Kafka parses it (spec §3, §16.5) from a properties file.

`AuthorizerConfig` is an immutable pydantic model; parsing functions are pure.
"""

from __future__ import annotations

import re
from pathlib import Path

import javaproperties
from pydantic import BaseModel, ConfigDict

from kraftacl.authorizer.errors import ConfigError
from kraftacl.authorizer.model.input_checks import InputError, check_string, decode_utf8

SUPER_USERS = "super.users"
ALLOW_EVERYONE = "allow.everyone.if.no.acl.found"
EARLY_START_LISTENERS = "early.start.listeners"
NODE_ID = "node.id"


class AuthorizerConfig(BaseModel):
    """The keys StandardAuthorizer reads; anything else in the file is kept in `extra` for other components."""

    model_config = ConfigDict(frozen=True)

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False
    early_start_listeners: tuple[str, ...] = ()
    node_id: int = -1
    extra: dict[str, str] = {}


def java_trim(value: str) -> str:
    """Java's `String.trim()`: strips every character up to U+0020 from both ends, and nothing else."""
    start, end = 0, len(value)
    while start < end and value[start] <= " ":
        start += 1
    while end > start and value[end - 1] <= " ":
        end -= 1
    return value[start:end]


def parse_super_users(value: str | None) -> frozenset[str]:
    """Split on `;`, trim, drop empties; every piece must be `Type:Name` (Kafka's message on failure)."""
    if value is None:
        return frozenset()
    users = []
    for piece in value.split(";"):
        piece = java_trim(piece)
        if not piece:
            continue
        if ":" not in piece:
            raise ConfigError(f"{SUPER_USERS}: expected a string in format principalType:principalName but got {piece}")
        users.append(piece)
    return frozenset(users)


def parse_bool(value: str | None) -> bool:
    """Java's `Boolean.parseBoolean(value.trim())`: only `true` in any case is true."""
    return value is not None and java_trim(value).lower() == "true"


def parse_listeners(value: str | None) -> tuple[str, ...]:
    """Comma-separated names, trimmed, empties dropped."""
    if value is None:
        return ()
    return tuple(java_trim(name) for name in value.split(",") if java_trim(name))


def parse_node_id(value: str | None) -> int:
    """Java's `Integer.parseInt` after trim; -1 when absent, malformed or outside int32 (as Kafka does)."""
    text = java_trim(value) if value is not None else ""
    if not re.fullmatch(r"[+-]?[0-9]{1,10}", text):
        return -1
    number = int(text)
    return number if -(2**31) <= number < 2**31 else -1


def config_from_properties(props: dict[str, str]) -> AuthorizerConfig:
    """Build the config from already-parsed properties."""
    known = {SUPER_USERS, ALLOW_EVERYONE, EARLY_START_LISTENERS, NODE_ID}
    return AuthorizerConfig(
        super_users=parse_super_users(props.get(SUPER_USERS)),
        allow_everyone_if_no_acl_found=parse_bool(props.get(ALLOW_EVERYONE)),
        early_start_listeners=parse_listeners(props.get(EARLY_START_LISTENERS)),
        node_id=parse_node_id(props.get(NODE_ID)),
        extra={k: v for k, v in props.items() if k not in known},
    )


def load_properties(path: Path) -> dict[str, str]:
    """Read a Java properties file (escapes, continuations, `=`/`:` separators) with javaproperties.

    Every key and value must be a string Kafka can carry (valid Unicode, at most 32,767 UTF-8 bytes);
    errors name the file and the line. A repeated key keeps its last value, as Java's Properties does.
    """
    props: dict[str, str] = {}
    line = 1
    try:
        text = decode_utf8(path.read_bytes())
        for entry in javaproperties.parse(text):
            if isinstance(entry, javaproperties.KeyValue):
                for part in (entry.key, entry.value):
                    try:
                        check_string(part)
                    except InputError as exc:
                        raise ConfigError(f"{path}: line {line}: key {entry.key[:100]!r}: {exc.reason}") from None
                props[entry.key] = entry.value
            line += entry.source.count("\n")
        return props
    except ConfigError:
        raise
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read properties file: {exc.strerror}") from exc
    except InputError as exc:
        raise ConfigError(f"{path}: not a valid properties file: {exc.reason}") from None
    except ValueError as exc:  # javaproperties: a bad \\u escape
        raise ConfigError(f"{path}: line {line}: not a valid properties file: {exc}") from None


def load_config(path: Path) -> AuthorizerConfig:
    """Read and parse a Kafka-style `server.properties`; errors name the file and the key."""
    try:
        return config_from_properties(load_properties(path))
    except ConfigError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise ConfigError(f"{path}: {exc}") from exc
