"""Errors raised by the authorizer package, with Kafka's error codes where Kafka has one.

Tree:
    AuthorizerError
    ├── AuthorizerNotReadyError     not loaded yet; only super users pass (Kafka: AuthorizerNotReadyException)
    ├── InvalidActionError          a non-LITERAL action pattern, ANY/UNKNOWN arguments (IllegalArgumentException)
    ├── InvalidFilterError          a filter Kafka cannot evaluate (MATCH against an UNKNOWN-pattern ACL)
    ├── ConfigError                 bad `super.users` and friends, naming the key
    ├── ImageError                  a broken replay invariant (duplicate id or content, unknown id), with offset
    └── ControllerError             a create/delete request failed as a whole, with Kafka's error code
"""

from __future__ import annotations


class AuthorizerError(Exception):
    """Base class of every authorizer error."""


class AuthorizerNotReadyError(AuthorizerError):
    """The initial load has not completed; the whole batch of actions fails."""


class InvalidActionError(AuthorizerError, ValueError):
    """An action or argument Kafka rejects with IllegalArgumentException."""


class InvalidFilterError(AuthorizerError, ValueError):
    """A filter that cannot be evaluated against a stored ACL."""


class ConfigError(AuthorizerError, ValueError):
    """A configuration value that cannot be parsed; the message names the key."""


class ImageError(AuthorizerError):
    """A record that would break the image's invariants (spec §2, §14.1)."""


class ControllerError(AuthorizerError):
    """A create/delete request rejected as a whole, carrying Kafka's error code and message."""

    def __init__(self, code: int, name: str, message: str) -> None:
        super().__init__(f"{name} ({code}): {message}")
        self.code = code
        self.error_name = name
        self.message = message
