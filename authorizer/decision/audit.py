"""Why a decision was made (super user, matching ACL, default) and Kafka's audit-log line for it (spec §5.6).

Rules are immutable values; the logger is the standard `kafka.authorizer.logger`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kraftacl.authorizer.model.acls import AclOperation, AuthorizationResult, ResourceType, StandardAcl, pascal_name

AUDIT_LOGGER = logging.getLogger("kafka.authorizer.logger")


@dataclass(frozen=True, slots=True)
class Rule:
    """The rule that decided: `kind` is SuperUser, MatchingAcl, DefaultAllow, DefaultDeny or NotReady."""

    kind: str
    acl: StandardAcl | None = None

    def __str__(self) -> str:
        if self.acl is not None:
            return f"MatchingAcl(acl={self.acl})"
        return self.kind


SUPER_USER = Rule("SuperUser")
DEFAULT_ALLOW = Rule("DefaultAllow")
DEFAULT_DENY = Rule("DefaultDeny")


@dataclass(frozen=True, slots=True)
class Decision:
    """One action's result and the rule that produced it."""

    result: AuthorizationResult
    rule: Rule


def audit_line(
    principal: str,
    decision: Decision,
    operation: AclOperation,
    host: str,
    resource_type: ResourceType,
    resource_name: str,
    request: str = "",
    ref_count: int = 1,
) -> str:
    """Kafka's audit message for one action, word for word."""
    verb = "Allowed" if decision.result is AuthorizationResult.ALLOWED else "Denied"
    return (
        f"Principal = {principal} is {verb} operation = {operation.name} from host = {host} "
        f"on resource = {pascal_name(resource_type)}:LITERAL:{resource_name} for request = {request} "
        f"with resourceRefCount = {ref_count} based on rule {decision.rule}"
    )


TRACE = 5  # Kafka logs the "not interesting" decisions at TRACE, below DEBUG


def audit_level(allowed: bool, log_if_allowed: bool, log_if_denied: bool) -> int:
    """Allowed: DEBUG when the action asks for it, else TRACE; denied: INFO when asked, else TRACE."""
    if allowed:
        return logging.DEBUG if log_if_allowed else TRACE
    return logging.INFO if log_if_denied else TRACE
