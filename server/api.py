"""serve's routes: which handler answers which method and path, who must be authenticated, what each caller may
send, and how every failure becomes a 4xx/5xx JSON body that names the field.

A request is admitted at its head (`admit`: route, credentials, the authorization that does not depend on the
body, the body limit), before any body byte is read; `dispatch` then answers it. One `Api` per process, called
on the event loop thread by every connection (`server.http`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import msgspec

from kraftacl.api import endpoints as ep
from kraftacl.api import frames as wire_frames
from kraftacl.api.endpoints import Endpoint
from kraftacl.api.openapi import openapi_document
from kraftacl.api.wire import ErrorBody, ErrorOut
from kraftacl.authorizer.model.acls import AclOperation
from kraftacl.server import acl_history, admin, changes, decide, describe, import_api
from kraftacl.server.auth import ANONYMOUS, Authenticator, Caller
from kraftacl.server.context import ServeState
from kraftacl.server.errors import ApiFailure, BadRequest, Forbidden, Unauthenticated
from kraftacl.server.frames import FrameConnection, FrameRoute
from kraftacl.server.http_wire import Outcome, Request, Response, StreamedResponse
from kraftacl.server.json_body import Utf8Pending, utf8_failure_sliced
from kraftacl.server.metrics import CONTENT_TYPE

_ENCODE = msgspec.json.Encoder()
Check = Callable[[ServeState, Caller], None]
SMALL_BODY = 1024 * 1024  # endpoints that take one small object (a filter, one resource, an OPA input)
MAX_CALLERS = 1024  # principals whose last Caller is kept (`Api._authenticate`); beyond, the lot is forgotten


@dataclass(frozen=True, slots=True)
class Route:
    """A handler, the name metrics use for it, the auth.public.endpoints name that opens it (if any), which body
    limit applies (request, import, small, none) and the authorization decided at the head."""

    handler: Callable[..., Outcome]
    endpoint: str
    public_as: str | None = None  # "status", "metrics"; "always" for the OpenAPI document
    body: str = "request"
    check: Check | None = None


def _admin(operation: AclOperation, request_name: str, write: bool = False) -> Check:
    """Kafka's rule for its own admin APIs (spec §12): DESCRIBE or ALTER on the cluster, checked at the head."""

    def check(state: ServeState, caller: Caller) -> None:
        if write:
            if state.config.controller:
                admin.require_ready(state)
            if not state.role.electing:  # during an election the handler waits for it to settle (admin.writable)
                admin.require_writable(state)
        admin.require_ready(state)
        admin.require_cluster(state, caller, operation, request_name)

    return check


def _trusted_only(what: str) -> Check:
    """Broker principals and super users only, checked at the head."""

    def check(state: ServeState, caller: Caller) -> None:
        if caller.principal not in state.trusted:
            raise Forbidden(f"{caller.principal} is not in broker.principals, so it may not {what}")

    return check


RouteEntry = tuple[tuple[str, str], Route]


def _on(
    endpoint: Endpoint[Any, Any],
    handler: Callable[..., Outcome],
    public_as: str | None = None,
    body: str = "request",
    check: Check | None = None,
) -> RouteEntry:
    return (endpoint.method, endpoint.path), Route(handler, endpoint.name, public_as, body, check)


