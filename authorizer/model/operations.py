"""Operation implications folded into bit masks, and the operations each resource type supports (spec §5.3, §13).

Module-level constants only; immutable and thread-safe.

A stored grant is one int: bit `op` for an ALLOW of operation `op`, bit `DENY_SHIFT + op` for a
DENY, bit `UNKNOWN_SHIFT + op` for a hand-made record whose permission is UNKNOWN (it votes DENY in
`authorize`, spec §5.3, but is ignored by `authorize_by_resource_type`, spec §8). A requested
operation is then decided by two ANDs:

    requested DESCRIBE  ->  allow test = bits {ALL, DESCRIBE, READ, WRITE, DELETE, ALTER}
                            deny test  = DENY bits {ALL, DESCRIBE} | UNKNOWN bits {ALL, DESCRIBE}
    grants & deny_test  -> DENIED;  else grants & allow_test -> ALLOWED;  else no ACL applies.
"""

from __future__ import annotations

from functools import lru_cache

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, ResourceType

DENY_SHIFT = 16
UNKNOWN_SHIFT = 32
_OP = AclOperation

# ALLOW of these operations also allows the key (KIP-11 implications, spec §5.3).
_IMPLIED_BY: dict[AclOperation, tuple[AclOperation, ...]] = {
    _OP.DESCRIBE: (_OP.DESCRIBE, _OP.READ, _OP.WRITE, _OP.DELETE, _OP.ALTER),
    _OP.DESCRIBE_CONFIGS: (_OP.DESCRIBE_CONFIGS, _OP.ALTER_CONFIGS),
}


def grant_bit(operation: int, permission: int) -> int:
    """The single bit a stored ACL contributes to a grant mask."""
    if permission == AclPermissionType.ALLOW:
        return 1 << operation
    if permission == AclPermissionType.DENY:
        return 1 << (DENY_SHIFT + operation)
    return 1 << (UNKNOWN_SHIFT + operation)


def _allow_test(op: AclOperation) -> int:
    ops = _IMPLIED_BY.get(op, (op,))
    mask = 1 << _OP.ALL
    for implied in ops:
        mask |= 1 << implied
    return mask


def _deny_test(op: AclOperation) -> int:
    exact = (1 << _OP.ALL) | (1 << op)
    return (exact << DENY_SHIFT) | (exact << UNKNOWN_SHIFT)


# Indexed by operation code.
ALLOW_TEST: tuple[int, ...] = tuple(_allow_test(op) for op in AclOperation)
DENY_TEST: tuple[int, ...] = tuple(_deny_test(op) for op in AclOperation)
# authorize_by_resource_type: exact operation or ALL, no implication (spec §8 step 3).
EXACT_ALLOW: tuple[int, ...] = tuple((1 << _OP.ALL) | (1 << op) for op in AclOperation)
EXACT_DENY: tuple[int, ...] = tuple(((1 << _OP.ALL) | (1 << op)) << DENY_SHIFT for op in AclOperation)

SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        _OP.READ,
        _OP.WRITE,
        _OP.CREATE,
        _OP.DELETE,
        _OP.ALTER,
        _OP.DESCRIBE,
        _OP.DESCRIBE_CONFIGS,
        _OP.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (_OP.READ, _OP.DELETE, _OP.DESCRIBE, _OP.DESCRIBE_CONFIGS, _OP.ALTER_CONFIGS),
    ResourceType.CLUSTER: (
        _OP.CREATE,
        _OP.ALTER,
        _OP.DESCRIBE,
        _OP.CLUSTER_ACTION,
        _OP.DESCRIBE_CONFIGS,
        _OP.ALTER_CONFIGS,
        _OP.IDEMPOTENT_WRITE,
    ),
    ResourceType.TRANSACTIONAL_ID: (_OP.WRITE, _OP.DESCRIBE),
    ResourceType.DELEGATION_TOKEN: (_OP.DESCRIBE,),
    ResourceType.USER: (_OP.CREATE_TOKENS, _OP.DESCRIBE_TOKENS),
}


def to_32bit_field(operations: list[AclOperation]) -> int:
    """Kafka's `Utils.to32BitField`: bit `1 << code` per operation, as a signed int32."""
    field = 0
    for op in operations:
        if not 0 <= op < 32:
            raise ValueError(f"operation code {int(op)} does not fit a 32-bit field")
        field |= 1 << op
    return field - (1 << 32) if field >= 1 << 31 else field


@lru_cache(maxsize=4096)
def operations_field(resource_type: ResourceType, mask: int, fallback: bool) -> int:
    """KIP-430's field of the operations `resource_type` supports that a grant mask allows (spec §13).

    An operation is allowed when no DENY covers it and an ALLOW does, or `fallback` (no ACL is a
    candidate and `allow.everyone.if.no.acl.found`). Cached: a few hundred distinct masks serve a
    whole cluster's requests, so `authorized_operations` costs the mask and one lookup.
    """
    supported = SUPPORTED_OPERATIONS[resource_type]
    return to_32bit_field([op for op in supported if not mask & DENY_TEST[op] and (mask & ALLOW_TEST[op] or fallback)])
