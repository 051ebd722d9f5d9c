"""kafka-acls' option rules turned into bindings (for --add) and filters (for --remove/--list), as AclCommand does.

Pure functions over an immutable `AclOptions`; the messages are kafka-acls' own where it has one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kraftacl.authorizer.model.acls import (
    CLUSTER_NAME,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
    split_principal,
)
from kraftacl.authorizer.model.filters import AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter
from kraftacl.authorizer.model.operations import SUPPORTED_OPERATIONS

OP = AclOperation


class OptionError(ValueError):
    """An invalid combination of options (the command prints it and exits 2)."""


@dataclass(frozen=True)
class AclOptions:
    """Everything kafka-acls accepts that shapes bindings and filters."""

    topics: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    cluster: bool = False
    transactional_ids: list[str] = field(default_factory=list)
    delegation_tokens: list[str] = field(default_factory=list)
    user_principals: list[str] = field(default_factory=list)
    pattern_type: PatternType = PatternType.LITERAL
    operations: list[str] = field(default_factory=list)
    allow_principals: list[str] = field(default_factory=list)
    deny_principals: list[str] = field(default_factory=list)
    allow_hosts: list[str] = field(default_factory=list)
    deny_hosts: list[str] = field(default_factory=list)
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False
    principals: list[str] = field(default_factory=list)  # --principal: --list only


def parse_operation(text: str) -> AclOperation:
    """`Read`, `DescribeConfigs`, `READ`, `DESCRIBE_CONFIGS` (SecurityUtils.operation plus enum names)."""
    compact = text.replace("_", "").upper()
    for op in AclOperation:
        if op.name.replace("_", "") == compact and op not in (OP.UNKNOWN, OP.ANY):
            return op
    valid = ", ".join(o.name for o in AclOperation if o not in (OP.UNKNOWN, OP.ANY))
    raise OptionError(f"invalid operation '{text}'; valid operations are {valid}")


def parse_pattern_type(text: str) -> PatternType:
    """ANY, MATCH, LITERAL or PREFIXED, case-insensitive (kafka-acls' converter)."""
    parsed = PatternType.__members__.get(text.upper())
    if parsed is None or parsed is PatternType.UNKNOWN:
        raise OptionError(f"invalid --resource-pattern-type '{text}'; use ANY, MATCH, LITERAL or PREFIXED")
    return parsed


def check_principal(text: str, option: str) -> str:
    """SecurityUtils.parseKafkaPrincipal: `Type:name`, split at the first colon; the error names the option."""
    if not text or split_principal(text) is None:
        raise OptionError(f"{option}: expected a string in format principalType:principalName but got {text}")
    return text


def resources(opts: AclOptions, pattern: PatternType) -> list[tuple[ResourceType, str]]:
    """The (type, name) pairs named on the command line, in kafka-acls' order."""
    out = [(ResourceType.TOPIC, t.strip()) for t in opts.topics]
    out += [(ResourceType.GROUP, g.strip()) for g in opts.groups]
    if opts.cluster and pattern in (PatternType.LITERAL, PatternType.ANY, PatternType.MATCH):
        out.append((ResourceType.CLUSTER, CLUSTER_NAME))
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in opts.transactional_ids]
    out += [(ResourceType.DELEGATION_TOKEN, d.strip()) for d in opts.delegation_tokens]
    out += [(ResourceType.USER, u.strip()) for u in opts.user_principals]
    return out


def _entries(principals: list[str], hosts: list[str], option: str) -> list[tuple[str, str]]:
    hosts = hosts or ["*"]
    return [(check_principal(p, option), h) for p in principals for h in hosts]


def _operations_for(opts: AclOptions, rtype: ResourceType) -> list[AclOperation]:
    if opts.producer or opts.consumer:
        ops: list[AclOperation] = []
        if opts.producer:
            ops += {
                ResourceType.TOPIC: [OP.WRITE, OP.DESCRIBE, OP.CREATE],
                ResourceType.TRANSACTIONAL_ID: [OP.WRITE, OP.DESCRIBE],
                ResourceType.CLUSTER: [OP.IDEMPOTENT_WRITE] if opts.idempotent else [],
            }.get(rtype, [])
        if opts.consumer:
            ops += {ResourceType.TOPIC: [OP.READ, OP.DESCRIBE], ResourceType.GROUP: [OP.READ]}.get(rtype, [])
        return list(dict.fromkeys(ops))
    ops = [parse_operation(o) for o in opts.operations] or [OP.ALL]
    supported = SUPPORTED_OPERATIONS[rtype]
    for op in ops:
        if op is not OP.ALL and op not in supported:
            names = ", ".join(o.name.title().replace("_", "") for o in supported)
            raise OptionError(f"ResourceType {rtype.name} only supports operations {names}, All")
    return ops


