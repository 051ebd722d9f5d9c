"""The client of a running `kraft-acl serve` (`--server URL`): the same questions and ACL changes as
against a log, asked over serve's HTTP API with a bearer token or a client certificate.

A `ServerClient` holds keep-alive connections; it is used by one thread. `--server` may list several serves
(comma-separated, e.g. both controllers of a cluster): a call goes to the one that answered last and moves on to the
next when one is unreachable, loading (503) or not the active controller (421), as the broker plugin does. Failures
raise `ServerError` with one line naming the URL, the HTTP status, serve's error code and the field. Every request
and answer is a Struct of the contract (`api.wire`), sent to the endpoint `api.endpoints` names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec

from kraftacl.api import endpoints as ep
from kraftacl.api.convert import acl_in, filter_in, stored_acl
from kraftacl.api.endpoints import Endpoint, In, Out
from kraftacl.api.wire import (
    ActionIn,
    AuthorizedOperationsIn,
    AuthorizeIn,
    ByResourceTypeIn,
    CreateIn,
    DeleteIn,
    DescribeIn,
    ErrorBody,
    ErrorOut,
    HistoryIn,
    ImageOut,
    SnapshotOut,
    StatusOut,
)
from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.history.acl_history import AclEvent, AclHistory
from kraftacl.authorizer.inputs.whatif import Request, acl_to_json
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.model.filters import AclBindingFilter
from kraftacl.authorizer.state.controller import NONE, ApiError, CreateResult, DeleteResult
from kraftacl.authorizer.state.gc_pause import paused_gc

TOKEN_ENV = "KRAFT_ACL_TOKEN"
_ENCODE = msgspec.json.Encoder()


class ServerError(AuthorizerError):
    """serve refused or failed a call; `status` is the HTTP status (0 when serve could not be reached)."""

    def __init__(self, message: str, status: int = 0, code: str = "", field: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.field = field  # the request field serve named, if any


@dataclass(frozen=True)
class ServerTarget:
    """Where serve is (one URL, or several comma-separated) and how to prove who we are."""

    url: str
    token: str | None = None
    token_file: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    cacert: Path | None = None

    def bearer(self) -> str | None:
        """The token from --token, --token-file or the environment, in that order."""
        if self.token:
            return self.token
        if self.token_file is not None:
            return read_token_file(self.token_file)
        return os.environ.get(TOKEN_ENV) or None

    @property
    def urls(self) -> list[str]:
        """Every URL of `url`, in order."""
        return [u.strip().rstrip("/") for u in self.url.split(",") if u.strip()]

    def connect(self) -> ServerClient:
        """A client (nothing is sent until the first call)."""
        return ServerClient(self)


class TokenFileError(ServerError):
    """A token file that cannot be read or holds no token: the caller's input, not serve's answer."""


def read_token_file(path: Path) -> str:
    """The token in a token file: its first line that is not blank or a `#` comment, as the broker plugin reads
    `kraft.acl.token.file`; TokenFileError when the file cannot be read or holds no such line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason})"
        raise TokenFileError(f"--token-file {path}: {reason}") from exc
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    raise TokenFileError(f"--token-file {path}: holds no token (every line is blank or a # comment)")


