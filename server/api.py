"""serve's routes: which handler answers which method and path, who must be authenticated, and how every
failure becomes a 4xx/5xx JSON body that names the field.

One `Api` per process, called on the event loop thread by every connection (`server.http`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import msgspec

from kraftacl.api import endpoints as ep
from kraftacl.api.endpoints import Endpoint
from kraftacl.api.openapi import openapi_document
from kraftacl.api.wire import ErrorBody, ErrorOut
from kraftacl.server import acl_history, admin, changes, decide, import_api
from kraftacl.server.auth import ANONYMOUS, Authenticator, Caller
from kraftacl.server.context import ServeState
from kraftacl.server.errors import ApiFailure, Unauthenticated
from kraftacl.server.http import Request, Response
from kraftacl.server.metrics import CONTENT_TYPE

_ENCODE = msgspec.json.Encoder()
Handler = Callable[[ServeState, Request, Caller], "Response | Awaitable[Response]"]
PublicHandler = Callable[[ServeState, Request, "Caller | None"], Response]


@dataclass(frozen=True, slots=True)
class Route:
    """A handler, the name metrics use for it, and the auth.public.endpoints name that opens it (if any)."""

    handler: Callable[..., Response | Awaitable[Response]]
    endpoint: str
    public_as: str | None = None  # "status", "metrics"; "always" for the OpenAPI document


RouteEntry = tuple[tuple[str, str], Route]


def _on(
    endpoint: Endpoint[Any, Any], handler: Callable[..., Response | Awaitable[Response]], public_as: str | None = None
) -> RouteEntry:
    return (endpoint.method, endpoint.path), Route(handler, endpoint.name, public_as)


# Which handler answers which endpoint of the contract (`api.endpoints`), plus the two that are no JSON API.
ROUTES: dict[tuple[str, str], Route] = dict(
    [
        _on(ep.AUTHORIZE, decide.authorize),
        _on(ep.BY_RESOURCE_TYPE, decide.by_resource_type),
        _on(ep.AUTHORIZED_OPERATIONS, decide.authorized_operations),
        _on(ep.DESCRIBE_ACLS, admin.describe),
        _on(ep.CREATE_ACLS, admin.create),
        _on(ep.DELETE_ACLS, admin.delete),
        _on(ep.IMPORT_ACLS, import_api.import_acls),
        _on(ep.ACL_COUNT, admin.count),
        _on(ep.ACL_IMAGE, admin.image),
        _on(ep.ACL_HISTORY, acl_history.history),
        _on(ep.CREATE_SNAPSHOT, admin.snapshot),
        _on(ep.STATUS, admin.status, "status"),
        _on(ep.CHANGES, changes.changes),
        (("GET", ep.METRICS_PATH), Route(lambda state, request, caller: _metrics(state), "metrics", "metrics")),
        (("GET", ep.OPENAPI_PATH), Route(lambda state, request, caller: _openapi(), "openapi", "always")),
    ]
)
_OPA_ROUTE = Route(decide.opa, ep.OPA.name)
_PATHS = {path for _, path in ROUTES}


def _metrics(state: ServeState) -> Response:
    return Response(200, state.metrics.exposition(), CONTENT_TYPE)


_OPENAPI: bytes | None = None


def _openapi() -> Response:
    global _OPENAPI
    if _OPENAPI is None:
        _OPENAPI = _ENCODE.encode(openapi_document())
    return Response(200, _OPENAPI)


def failure(exc: ApiFailure) -> Response:
    """The JSON body of a failed call."""
    headers = [(b"www-authenticate", b'Bearer realm="kraft-acl"')] if exc.status == 401 else []
    return Response(exc.status, _ENCODE.encode(ErrorOut(ErrorBody(exc.code, exc.message, exc.field))), headers=headers)


def validation_failure(exc: msgspec.DecodeError) -> Response:
    """msgspec names the path (`... - at `$.actions[0].operation``; the root when none); split message and field.

    A ValidationError (a subclass of DecodeError) is well-formed JSON with a wrong field; anything
    else is malformed JSON.
    """
    text = str(exc)
    message, sep, where = text.rpartition(" - at `")
    if not sep:
        message, where = text, "$`"
    if not isinstance(exc, msgspec.ValidationError):
        return Response(400, _ENCODE.encode(ErrorOut(ErrorBody("INVALID_REQUEST", f"malformed JSON: {message}"))))
    return Response(400, _ENCODE.encode(ErrorOut(ErrorBody("INVALID_REQUEST", message, where.rstrip("`")))))


class Api:
    """Authenticates, routes and answers; never raises (a bug becomes a logged 500 in `server.http`)."""

    def __init__(self, state: ServeState, authenticator: Authenticator) -> None:
        self.state = state
        self.authenticator = authenticator

    def dispatch(self, request: Request) -> Response | Awaitable[Response]:
        """Answer one request (an awaitable for ACL writes)."""
        route = ROUTES.get((request.method, request.path))
        if route is None:
            if request.method == "POST" and request.path.startswith(ep.OPA_PREFIX):
                route = _OPA_ROUTE
            else:
                return self._count("unknown", self._no_route(request))
        try:
            caller = self._authenticate(request, route)
            outcome = route.handler(self.state, request, caller)
        except ApiFailure as exc:
            return self._count(route.endpoint, failure(exc))
        except msgspec.DecodeError as exc:
            return self._count(route.endpoint, validation_failure(exc))
        if isinstance(outcome, Response):
            return self._count(route.endpoint, outcome)
        return self._finish(route.endpoint, outcome)

    async def _finish(self, endpoint: str, outcome: Awaitable[Response]) -> Response:
        try:
            response = await outcome
        except ApiFailure as exc:
            response = failure(exc)
        except msgspec.DecodeError as exc:
            response = validation_failure(exc)
        return self._count(endpoint, response)

    def _authenticate(self, request: Request, route: Route) -> Caller | None:
        principal, offered = self.authenticator.from_header(request.headers.get(b"authorization"))
        if offered and principal is None:
            raise Unauthenticated("the bearer token is not in auth.token.file")
        principal = principal or request.principal_from_tls
        if principal is None and self.state.config.listener_anonymous(request.listener):
            principal = ANONYMOUS
        if principal is not None:
            return Caller(principal, request.peer_host)
        if route.public_as == "always" or route.public_as in self.state.config.public_endpoints:
            return None
        raise Unauthenticated("authenticate with a bearer token (Authorization: Bearer ...) or a client certificate")

    def _no_route(self, request: Request) -> Response:
        if request.path in _PATHS or request.path.startswith(ep.OPA_PREFIX):
            allowed = sorted(m for m, p in ROUTES if p == request.path) or ["POST"]
            body = ErrorOut(ErrorBody("METHOD_NOT_ALLOWED", f"{request.method} is not allowed on {request.path}"))
            return Response(
                HTTPStatus.METHOD_NOT_ALLOWED, _ENCODE.encode(body), headers=[(b"allow", ", ".join(allowed).encode())]
            )
        body = ErrorOut(ErrorBody("NOT_FOUND", f"no endpoint {request.path} (GET /v1/openapi.json lists them)"))
        return Response(HTTPStatus.NOT_FOUND, _ENCODE.encode(body))

    def _count(self, endpoint: str, response: Response) -> Response:
        self.state.metrics.figures.count_request(endpoint, response.status)
        return response