def _check_invalid(used: str, present: bool, others: list[tuple[str, object]]) -> None:
    """CommandLineUtils.checkInvalidArgs: the first of `others` given alongside `used` is refused."""
    for name, value in others:
        if present and value:
            raise OptionError(f'Option "[{used}]" can\'t be used with option "[{name}]"')


def check_combinations(opts: AclOptions, action: str) -> None:
    """kafka-acls' option-combination rules for `action` in {add, remove, list}, in AclCommand's order."""
    denials: list[tuple[str, object]] = [
        ("operation", opts.operations),
        ("deny-principal", opts.deny_principals),
        ("deny-host", opts.deny_hosts),
    ]
    _check_invalid(
        "list",
        action == "list",
        [
            ("producer", opts.producer),
            ("consumer", opts.consumer),
            ("allow-host", opts.allow_hosts),
            ("allow-principal", opts.allow_principals),
            ("deny-host", opts.deny_hosts),
            ("deny-principal", opts.deny_principals),
        ],
    )
    _check_invalid("producer", opts.producer, denials)
    _check_invalid("consumer", opts.consumer, denials)
    if opts.principals and action != "list":
        raise OptionError("The --principal option is only available if --list is set")
    if opts.producer and not opts.topics:
        raise OptionError("With --producer you must specify a --topic")
    if opts.idempotent and not opts.producer:
        raise OptionError("The --idempotent option is only available if --producer is set")
    if opts.consumer and (
        not opts.topics or not opts.groups or (not opts.producer and (opts.cluster or opts.transactional_ids))
    ):
        raise OptionError(
            "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id "
            "option should be specified."
        )


def bindings_to_add(opts: AclOptions) -> list[StandardAcl]:
    """Every ACL `--add` creates: resources x (principal, host) x operations, allows then denies."""
    check_combinations(opts, "add")
    if opts.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise OptionError(
            f"A '--resource-pattern-type' value of '{opts.pattern_type.name}' is not valid when adding acls."
        )
    if not opts.allow_principals and not opts.deny_principals:
        raise OptionError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    opts_resources = resources(opts, opts.pattern_type)
    if opts.producer and opts.idempotent:
        opts_resources.append((ResourceType.CLUSTER, CLUSTER_NAME))
    if not opts_resources:
        raise OptionError(
            "You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
            "or --delegation-token <Delegation Token ID>"
        )
    out: list[StandardAcl] = []
    for rtype, name in opts_resources:
        pattern = PatternType.LITERAL if rtype is ResourceType.CLUSTER and opts.producer else opts.pattern_type
        for perm, principals, hosts, option in (
            (AclPermissionType.ALLOW, opts.allow_principals, opts.allow_hosts, "--allow-principal"),
            (AclPermissionType.DENY, opts.deny_principals, opts.deny_hosts, "--deny-principal"),
        ):
            for principal, host in _entries(principals, hosts, option):
                out += [
                    StandardAcl(rtype, name, pattern, principal, host, op, perm) for op in _operations_for(opts, rtype)
                ]
    return list(dict.fromkeys(out))


def filters_for(opts: AclOptions, action: str) -> list[AclBindingFilter]:
    """Filters for --remove/--list: per resource, the entry filter from principals/hosts/operations, else ANY."""
    check_combinations(opts, action)
    pattern_filters = [ResourcePatternFilter(t, n, opts.pattern_type) for t, n in resources(opts, opts.pattern_type)]
    if not pattern_filters:
        if action == "remove":
            raise OptionError(
                "You must provide at least one resource: --topic <topic> or --cluster or --group "
                "<group> or --delegation-token <Delegation Token ID>"
            )
        pattern_filters = [
            ResourcePatternFilter(
                ResourceType.ANY,
                None,
                opts.pattern_type if opts.pattern_type is not PatternType.LITERAL else PatternType.ANY,
            )
        ]
    if action == "list" or not (opts.allow_principals or opts.deny_principals):
        return [AclBindingFilter(p, AccessControlEntryFilter()) for p in pattern_filters]
    out = []
    for pattern in pattern_filters:
        rtype = pattern.resource_type
        for perm, principals, hosts, option in (
            (AclPermissionType.ALLOW, opts.allow_principals, opts.allow_hosts, "--allow-principal"),
            (AclPermissionType.DENY, opts.deny_principals, opts.deny_hosts, "--deny-principal"),
        ):
            for principal, host in _entries(principals, hosts, option):
                out += [
                    AclBindingFilter(pattern, AccessControlEntryFilter(principal, host, op, perm))
                    for op in _operations_for(opts, rtype)
                ]
    return out