class ServerClient:
    """The ACL operations and decisions of one serve, over HTTP: every request and answer a Struct of the contract."""

    def __init__(self, target: ServerTarget) -> None:
        self.target = target
        headers = {"Authorization": f"Bearer {token}"} if (token := target.bearer()) else {}
        headers["Content-Type"] = "application/json"
        cert: Any = None
        if target.cert is not None:
            cert = (str(target.cert), str(target.key)) if target.key is not None else str(target.cert)
        verify: Any = str(target.cacert) if target.cacert is not None else True
        self.http = httpx.Client(headers=headers, cert=cert, verify=verify, timeout=60.0)
        self.urls = target.urls or [target.url]
        self._current = 0  # the serve that answered last
        self.last_offset: int | None = None  # the offset an ACL write answered (a decision's min_offset)

    def call(self, endpoint: Endpoint[In, Out], body: In | None = None, query: msgspec.Struct | None = None) -> Out:
        """One call, to the serve that answered last, then the next ones (a serve unreachable, loading or not the
        controller is passed over); ServerError with serve's code, message and field when none answers 2xx, or on
        an answer that is not the endpoint's response Struct."""
        content = None if body is None else _ENCODE.encode(body)
        params = None if query is None else {k: v for k, v in msgspec.structs.asdict(query).items() if v is not None}
        error: ServerError | None = None
        for step in range(len(self.urls)):
            index = (self._current + step) % len(self.urls)
            try:
                answer = self._call(self.urls[index], endpoint, content, params)
            except ServerError as exc:
                error = exc
                if exc.status in (0, 421, 503):
                    continue
                raise
            self._current = index
            return answer
        assert error is not None
        raise error

    def _call(self, url: str, endpoint: Endpoint[In, Out], content: bytes | None, params: dict[str, Any] | None) -> Out:
        where = f"{url}{endpoint.path}"
        try:
            response = self.http.request(endpoint.method, where, content=content, params=params)
        except httpx.HTTPError as exc:
            raise ServerError(f"{url}: cannot reach serve: {exc}") from exc
        if response.status_code >= 300:
            raise _refused(where, response)
        try:
            return msgspec.json.decode(response.content, type=endpoint.response)
        except msgspec.DecodeError as exc:
            raise ServerError(f"{where}: serve's answer is not a {endpoint.response.__name__}: {exc}", 200) from exc

    def describe(
        self, acl_filter: AclBindingFilter, min_offset: int | None = None, consistent: bool = True
    ) -> list[tuple[str, StandardAcl]]:
        """ACLs matching the filter, with their ids, from a state holding every write acknowledged before the call
        (`consistent`; with `min_offset`, also once serve has applied that offset)."""
        wanted = DescribeIn(filter_in(acl_filter), min_offset=min_offset, consistent=consistent)
        try:
            described = self.call(ep.DESCRIBE_ACLS, wanted)
        except ServerError as exc:  # a serve before API 1.6.0: "Object contains unknown field `consistent`"
            if not consistent or exc.status != 400 or "`consistent`" not in str(exc):
                raise
            described = self.call(ep.DESCRIBE_ACLS, DescribeIn(filter_in(acl_filter), min_offset=min_offset))
        return [stored_acl(a) for a in described.acls]

    def create_acls(self, acls: list[StandardAcl]) -> list[CreateResult]:
        """CreateAcls: per-entry results, one atomic batch on serve's log."""
        answer = self.call(ep.CREATE_ACLS, CreateIn([acl_in(a) for a in acls]))
        self.last_offset = answer.offset
        return [CreateResult(_error(r.error_code, r.error, r.message), r.id) for r in answer.results]

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[DeleteResult]:
        """DeleteAcls: per-filter results, one atomic batch on serve's log."""
        answer = self.call(ep.DELETE_ACLS, DeleteIn([filter_in(f) for f in filters]))
        self.last_offset = answer.offset
        return [
            DeleteResult(_error(r.error_code, r.error, r.message), [stored_acl(a) for a in r.acls])
            for r in answer.results
        ]

    def evaluate(self, request: Request, explain: bool, min_offset: int | None = None) -> dict[str, Any]:
        """One requests.jsonl line, answered by serve, in `authorizer.inputs.whatif.evaluate`'s output form; with
        `min_offset`, from a state that has applied it (read-your-writes)."""
        if request.kind == "describe":
            assert request.filter is not None
            found = self.describe(request.filter.to_filter(), min_offset)
            return {"acls": sorted((acl_to_json(a) for _, a in found), key=lambda a: tuple(a.values()))}
        assert request.principal is not None and request.host is not None and request.resource_type is not None
        who, rtype = (request.principal, request.host), request.resource_type.name
        if request.kind == "authorized_operations":
            assert request.resource_name is not None
            ops = self.call(
                ep.AUTHORIZED_OPERATIONS,
                AuthorizedOperationsIn(*who, rtype, request.resource_name, min_offset=min_offset),
            )
            return {"authorized_operations": ops.authorized_operations}
        assert request.operation is not None
        if request.kind == "by_resource_type":
            answer = self.call(
                ep.BY_RESOURCE_TYPE, ByResourceTypeIn(*who, request.operation.name, rtype, min_offset=min_offset)
            )
            return {"result": answer.result}
        assert request.resource_name is not None
        action = ActionIn(request.operation.name, rtype, request.resource_name)
        decided = self.call(ep.AUTHORIZE, AuthorizeIn(*who, [action], explain=explain, min_offset=min_offset))
        out = {"result": decided.results[0]}
        if explain:
            if not decided.rules:
                raise ServerError(
                    f"{self.urls[self._current]}{ep.AUTHORIZE.path}: serve sent no rule for an explain request"
                )
            out["rule"] = decided.rules[0].text
        return out

    def acl_image(self) -> tuple[list[tuple[str, StandardAcl]], ImageOut]:
        """GET /v1/acls/image: every ACL with its id at one offset, and the rest of the answer (offset, epoch,
        timestamp_ms, super_users, allow_everyone_if_no_acl_found)."""
        with paused_gc():  # a million ACLs become objects: no collection pass walks them meanwhile
            answer = self.call(ep.ACL_IMAGE)
            return [stored_acl(a) for a in answer.acls], answer

    def acl_history(self, acl_ids: list[str]) -> AclHistory:
        """POST /v1/acls/history: when each id was added and removed, from serve's log."""
        answer = self.call(ep.ACL_HISTORY, HistoryIn(acl_ids))
        events: dict[str, list[AclEvent]] = {acl_id: [] for acl_id in acl_ids}
        for e in answer.events:
            acl = None if e.acl is None else stored_acl(e.acl)[1]
            events[e.id].append(AclEvent(e.offset, e.epoch, e.timestamp_ms, acl))
        return AclHistory(answer.log_start, answer.end, {i: tuple(found) for i, found in events.items()})

    def create_snapshot(self) -> SnapshotOut:
        """POST /v1/snapshots: serve writes a snapshot of its current state now."""
        return self.call(ep.CREATE_SNAPSHOT)

    def status(self) -> StatusOut:
        """GET /v1/status (ServerError with status 503 while serve is still loading)."""
        return self.call(ep.STATUS)

    def close(self) -> None:
        """Close the connection."""
        self.http.close()


def _error(code: int, name: str, message: str | None) -> ApiError:
    return NONE if code == 0 else ApiError(code, name, message)


def _refused(where: str, response: httpx.Response) -> ServerError:
    """serve's error body (code, message, field) as one line; the raw text when the body is no ErrorOut."""
    try:
        err: ErrorBody | None = msgspec.json.decode(response.content, type=ErrorOut).error
    except msgspec.DecodeError:
        err = None
    if err is None:
        text = f"{where}: HTTP {response.status_code} : {response.text}"
        return ServerError(text, response.status_code)
    field = f" (field {err.field})" if err.field else ""
    text = f"{where}: HTTP {response.status_code} {err.code}: {err.message}{field}"
    return ServerError(text, response.status_code, err.code, err.field or "")
