"""A brute-force reference model of the StandardAuthorizer, written straight from the spec.

Source of truth: `shared/spec/authorizer-semantics.md` §5 (authorize), §8 (authorizeByResourceType),
§9 (filters) and §13 (authorized operations), with the project's clean-rule decisions where Kafka
hangs or throws (§7, §7.1, README): colon-less ACL principals never match (but are candidates),
the LITERAL `*` ACL covers every name (also `*a`), a request principal `User:*` is an ordinary
principal.

Every decision function loops over every ACL; nothing here uses the implementation's index, masks
or operation tables. Only the value types of `authorizer.model.acls` are shared. `ref_scan_order`
re-enacts Kafka's two-pass index walk (§6) for one purpose only: naming the deciding ACL.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl

ALLOWED = "ALLOWED"
DENIED = "DENIED"

Op = AclOperation
Perm = AclPermissionType
Pat = PatternType
RT = ResourceType

# §5.3: a requested op -> the ALLOW ops that grant it (anything not listed: only itself).
IMPLIED_BY_ALLOW: dict[AclOperation, set[AclOperation]] = {
    Op.DESCRIBE: {Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
    Op.DESCRIBE_CONFIGS: {Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS},
}

# §13: the supported operations of each concrete resource type.
SUPPORTED: dict[ResourceType, list[AclOperation]] = {
    RT.TOPIC: [
        Op.READ,
        Op.WRITE,
        Op.CREATE,
        Op.DELETE,
        Op.ALTER,
        Op.DESCRIBE,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
    ],
    RT.GROUP: [Op.READ, Op.DELETE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS],
    RT.CLUSTER: [
        Op.CREATE,
        Op.ALTER,
        Op.DESCRIBE,
        Op.CLUSTER_ACTION,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
        Op.IDEMPOTENT_WRITE,
    ],
    RT.TRANSACTIONAL_ID: [Op.WRITE, Op.DESCRIBE],
    RT.DELEGATION_TOKEN: [Op.DESCRIBE],
    RT.USER: [Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS],
}


def is_candidate(acl: StandardAcl, rtype: ResourceType, name: str) -> bool:
    """§5.2: same type, and LITERAL `*`, LITERAL equal name, or any other pattern whose name prefixes N."""
    if acl.resource_type != rtype:
        return False
    if acl.pattern_type == Pat.LITERAL:
        return acl.resource_name == "*" or acl.resource_name == name
    return name.startswith(acl.resource_name)  # PREFIXED, and UNKNOWN behaves like PREFIXED


def principal_matches(acl_principal: str, principal: str) -> bool:
    """§5.3.1: (type, name) equal after splitting at the first colon, or the ACL is exactly `User:*`."""
    if ":" not in acl_principal:
        return False  # project decision (README): never matches
    acl_type, acl_name = acl_principal.split(":", 1)
    req_type, req_name = principal.split(":", 1)
    return (acl_type, acl_name) == (req_type, req_name) or (acl_type, acl_name) == ("User", "*")


def host_matches(acl_host: str, host: str) -> bool:
    """§5.3.2: `*` or the exact text."""
    return acl_host == "*" or acl_host == host


def operation_applies(acl_op: AclOperation, perm: AclPermissionType, op: AclOperation) -> bool:
    """§5.3.3, the table top to bottom."""
    if acl_op == Op.ALL:
        return True
    if perm == Perm.ALLOW:
        return acl_op in IMPLIED_BY_ALLOW.get(op, {op})
    return acl_op == op  # DENY or UNKNOWN: no implication


def applies(acl: StandardAcl, principal: str, host: str, op: AclOperation) -> bool:
    """§5.3: principal, host and operation all match."""
    return (
        principal_matches(acl.principal, principal)
        and host_matches(acl.host, host)
        and operation_applies(acl.operation, acl.permission_type, op)
    )


def ref_authorize(
    acls: Iterable[StandardAcl],
    super_users: Iterable[str],
    allow_everyone: bool,
    principal: str,
    host: str,
    op: AclOperation,
    rtype: ResourceType,
    name: str,
) -> str:
    """§5.1 (super user), §5.2-§5.5; `host` is already in Java's text form."""
    if principal in set(super_users):
        return ALLOWED
    candidates = [acl for acl in acls if is_candidate(acl, rtype, name)]
    votes = [acl.permission_type for acl in candidates if applies(acl, principal, host, op)]
    if any(vote != Perm.ALLOW for vote in votes):
        return DENIED  # §5.4: DENY (and UNKNOWN) wins
    if votes:
        return ALLOWED
    if candidates:
        return DENIED  # §5.5: candidates exist, the default is ignored
    return ALLOWED if allow_everyone else DENIED


