"""The client of a running `kraft-acl serve` (`--server URL`): the same questions and ACL changes as
against a log, asked over serve's HTTP API with a bearer token or a client certificate.

A `ServerClient` holds one keep-alive connection; it is used by one thread. Failures raise
`ServerError` with one line naming the URL, the HTTP status, serve's error code and the field.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.history.acl_history import AclEvent, AclHistory
from kraftacl.authorizer.inputs.validate import parse_acl
from kraftacl.authorizer.inputs.whatif import Request, acl_to_json
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.model.filters import AclBindingFilter
from kraftacl.authorizer.state.controller import NONE, ApiError, CreateResult, DeleteResult
from kraftacl.authorizer.state.gc_pause import paused_gc

TOKEN_ENV = "KRAFT_ACL_TOKEN"


class ServerError(AuthorizerError):
    """serve refused or failed a call; `status` is the HTTP status (0 when serve could not be reached)."""

    def __init__(self, message: str, status: int = 0, code: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class ServerTarget:
    """Where serve is and how to prove who we are."""

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


def _filter_json(f: AclBindingFilter) -> dict[str, Any]:
    p, e = f.pattern, f.entry
    return {
        "resource_type": p.resource_type.name,
        "resource_name": p.name,
        "pattern_type": p.pattern_type.name,
        "principal": e.principal,
        "host": e.host,
        "operation": e.operation.name,
        "permission_type": e.permission_type.name,
    }


def acl_of_json(obj: dict[str, Any]) -> tuple[str, StandardAcl]:
    """(id, ACL) of one ACL as serve's API writes it."""
    fields = dict(obj)
    acl_id = fields.pop("id")
    return str(acl_id), parse_acl(fields)


def _error(item: dict[str, Any]) -> ApiError:
    return NONE if item["error_code"] == 0 else ApiError(item["error_code"], item["error"], item.get("message"))


class ServerClient:
    """The ACL operations and decisions of one serve, over HTTP."""

    def __init__(self, target: ServerTarget) -> None:
        self.target = target
        headers = {"Authorization": f"Bearer {token}"} if (token := target.bearer()) else {}
        cert: Any = None
        if target.cert is not None:
            cert = (str(target.cert), str(target.key)) if target.key is not None else str(target.cert)
        verify: Any = str(target.cacert) if target.cacert is not None else True
        self.http = httpx.Client(base_url=target.url, headers=headers, cert=cert, verify=verify, timeout=60.0)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """One call; ServerError with serve's code, message and field on anything but 2xx."""
        try:
            response = self.http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise ServerError(f"{self.target.url}: cannot reach serve: {exc}") from exc
        try:
            payload: dict[str, Any] = response.json()
        except ValueError:
            payload = {}
        if response.status_code >= 300:
            err = payload.get("error", {})
            where = f" (field {err['field']})" if err.get("field") else ""
            message = err.get("message", response.text)
            text = f"{self.target.url}{path}: HTTP {response.status_code} {err.get('code', '')}: {message}{where}"
            raise ServerError(text, response.status_code, str(err.get("code", "")))
        return payload

    def describe(self, acl_filter: AclBindingFilter) -> list[tuple[str, StandardAcl]]:
        """ACLs matching the filter, with their ids."""
        return [
            acl_of_json(a) for a in self.call("POST", "/v1/acls/describe", {"filter": _filter_json(acl_filter)})["acls"]
        ]

    def create_acls(self, acls: list[StandardAcl]) -> list[CreateResult]:
        """CreateAcls: per-entry results, one atomic batch on serve's log."""
        answer = self.call("POST", "/v1/acls/create", {"acls": [acl_to_json(a) for a in acls]})
        return [CreateResult(_error(r), r.get("id")) for r in answer["results"]]

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[DeleteResult]:
        """DeleteAcls: per-filter results, one atomic batch on serve's log."""
        answer = self.call("POST", "/v1/acls/delete", {"filters": [_filter_json(f) for f in filters]})
        return [DeleteResult(_error(r), [acl_of_json(a) for a in r["acls"]]) for r in answer["results"]]

    def evaluate(self, request: Request, explain: bool) -> dict[str, Any]:
        """One requests.jsonl line, answered by serve, in `authorizer.inputs.whatif.evaluate`'s output form."""
        if request.kind == "describe":
            assert request.filter is not None
            found = self.describe(request.filter.to_filter())
            return {"acls": sorted((acl_to_json(a) for _, a in found), key=lambda a: tuple(a.values()))}
        assert request.principal is not None and request.host is not None and request.resource_type is not None
        ctx = {"principal": request.principal, "client_address": request.host}
        rtype = request.resource_type.name
        if request.kind == "authorized_operations":
            body = {**ctx, "resource_type": rtype, "resource_name": request.resource_name}
            return {
                "authorized_operations": self.call("POST", "/v1/authorized-operations", body)["authorized_operations"]
            }
        assert request.operation is not None
        if request.kind == "by_resource_type":
            body = {**ctx, "operation": request.operation.name, "resource_type": rtype}
            return {"result": self.call("POST", "/v1/authorize-by-resource-type", body)["result"]}
        action = {"operation": request.operation.name, "resource_type": rtype, "resource_name": request.resource_name}
        answer = self.call("POST", "/v1/authorize", {**ctx, "actions": [action], "explain": explain})
        out = {"result": answer["results"][0]}
        if explain:
            out["rule"] = answer["rules"][0]["text"]
        return out

    def acl_image(self) -> tuple[list[tuple[str, StandardAcl]], dict[str, Any]]:
        """GET /v1/acls/image: every ACL with its id at one offset, and the rest of the answer (offset, epoch,
        timestamp_ms, super_users, allow_everyone_if_no_acl_found)."""
        with paused_gc():  # a million ACLs become objects: no collection pass walks them meanwhile
            answer = self.call("GET", "/v1/acls/image")
            return [acl_of_json(a) for a in answer.pop("acls")], answer

    def acl_history(self, acl_ids: list[str]) -> AclHistory:
        """POST /v1/acls/history: when each id was added and removed, from serve's log."""
        answer = self.call("POST", "/v1/acls/history", {"ids": acl_ids})
        events: dict[str, list[AclEvent]] = {acl_id: [] for acl_id in acl_ids}
        for e in answer["events"]:
            acl = None if e.get("acl") is None else acl_of_json(e["acl"])[1]
            events[e["id"]].append(AclEvent(e["offset"], e["epoch"], e["timestamp_ms"], acl))
        return AclHistory(answer["log_start"], answer["end"], {i: tuple(found) for i, found in events.items()})

    def create_snapshot(self) -> dict[str, Any]:
        """POST /v1/snapshots: serve writes a snapshot of its current state now (path, end_offset, epoch, acls,
        deleted)."""
        return self.call("POST", "/v1/snapshots")

    def status(self) -> dict[str, Any]:
        """GET /v1/status (ServerError with status 503 while serve is still loading)."""
        return self.call("GET", "/v1/status")

    def close(self) -> None:
        """Close the connection."""
        self.http.close()
