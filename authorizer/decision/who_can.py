"""Who may do one operation on one resource, and why: every principal and client host the resource's ACLs name,
each decided by the StandardAuthorizer itself, plus super users and everyone else.

Pure functions; each call pins the authorizer's current index once, so its answer is one batch
boundary of the log even while the authorizer is being updated.

How it stays exact: a decision for principal P from host H depends only on the resource's
candidate ACLs (spec §5.2) whose principal is P or `User:*` and whose host is H or `*`. So the
principals worth naming are those of the candidate ACLs (plus the super users), the hosts worth
naming are the candidates' specific hosts, and every other principal (or host) decides exactly
like a principal (or host) that no ACL names. Each (principal, host) is then asked of
`StandardAuthorizer.explain` (with such a "nobody" principal or host for "everyone else"), so the
rule printed is the one Kafka's audit log would name. A host row is kept only where its decision or
the ACLs that apply there differ from the principal's "any other host" row. Candidate ACLs no request can ever match are
listed apart: a principal without a colon (README divergences) and a host that is not an IP
address in Java's `getHostAddress()` form (`::1`, host names: spec §5.3.2).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from kraftacl.authorizer.decision.audit import SUPER_USER, Decision
from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.errors import AuthorizerNotReadyError, InvalidActionError
from kraftacl.authorizer.model.acls import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    AclOperation,
    AuthorizationResult,
    ResourceType,
    StandardAcl,
)
from kraftacl.authorizer.model.hosts import java_host_address
from kraftacl.authorizer.model.operations import ALLOW_TEST, DENY_TEST, grant_bit

_FILTER_TYPES = (ResourceType.ANY, ResourceType.UNKNOWN)
_FILTER_OPERATIONS = (AclOperation.ANY, AclOperation.UNKNOWN)


@dataclass(frozen=True, slots=True)
class WhoCanEntry:
    """One decision: `principal` (None: any principal not named in another entry) from `host` (None: any
    client address not named in another entry of this principal)."""

    principal: str | None
    host: str | None
    decision: Decision
    acls: tuple[StandardAcl, ...]  # the candidate ACLs that apply to this principal, host and operation

    @property
    def allowed(self) -> bool:
        """True when the decision is ALLOWED."""
        return self.decision.result is AuthorizationResult.ALLOWED


@dataclass(frozen=True, slots=True)
class WhoCan:
    """The answer for one (operation, resource type, literal name)."""

    operation: AclOperation
    resource_type: ResourceType
    name: str
    entries: tuple[WhoCanEntry, ...]
    unmatched: tuple[StandardAcl, ...]  # candidate ACLs no request can match (see the module docstring)
    covered: bool  # an ACL of this type covers the name, so allow.everyone.if.no.acl.found does not apply


def who_can(authorizer: StandardAuthorizer, operation: AclOperation, resource_type: ResourceType, name: str) -> WhoCan:
    """Every principal and host the ACLs on `resource_type:name` name, super users and everyone else, decided."""
    if resource_type in _FILTER_TYPES:
        raise InvalidActionError(f"who-can needs a concrete resource type, not {resource_type.name}")
    if operation in _FILTER_OPERATIONS:
        raise InvalidActionError(f"who-can needs a concrete operation, not {operation.name}")
    if not authorizer.ready:
        raise AuthorizerNotReadyError("the authorizer has not completed its initial load")
    pinned = StandardAuthorizer(authorizer.config)
    pinned.publish(authorizer.index)
    pinned.complete_initial_load()
    tindex = pinned.index.types[resource_type]
    candidates = list(tindex.candidates(name)) if tindex is not None else []
    reachable = [acl for acl in candidates if _reachable(acl)]
    unmatched = tuple(acl for acl in candidates if not _reachable(acl))
    action = Action(operation, resource_type, name, log_if_allowed=False, log_if_denied=False)
    asker = _Asker(pinned, action, reachable, {acl.host for acl in candidates})
    super_users = authorizer.config.super_users
    named = sorted({acl.principal for acl in reachable if acl.principal != WILDCARD_PRINCIPAL} | super_users)
    entries: list[WhoCanEntry] = []
    for principal in named:
        if principal in super_users:
            entries.append(WhoCanEntry(principal, None, Decision(AuthorizationResult.ALLOWED, SUPER_USER), ()))
        else:
            entries.extend(asker.rows(principal, principal))
    nobody = _fresh("User:who-can-nobody", {acl.principal for acl in candidates} | super_users)
    entries.extend(asker.rows(None, nobody))
    return WhoCan(operation, resource_type, name, tuple(entries), unmatched, tindex is not None and bool(candidates))


class _Asker:
    """Asks the pinned authorizer about one action for principals and their hosts."""

    def __init__(
        self, authorizer: StandardAuthorizer, action: Action, reachable: list[StandardAcl], taken_hosts: set[str]
    ) -> None:
        self.authorizer = authorizer
        self.action = action
        self.reachable = reachable
        self.no_host = _fresh("who-can-no-host", taken_hosts)

    def rows(self, principal: str | None, asked_as: str) -> list[WhoCanEntry]:
        """Specific-host rows whose decision or applying ACLs differ from the "any other host" row, then that row."""
        mine = (asked_as, WILDCARD_PRINCIPAL)
        hosts = sorted({acl.host for acl in self.reachable if acl.principal in mine and acl.host != WILDCARD_HOST})
        other = self._entry(principal, None, asked_as, self.no_host)
        specific = [self._entry(principal, host, asked_as, host) for host in hosts]
        differ = [e for e in specific if e.decision != other.decision or set(e.acls) != set(other.acls)]
        return [*differ, other]

    def _entry(self, principal: str | None, host: str | None, asked_as: str, asked_from: str) -> WhoCanEntry:
        decision = self.authorizer.explain(RequestContext(asked_as, asked_from), self.action)
        return WhoCanEntry(principal, host, decision, tuple(_applying(self.reachable, asked_as, host, self.action)))


def _applying(acls: Iterable[StandardAcl], principal: str, host: str | None, action: Action) -> Iterable[StandardAcl]:
    """The ACLs that vote on `action` for this principal from this host (None: a host no ACL names)."""
    test = ALLOW_TEST[action.operation] | DENY_TEST[action.operation]
    for acl in acls:
        if acl.principal not in (principal, WILDCARD_PRINCIPAL):
            continue
        if acl.host != WILDCARD_HOST and acl.host != host:
            continue
        if grant_bit(acl.operation, acl.permission_type) & test:
            yield acl


def _reachable(acl: StandardAcl) -> bool:
    """Can any request match this ACL's principal and host?"""
    return ":" in acl.principal and (acl.host == WILDCARD_HOST or _is_java_address(acl.host))


def _is_java_address(host: str) -> bool:
    """True for an IP address written exactly as Java's `InetAddress.getHostAddress()` writes it."""
    try:
        ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return False
    return java_host_address(host) == host


def _fresh(base: str, taken: set[str]) -> str:
    """`base`, lengthened until no ACL or super user uses it: a principal or host that nothing names."""
    while base in taken:
        base += "+"
    return base