def ref_by_resource_type(
    acls: Iterable[StandardAcl],
    super_users: Iterable[str],
    allow_everyone: bool,
    principal: str,
    host: str,
    op: AclOperation,
    rtype: ResourceType,
) -> str:
    """§8 steps 2-6 (the argument checks of step 1 are the caller's business)."""
    acls = list(acls)
    if ref_authorize(acls, super_users, allow_everyone, principal, host, op, rtype, "hardcode") == ALLOWED:
        return ALLOWED
    deny_literal: set[str] = set()
    deny_prefix: set[str] = set()
    allow_literal: set[str] = set()
    allow_prefix: set[str] = set()
    wildcard_allow = False
    for acl in acls:
        if acl.resource_type != rtype or not host_matches(acl.host, host):
            continue
        if not principal_matches(acl.principal, principal):
            continue
        if acl.operation not in (op, Op.ALL):
            continue  # no implication in the scan
        literal, prefixed = acl.pattern_type == Pat.LITERAL, acl.pattern_type == Pat.PREFIXED
        wildcard = literal and acl.resource_name == "*"
        if acl.permission_type == Perm.DENY:
            if wildcard:
                return DENIED
            if literal:
                deny_literal.add(acl.resource_name)
            elif prefixed:
                deny_prefix.add(acl.resource_name)
        elif acl.permission_type == Perm.ALLOW:
            if wildcard:
                wildcard_allow = True
            elif literal:
                allow_literal.add(acl.resource_name)
            elif prefixed:
                allow_prefix.add(acl.resource_name)
    if wildcard_allow:
        return ALLOWED

    def prefix_denied(name: str) -> bool:
        return any(name[:length] in deny_prefix for length in range(1, len(name) + 1))

    if any(name not in deny_literal and not prefix_denied(name) for name in allow_literal):
        return ALLOWED
    if any(not prefix_denied(name) for name in allow_prefix):
        return ALLOWED
    return DENIED


def ref_authorized_operations(
    acls: Iterable[StandardAcl],
    super_users: Iterable[str],
    allow_everyone: bool,
    principal: str,
    host: str,
    rtype: ResourceType,
    name: str,
) -> int:
    """§13: bit `1 << code` for every supported operation that `authorize` allows."""
    acls = list(acls)
    return sum(
        1 << op
        for op in SUPPORTED[rtype]
        if ref_authorize(acls, super_users, allow_everyone, principal, host, op, rtype, name) == ALLOWED
    )


def ref_filter_matches(
    rtype: ResourceType,
    name: str | None,
    pattern: PatternType,
    principal: str | None,
    host: str | None,
    op: AclOperation,
    perm: AclPermissionType,
    acl: StandardAcl,
) -> bool:
    """§9.1-§9.3; raises ValueError where Kafka throws (MATCH against a non-specific stored pattern)."""
    # §9.2 ResourcePatternFilter
    if rtype != RT.ANY and rtype != acl.resource_type:
        return False
    if pattern not in (Pat.ANY, Pat.MATCH) and pattern != acl.pattern_type:
        return False
    if name is not None:
        if pattern == Pat.ANY or pattern == acl.pattern_type:
            if name != acl.resource_name:
                return False
        elif acl.pattern_type == Pat.LITERAL:
            if not (name == acl.resource_name or acl.resource_name == "*"):
                return False
        elif acl.pattern_type == Pat.PREFIXED:
            if not name.startswith(acl.resource_name):
                return False
        else:
            raise ValueError(f"Unsupported PatternType: {acl.pattern_type.name}")
    # §9.3 AccessControlEntryFilter
    return (
        (principal is None or principal == acl.principal)
        and (host is None or host == acl.host)
        and (op == Op.ANY or op == acl.operation)
        and (perm == Perm.ANY or perm == acl.permission_type)
    )


def ref_kafka_order_key(acl: StandardAcl) -> tuple[int, tuple[int, ...], int, int, str, str, int]:
    """§6 sort key: type asc, name DESC (code units; the names used in tests are ASCII), then the rest asc."""
    descending_name = (*(-ord(ch) for ch in acl.resource_name), 1)  # a proper prefix sorts after
    return (
        acl.resource_type,
        descending_name,
        acl.pattern_type,
        acl.operation,
        acl.principal,
        acl.host,
        acl.permission_type,
    )


def matches_up_to(name: str, acl_name: str) -> int:
    """The length of the common prefix (Kafka's `matchesUpTo`)."""
    common = 0
    while common < min(len(name), len(acl_name)) and name[common] == acl_name[common]:
        common += 1
    return common


def ref_scan_order(acls: Iterable[StandardAcl], rtype: ResourceType, name: str) -> list[StandardAcl]:
    """§6: the candidates in the order Kafka's two-pass index walk visits them (pass 1, then pass 2).

    Only for names Kafka can scan: `name == ""` or `name[0] > "*"` (§7 and §7.1 cover the others).
    Kafka names the first applying DENY in this order, else the last applying ALLOW (§5.6, §6).
    """
    assert name == "" or name[0] > "*", "Kafka hangs, throws or skips the wildcard for this name (§7, §7.1)"
    index = sorted((acl for acl in acls if acl.resource_type == rtype), key=ref_kafka_order_key)
    keys = [ref_kafka_order_key(acl) for acl in index]

    def seek(exemplar_name: str, pattern: PatternType) -> int:
        exemplar = StandardAcl(rtype, exemplar_name, pattern, "", "", Op.UNKNOWN, Perm.UNKNOWN)
        return bisect_left(keys, ref_kafka_order_key(exemplar))

    visited: list[StandardAcl] = []
    for exemplar_name, pattern in ((name, Pat.UNKNOWN), ("*", Pat.LITERAL)):
        pos = seek(exemplar_name, pattern)
        while pos < len(index):
            acl = index[pos]
            common = matches_up_to(name, acl.resource_name)
            if common == len(acl.resource_name):  # a prefix of N, or N itself
                if acl.pattern_type != Pat.LITERAL or acl.resource_name == name:
                    visited.append(acl)
                pos += 1
            elif acl.pattern_type == Pat.LITERAL and acl.resource_name == "*":
                visited.append(acl)
                pos += 1
            else:  # diverges: re-seek to the exemplar cut to the common prefix (same pattern type)
                pos = seek(exemplar_name[:common], pattern)
    return visited
