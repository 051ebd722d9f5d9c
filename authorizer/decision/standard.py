"""Kafka's StandardAuthorizer (KIP-801) deciding against an immutable AclIndex, exactly as spec §4-§8 and §13 say.

Thread safety: any number of threads may call the read methods while one thread publishes new
state; each call reads the current index reference once, so it sees one batch boundary of the log.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from kraftacl.authorizer.decision.audit import (
    AUDIT_LOGGER,
    DEFAULT_ALLOW,
    DEFAULT_DENY,
    SUPER_USER,
    Decision,
    Rule,
    audit_level,
    audit_line,
)
from kraftacl.authorizer.decision.by_resource_type import authorize_by_resource_type_scan
from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.walk_order import decider, walk_order
from kraftacl.authorizer.errors import AuthorizerNotReadyError, InvalidActionError
from kraftacl.authorizer.index.acl_index import AclId, AclIndex, TypeIndex
from kraftacl.authorizer.index.bulk_rows import DECISION_CODES
from kraftacl.authorizer.index.native_rows import decide_code, decide_many, grant_mask
from kraftacl.authorizer.model.acls import (
    WILDCARD_PRINCIPAL,
    AclOperation,
    AclPermissionType,
    AuthorizationResult,
    PatternType,
    ResourceType,
    StandardAcl,
    kafka_order,
)
from kraftacl.authorizer.model.filters import AclBindingFilter
from kraftacl.authorizer.model.hosts import java_host_address
from kraftacl.authorizer.model.operations import (
    ALLOW_TEST,
    DENY_TEST,
    SUPPORTED_OPERATIONS,
    grant_bit,
    operations_field,
    to_32bit_field,
)

ALLOWED = AuthorizationResult.ALLOWED
DENIED = AuthorizationResult.DENIED
# How a decision was reached (StandardAuthorizer.authorize_at's codes; serve's metrics label them).
BY_ACL_DENY, BY_ACL_ALLOW, BY_DEFAULT_DENY, BY_DEFAULT_ALLOW, BY_SUPER_USER = DECISION_CODES
RESULT_OF = (DENIED, ALLOWED, DENIED, ALLOWED, ALLOWED)
RULE_KIND_OF = ("MatchingAcl", "MatchingAcl", "DefaultDeny", "DefaultAllow", "SuperUser")
_PROBE_NAME = "hardcode"  # Kafka's authorizeByResourceType probe resource (spec §8 step 2)


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Who is asking and from where; `host` is already in Java's `getHostAddress()` text form."""

    principal: str
    host: str
    listener: str = ""
    request: str = ""

    @staticmethod
    def of(principal: str, client_address: str, listener: str = "", request: str = "") -> RequestContext:
        """Build from a `Type:name` principal and an IP address in any text form."""
        return RequestContext(principal, java_host_address(client_address), listener, request)


@dataclass(frozen=True, slots=True)
class Action:
    """One operation on one resource; only LITERAL patterns may be authorized (spec §5.1)."""

    operation: AclOperation
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType = PatternType.LITERAL
    ref_count: int = 1
    log_if_allowed: bool = True
    log_if_denied: bool = True