# Which handler answers which endpoint of the contract (`api.endpoints`), plus the two that are no JSON API; the
# body limit of each (`Api.body_limits`) and the authorization decided at its head.
ROUTES: dict[tuple[str, str], Route] = dict(
    [
        _on(ep.AUTHORIZE, decide.authorize),
        _on(ep.BY_RESOURCE_TYPE, decide.by_resource_type, body="small"),
        _on(ep.AUTHORIZED_OPERATIONS, decide.authorized_operations, body="small"),
        _on(ep.DESCRIBE_ACLS, describe.describe, body="small", check=_admin(AclOperation.DESCRIBE, "DescribeAcls")),
        _on(ep.CREATE_ACLS, admin.create, check=_admin(AclOperation.ALTER, "CreateAcls", write=True)),
        _on(ep.DELETE_ACLS, admin.delete, check=_admin(AclOperation.ALTER, "DeleteAcls", write=True)),
        _on(
            ep.IMPORT_ACLS,
            import_api.import_acls,
            body="import",
            check=_admin(AclOperation.ALTER, "ImportAcls", write=True),
        ),
        _on(ep.ACL_COUNT, admin.count, body="none"),
        _on(ep.ACL_IMAGE, describe.image, body="none", check=_admin(AclOperation.DESCRIBE, "DescribeAclImage")),
        _on(
            ep.ACL_HISTORY,
            acl_history.history,
            body="small",
            check=_admin(AclOperation.DESCRIBE, "DescribeAclHistory"),
        ),
        _on(ep.CREATE_SNAPSHOT, admin.snapshot, body="none", check=_admin(AclOperation.ALTER, "CreateSnapshot")),
        _on(ep.STATUS, admin.status, "status", body="none"),
        _on(ep.CHANGES, changes.changes, body="none", check=_trusted_only("follow the change feed")),
        (
            ("GET", ep.METRICS_PATH),
            Route(lambda state, request, caller: _metrics(state), "metrics", "metrics", body="none"),
        ),
        (
            ("GET", ep.OPENAPI_PATH),
            Route(lambda state, request, caller: _openapi(), "openapi", "always", body="none"),
        ),
    ]
)
_OPA_ROUTE = Route(decide.opa, ep.OPA.name, body="small", check=_trusted_only("use the OPA API"))
_PATHS = {path for _, path in ROUTES} | {wire_frames.PATH}
_SWITCHING = [(b"connection", b"upgrade"), (b"upgrade", wire_frames.PROTOCOL.encode())]


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
    """Admits, routes and answers; never raises (a bug becomes a logged 500 in `server.http`)."""

    def __init__(self, state: ServeState, authenticator: Authenticator) -> None:
        self.state = state
        self.authenticator = authenticator
        limits = state.config.limits
        self.body_limits = {
            "request": (limits.request_max_bytes, "request.max.bytes"),
            "import": (limits.import_max_bytes, "import.max.bytes"),
            "small": (min(SMALL_BODY, limits.request_max_bytes), "the limit of this endpoint"),
            "none": (0, "the limit of an endpoint without a body"),
        }
        self.poll_on_request = state.config.log.poll_on_request
        # principal -> the Caller last made for it (with its host): a keep-alive broker's calls share one
        self._callers: dict[str, Caller] = {}
        self.frames_route = Route(self.upgrade, "frames", body="none")
        self.frame_kinds: dict[int, FrameRoute] = {}
        for kind, endpoint in wire_frames.KINDS.items():
            route = ROUTES[(endpoint.method, endpoint.path)]
            self.frame_kinds[kind] = (endpoint.path, route, *self.body_limits[route.body])

    def admit(self, request: Request, probation: bool) -> Response | tuple[int, str]:
        """At the head: the route and the caller, or the refusal (404, 405, 401, 403, 421, 503); the body limit."""
        if self.poll_on_request and self.state.tailer is not None:
            self.state.tailer.poke()  # metadata.log.poll.on.request (serve's reader process)
        route = ROUTES.get((request.method, request.path))
        if route is None:
            if request.method == "POST" and request.path.startswith(ep.OPA_PREFIX):
                route = _OPA_ROUTE
            elif request.method == "GET" and request.path == wire_frames.PATH:
                route = self.frames_route
            else:
                return self._count("unknown", self._no_route(request))
        try:
            caller = self._authenticate(request, route)
            if probation and (caller is None or caller.principal not in self.state.trusted):
                self.state.metrics.figures.count_refused(request.listener, "reserved")
                return self._count(route.endpoint, _reserved(self.state))
            if route.check is not None and caller is not None:
                route.check(self.state, caller)
        except ApiFailure as exc:
            return self._count(route.endpoint, failure(exc))
        request.caller, request.route = caller, route
        return self.body_limits[route.body]

    def dispatch(self, request: Request) -> Outcome:
        """Answer one admitted request (an awaitable for ACL writes and heavy reads)."""
        route: Route = request.route
        try:
            outcome = route.handler(self.state, request, request.caller)
        except ApiFailure as exc:
            return self._count(route.endpoint, failure(exc))
        except msgspec.DecodeError as exc:
            return self._count(route.endpoint, validation_failure(exc))
        except Utf8Pending as exc:  # a large body's bad byte, located in slices: brokers' decisions go on meanwhile
            return self._finish(route.endpoint, self._utf8_sliced(exc))
        if isinstance(outcome, Response):
            return self._count(route.endpoint, outcome)
        if isinstance(outcome, StreamedResponse):
            self.state.metrics.figures.count_request(route.endpoint, outcome.status)
            return outcome
        return self._finish(route.endpoint, outcome)

    async def _finish(
        self, endpoint: str, outcome: Awaitable[Response | StreamedResponse]
    ) -> Response | StreamedResponse:
        try:
            response = await outcome
        except ApiFailure as exc:
            response = failure(exc)
        except msgspec.DecodeError as exc:
            response = validation_failure(exc)
        except Utf8Pending as exc:
            response = failure(await self._located(exc))
        self.state.metrics.figures.count_request(endpoint, response.status)
        return response

    async def _utf8_sliced(self, pending: Utf8Pending) -> Response:
        raise await self._located(pending)

    async def _located(self, pending: Utf8Pending) -> BadRequest:
        async with self.state.lane.slicer() as slicer:
            return await utf8_failure_sliced(pending.body, slicer)

    def upgrade(self, state: ServeState, request: Request, caller: Caller) -> Response:
        """GET /v1/frames: 101, and this connection carries decision frames from now on (`server.frames`)."""
        if request.headers.get(b"upgrade", b"").lower() != wire_frames.PROTOCOL.encode():
            raise BadRequest(f"GET {wire_frames.PATH} needs the header Upgrade: {wire_frames.PROTOCOL}", "Upgrade")
        if b"upgrade" not in request.headers.get(b"connection", b"").lower():
            raise BadRequest(f"GET {wire_frames.PATH} needs the header Connection: Upgrade", "Connection")
        trusted = caller.principal in state.trusted
        return Response(
            101,
            b"",
            headers=_SWITCHING,
            upgrade=lambda: FrameConnection(self.dispatch, self.frame_kinds, request, trusted),
        )

    def _authenticate(self, request: Request, route: Route) -> Caller | None:
        principal, offered = self.authenticator.from_header(request.headers.get(b"authorization"))
        if offered and principal is None:
            raise Unauthenticated("the bearer token is not in auth.token.file")
        principal = principal or request.principal_from_tls
        if principal is None and self.state.config.listener_anonymous(request.listener):
            principal = ANONYMOUS
        if principal is not None:
            caller = self._callers.get(principal)
            if caller is None or caller.host != request.peer_host:  # a Caller is immutable: one per principal shared
                caller = Caller(principal, request.peer_host)
                if len(self._callers) >= MAX_CALLERS:
                    self._callers.clear()
                self._callers[principal] = caller
            return caller
        if route.public_as == "always" or route.public_as in self.state.config.public_endpoints:
            return None
        raise Unauthenticated("authenticate with a bearer token (Authorization: Bearer ...) or a client certificate")

    def _no_route(self, request: Request) -> Response:
        if request.path in _PATHS or request.path.startswith(ep.OPA_PREFIX):
            only = "GET" if request.path == wire_frames.PATH else "POST"
            allowed = sorted(m for m, p in ROUTES if p == request.path) or [only]
            body = ErrorOut(ErrorBody("METHOD_NOT_ALLOWED", f"{request.method} is not allowed on {request.path}"))
            return Response(
                HTTPStatus.METHOD_NOT_ALLOWED, _ENCODE.encode(body), headers=[(b"allow", ", ".join(allowed).encode())]
            )
        body = ErrorOut(ErrorBody("NOT_FOUND", f"no endpoint {request.path} (GET /v1/openapi.json lists them)"))
        return Response(HTTPStatus.NOT_FOUND, _ENCODE.encode(body))

    def _count(self, endpoint: str, response: Response) -> Response:
        self.state.metrics.figures.count_request(endpoint, response.status)
        return response


def _reserved(state: ServeState) -> Response:
    limits = state.config.limits
    message = (
        f"serve has {limits.max_connections - limits.reserved_broker_connections} or more connections open; the "
        f"last max.connections.reserved.brokers ({limits.reserved_broker_connections}) are kept for broker "
        "principals and super users; retry later"
    )
    return Response(HTTPStatus.SERVICE_UNAVAILABLE, _ENCODE.encode(ErrorOut(ErrorBody("CONNECTION_LIMIT", message))))
