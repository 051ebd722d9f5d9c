"""Errors a serve handler raises to answer a 4xx/5xx; each carries the HTTP status, a code and the field at fault.

Tree:
    ApiFailure
    ├── BadRequest          400: a field is missing, malformed or out of range (the field is named)
    ├── Unauthenticated     401: no or unknown credentials
    ├── Forbidden           403: the caller may not do this (the ACLs, or not a broker principal)
    ├── NotController       421: an ACL write sent to a broker-role node
    ├── NotReady            503: AUTHORIZER_NOT_READY (KIP-801), before the initial load completes
    └── LogUnavailable      503: an ACL write could not reach the metadata log (nothing was written)
"""

from __future__ import annotations


class ApiFailure(Exception):
    """An answer other than 2xx; `code` is Kafka's error name where Kafka has one."""

    status = 500
    code = "UNKNOWN_SERVER_ERROR"

    def __init__(self, message: str, field: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        if code is not None:
            self.code = code


class BadRequest(ApiFailure):
    """400: the request names a field that is wrong."""

    status = 400
    code = "INVALID_REQUEST"


class Unauthenticated(ApiFailure):
    """401: credentials are missing or unknown."""

    status = 401
    code = "UNAUTHENTICATED"


class Forbidden(ApiFailure):
    """403: the caller is authenticated but not allowed."""

    status = 403
    code = "AUTHORIZATION_FAILED"


class NotController(ApiFailure):
    """421: a broker-role node does not write the log."""

    status = 421
    code = "NOT_CONTROLLER"


class NotReady(ApiFailure):
    """503: the initial load has not completed (only super users are answered)."""

    status = 503
    code = "AUTHORIZER_NOT_READY"


class LogUnavailable(ApiFailure):
    """503: the log could not be read or written; the request changed nothing."""

    status = 503
    code = "LOG_UNAVAILABLE"