class StandardAuthorizer:
    """Decides like Kafka's StandardAuthorizer; fed ACL state from outside (snapshot loads and batch deltas)."""

    def __init__(self, config: AuthorizerConfig | None = None) -> None:
        self.config = config or AuthorizerConfig()
        self._super_users = self.config.super_users
        self._default = ALLOWED if self.config.allow_everyone_if_no_acl_found else DENIED
        self._index = AclIndex.empty()
        self._state: tuple[AclIndex, int] = (self._index, -1)  # the index and the last log offset it holds
        self._loaded = False
        self._initial_load: Future[None] = Future()
        self._write_lock = threading.Lock()

    # ---- lifecycle (spec §4) -------------------------------------------------------------------
    def start(self, listeners: Iterable[str]) -> dict[str, Future[None]]:
        """One future per listener: early-start listeners are ready now, the rest after the initial load."""
        out: dict[str, Future[None]] = {}
        for name in listeners:
            if name in self.config.early_start_listeners:
                done: Future[None] = Future()
                done.set_result(None)
                out[name] = done
            else:
                out[name] = self._initial_load
        return out

    def complete_initial_load(self, error: BaseException | None = None) -> None:
        """Mark the initial load done (or failed); from now on everyone is authorized by the ACLs."""
        if error is not None:
            if not self._initial_load.done():
                self._initial_load.set_exception(error)
            return
        self._loaded = True
        if not self._initial_load.done():
            self._initial_load.set_result(None)

    @property
    def ready(self) -> bool:
        """True once the initial load has completed."""
        return self._loaded

    def close(self) -> None:
        """Fail the initial-load future if it is still pending, as Kafka does."""
        self.complete_initial_load(TimeoutError("The authorizer was closed before the initial load could complete."))

    # ---- state updates (the only writers) -----------------------------------------------------
    def load_snapshot(self, acls: Mapping[AclId, StandardAcl] | Iterable[tuple[AclId, StandardAcl]]) -> None:
        """Atomically replace every ACL (Kafka's `loadSnapshot`); readers see the old or the new set."""
        items = acls.items() if isinstance(acls, Mapping) else acls
        fresh = AclIndex.build(items)
        with self._write_lock:
            self._index = fresh
            self._state = (fresh, -1)

    def apply_changes(self, removed: Iterable[AclId], added: Iterable[tuple[AclId, StandardAcl]]) -> None:
        """Apply one batch's net changes atomically: the new index is built aside, then swapped in."""
        with self._write_lock:
            self._index = self._index.apply(removed, added)
            self._state = (self._index, -1)

    def publish(self, index: AclIndex, last_offset: int = -1) -> None:
        """Swap in an index built elsewhere (the replayer's publisher), with the last log offset it holds."""
        with self._write_lock:
            self._index = index
            self._state = (index, last_offset)

    def state(self) -> tuple[AclIndex, int]:
        """The current index and the last log offset applied to it, read together (one reference)."""
        return self._state

    @property
    def index(self) -> AclIndex:
        """The current immutable index."""
        return self._index

    # ---- decisions ------------------------------------------------------------------------------
    def authorize(self, ctx: RequestContext, actions: Sequence[Action]) -> list[AuthorizationResult]:
        """Kafka's `authorize`: one result per action, in order, all against the same state."""
        return self.authorize_at(self._index, ctx, actions)[0]

    def authorize_at(
        self,
        index: AclIndex,
        ctx: RequestContext,
        actions: Sequence[Action],
        explain: bool = False,
        may_audit: Callable[[Action], bool] | None = None,
    ) -> tuple[list[AuthorizationResult], list[int], list[Rule] | None]:
        """`authorize` against a given index (one read of `state()`): results, their BY_* codes, and each
        action's rule when `explain` is set; an audit line the logger wants is written only when `may_audit` (if
        given) says so for its action (a budget of lines).

        Raises InvalidActionError for a non-LITERAL action and AuthorizerNotReadyError before the
        initial load (super users excepted), as Kafka does, before deciding anything.
        """
        for action in actions:
            if action.pattern_type != PatternType.LITERAL:
                raise InvalidActionError(f"Only literal resources are supported. Got: {action.pattern_type.name}")
        superuser = ctx.principal in self._super_users
        if not superuser and not self._loaded:
            raise AuthorizerNotReadyError(f"the authorizer has not completed its initial load ({ctx.principal})")
        results = []
        codes = []
        rules: list[Rule] | None = [] if explain else None
        for action in actions:
            if superuser:
                code = BY_SUPER_USER
            else:
                code = self._decide_code(
                    index, ctx.principal, ctx.host, action.operation, action.resource_type, action.resource_name
                )
            result = RESULT_OF[code]
            if rules is not None:
                rules.append(SUPER_USER if superuser else self._rule(index, ctx, action, result))
            self._maybe_audit(index, ctx, action, result, superuser, may_audit)
            results.append(result)
            codes.append(code)
        return results, codes, rules

    def decide_codes(
        self, index: AclIndex, ctx: RequestContext, ops: list[int], rtypes: list[int], names: list[str]
    ) -> list[int]:
        """The BY_* codes of many LITERAL actions against one index, with no audit logging (the caller
        audits with `maybe_audit`); AuthorizerNotReadyError before the initial load, super users excepted."""
        if ctx.principal in self._super_users:
            return [BY_SUPER_USER] * len(ops)
        if not self._loaded:
            raise AuthorizerNotReadyError(f"the authorizer has not completed its initial load ({ctx.principal})")
        codes: list[int] = decide_many(
            index.types, ctx.principal, ctx.host, ops, rtypes, names, DENY_TEST, ALLOW_TEST, self._default is ALLOWED
        )
        return codes

    def maybe_audit(self, index: AclIndex, ctx: RequestContext, action: Action, result: AuthorizationResult) -> None:
        """Kafka's audit line for one decided action, at its level (`authorize` does this for every action)."""
        self._maybe_audit(index, ctx, action, result, ctx.principal in self._super_users)

    def authorize_one(
        self, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> AuthorizationResult:
        """The hot path: one LITERAL action, no audit logging."""
        if ctx.principal in self._super_users:
            return ALLOWED
        if not self._loaded:
            raise AuthorizerNotReadyError(f"the authorizer has not completed its initial load ({ctx.principal})")
        return self._decide(self._index, ctx.principal, ctx.host, operation, resource_type, name)

    def _decide(
        self, index: AclIndex, principal: str, host: str, op: int, rtype: int, name: str
    ) -> AuthorizationResult:
        return RESULT_OF[self._decide_code(index, principal, host, op, rtype, name)]

    def _decide_code(self, index: AclIndex, principal: str, host: str, op: int, rtype: int, name: str) -> int:
        """The decision as one of the BY_* codes: which rule kind decided, and so the result."""
        tindex = index.types[rtype]
        if tindex is None:
            return BY_DEFAULT_ALLOW if self._default is ALLOWED else BY_DEFAULT_DENY
        code: int = decide_code(tindex, principal, host, op, name, DENY_TEST, ALLOW_TEST, self._default is ALLOWED)
        return code

    def explain(self, ctx: RequestContext, action: Action) -> Decision:
        """The decision and the rule behind it (super user, the matching ACL, or the default)."""
        if action.pattern_type != PatternType.LITERAL:
            raise InvalidActionError(f"Only literal resources are supported. Got: {action.pattern_type.name}")
        if ctx.principal in self._super_users:
            return Decision(ALLOWED, SUPER_USER)
        if not self._loaded:
            raise AuthorizerNotReadyError(f"the authorizer has not completed its initial load ({ctx.principal})")
        index = self._index
        result = self._decide(
            index, ctx.principal, ctx.host, action.operation, action.resource_type, action.resource_name
        )
        return Decision(result, self._rule(index, ctx, action, result))

    def rule_text(self, index: AclIndex, ctx: RequestContext, action: Action, code: int) -> str:
        """Kafka's audit-log words for the rule of an action already decided against `index` with this BY_* code
        (the matching ACL is looked up only for the BY_ACL_* codes)."""
        if code in (BY_ACL_DENY, BY_ACL_ALLOW):
            return str(self._rule(index, ctx, action, RESULT_OF[code]))
        return RULE_KIND_OF[code]

    def _rule(self, index: AclIndex, ctx: RequestContext, action: Action, result: AuthorizationResult) -> Rule:
        """Name the ACL Kafka would: the first applying DENY its index walk meets, else the last applying ALLOW."""
        tindex = index.types[action.resource_type]
        if tindex is None:
            return DEFAULT_DENY if result is DENIED else DEFAULT_ALLOW
        candidates = tindex.candidates(action.resource_name)
        applying = [acl for acl in candidates if _applies(acl, ctx, action.operation)]
        met = applying if len(applying) < 2 else walk_order(tindex, action.resource_name, applying)  # one: no order
        acl = decider(met, result is DENIED, _is_allow)
        if acl is None:
            return DEFAULT_DENY if result is DENIED else DEFAULT_ALLOW
        return Rule("MatchingAcl", acl)

    def _maybe_audit(
        self,
        index: AclIndex,
        ctx: RequestContext,
        action: Action,
        result: AuthorizationResult,
        superuser: bool,
        may_audit: Callable[[Action], bool] | None = None,
    ) -> None:
        level = audit_level(result is ALLOWED, action.log_if_allowed, action.log_if_denied)
        if not AUDIT_LOGGER.isEnabledFor(level) or (may_audit is not None and not may_audit(action)):
            return
        rule = SUPER_USER if superuser else self._rule(index, ctx, action, result)
        line = audit_line(
            ctx.principal,
            Decision(result, rule),
            action.operation,
            ctx.host,
            action.resource_type,
            action.resource_name,
            ctx.request,
            action.ref_count,
        )
        AUDIT_LOGGER.log(level, line)

    def authorize_by_resource_type(
        self, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType
    ) -> AuthorizationResult:
        """KIP-679: may this principal do `operation` on at least one resource of this type? (spec §8)"""
        if resource_type == ResourceType.ANY:
            raise InvalidActionError("Must specify a non-filter resource type for authorizeByResourceType")
        if resource_type == ResourceType.UNKNOWN:
            raise InvalidActionError("Unknown resource type")
        if operation == AclOperation.ANY:
            raise InvalidActionError("Must specify a non-filter operation type for authorizeByResourceType")
        if operation == AclOperation.UNKNOWN:
            raise InvalidActionError("Unknown operation type")
        probe = Action(operation, resource_type, _PROBE_NAME, ref_count=0, log_if_allowed=True, log_if_denied=False)
        if self.authorize(ctx, [probe])[0] is ALLOWED:
            return ALLOWED
        tindex = self._index.types[resource_type]
        if tindex is None:
            return DENIED
        return authorize_by_resource_type_scan(tindex, ctx.principal, ctx.host, operation)

    def authorized_operations(self, ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
        """KIP-430's INT32 bit field of the supported operations `authorize` allows on (type, name) (spec §13)."""
        supported = SUPPORTED_OPERATIONS.get(resource_type)
        if supported is None:
            raise InvalidActionError(f"Unknown resource type {resource_type.name} for authorized operations")
        if ctx.principal in self._super_users:
            return to_32bit_field(list(supported))
        if not self._loaded:
            raise AuthorizerNotReadyError(f"the authorizer has not completed its initial load ({ctx.principal})")
        tindex = self._index.types[resource_type]
        if tindex is None:
            return to_32bit_field(list(supported)) if self._default is ALLOWED else 0
        mask = grant_mask(tindex, ctx.principal, ctx.host, name)
        return operations_field(resource_type, mask, self._default is ALLOWED and not tindex.has_candidates(name))

    # ---- listing ----------------------------------------------------------------------------------
    def acls(self, acl_filter: AclBindingFilter) -> list[StandardAcl]:
        """Every stored ACL the filter matches, in Kafka's index order (spec §9.4), from one snapshot."""
        index = self._index
        return kafka_order([acl for acl in index.by_id.values() if acl_filter.matches_acl(acl)])

    def acls_with_ids(self, acl_filter: AclBindingFilter) -> list[tuple[AclId, StandardAcl]]:
        """Like `acls`, with each ACL's id (for the shell and the controller)."""
        return [(acl_id, acl) for acl_id, acl in self._index.by_id.items() if acl_filter.matches_acl(acl)]

    def acl_count(self) -> int:
        """KIP-801's `aclCount()`."""
        return len(self._index)


def _is_allow(acl: StandardAcl) -> bool:
    return acl.permission_type == AclPermissionType.ALLOW


def _applies(acl: StandardAcl, ctx: RequestContext, op: AclOperation) -> bool:
    """Spec §5.3 for one ACL (the slow, obviously-correct form used for explanations)."""
    if acl.principal != ctx.principal and acl.principal != WILDCARD_PRINCIPAL:
        return False
    if acl.host != "*" and acl.host != ctx.host:
        return False
    bit = grant_bit(acl.operation, acl.permission_type)
    return bool(bit & (ALLOW_TEST[op] | DENY_TEST[op]))


__all__ = ["Action", "RequestContext", "StandardAuthorizer", "TypeIndex"]
