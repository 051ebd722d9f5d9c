"""Seeded ACL data sets for the benchmarks: a mixed 100k-style set and Kafka's JMH `AuthorizerBenchmark` shape.

Pure functions of their arguments and seed; each call builds fresh objects.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl

_OPS = [
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.DESCRIBE,
    AclOperation.CREATE,
    AclOperation.ALL,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
]
_TYPES = [ResourceType.TOPIC] * 14 + [ResourceType.GROUP] * 4 + [ResourceType.TRANSACTIONAL_ID]


@dataclass(frozen=True)
class MixedSet:
    """A realistic ACL set plus the names and principals requests are drawn from."""

    acls: list[tuple[str, StandardAcl]]
    principals: list[str]
    names: list[tuple[ResourceType, str]]


def _name(rng: random.Random) -> str:
    return (
        f"{rng.choice(['svc', 'team', 'app', 'etl', 'cdc'])}{rng.randrange(300)}."
        f"{rng.choice(['orders', 'payments', 'users', 'events', 'audit', 'clicks'])}"
        f"{rng.choice(['', '-eu', '-us', '-apac'])}.v{rng.randrange(40)}-{rng.randrange(100_000)}"
    )


def mixed_set(count: int, principals: int = 5000, seed: int = 42, keep_names: bool = True) -> MixedSet:
    """`count` ACLs: 20% PREFIXED cut at many lengths, 5% DENY, 0.5% LITERAL `*`, 10% host-specific, `User:*`."""
    rng = random.Random(seed)
    people = [f"User:u{i}" for i in range(principals)]
    seen: set[StandardAcl] = set()
    acls: list[tuple[str, StandardAcl]] = []
    names: list[tuple[ResourceType, str]] = []
    while len(acls) < count:
        rtype = rng.choice(_TYPES)
        name = _name(rng)
        roll = rng.random()
        if roll < 0.20:
            pattern, name = PatternType.PREFIXED, name[: rng.randrange(3, len(name))]
        elif roll < 0.205:
            pattern, name = PatternType.LITERAL, "*"
        else:
            pattern = PatternType.LITERAL
        principal = "User:*" if rng.random() < 0.01 else rng.choice(people)
        host = "*" if rng.random() < 0.9 else f"10.{rng.randrange(4)}.{rng.randrange(256)}.{rng.randrange(256)}"
        permission = AclPermissionType.DENY if rng.random() < 0.05 else AclPermissionType.ALLOW
        acl = StandardAcl(rtype, name, pattern, principal, host, rng.choice(_OPS), permission)
        if acl in seen:
            continue
        seen.add(acl)
        acls.append((f"id-{len(acls)}", acl))
        if keep_names:
            names.append((rtype, name if pattern is PatternType.LITERAL else name + _name(rng)[:8]))
    return MixedSet(acls, people, names)


def mixed_requests(data: MixedSet, count: int, seed: int = 7) -> list[tuple[str, str, AclOperation, ResourceType, str]]:
    """Requests: 70% on names that have ACLs (or extend a prefix), 30% on fresh names; 10% host-specific."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        if rng.random() < 0.7:
            rtype, name = rng.choice(data.names)
        else:
            rtype, name = rng.choice(_TYPES), _name(rng)
        host = f"10.0.{rng.randrange(256)}.{rng.randrange(256)}" if rng.random() < 0.1 else "192.168.1.1"
        out.append((rng.choice(data.principals), host, rng.choice(_OPS[:4]), rtype, name))
    return out


def jmh_set(
    resource_count: int, acl_count: int = 10, deny_percentage: int = 20, seed: int = 1
) -> list[tuple[str, StandardAcl]]:
    """Kafka's AuthorizerBenchmark.prepareAclCache shape (spec/performance-notes.md §1.1)."""
    rng = random.Random(seed)
    acls: list[tuple[str, StandardAcl]] = []

    def add(rtype: ResourceType, name: str, pattern: PatternType, principal: str, host: str) -> None:
        acls.append(
            (
                f"id-{len(acls)}",
                StandardAcl(rtype, name, pattern, principal, host, AclOperation.READ, AclPermissionType.ALLOW),
            )
        )
        if rng.random() * 100 < deny_percentage:
            acls.append(
                (
                    f"id-{len(acls)}",
                    StandardAcl(rtype, name, pattern, principal, host, AclOperation.READ, AclPermissionType.DENY),
                )
            )

    for i in range(resource_count):
        rtype = ResourceType.GROUP if i % 10 == 0 else ResourceType.TOPIC
        pattern = PatternType.PREFIXED if i % 5 == 0 else PatternType.LITERAL
        for j in range(acl_count):
            add(rtype, f"foo-bar35_resource-{i}", pattern, "User:test-user" + (str(j) if j else ""), "*")
    for h in range(1000):
        add(ResourceType.TOPIC, "foo-bar35_resource-", PatternType.PREFIXED, "User:test-user", f"127.0.0.{h}")
    for h in range(resource_count // 10):
        add(ResourceType.TOPIC, "*", PatternType.LITERAL, "User:test-user", f"127.0.0{h}")
    return acls


def update_benchmark_acls(count: int, seed: int = 1) -> list[tuple[str, StandardAcl]]:
    """The first `count` ACLs of Kafka's StandardAuthorizerUpdateBenchmark pool (spec/performance-notes.md §1.2).

    Resources `foo-bar35_resource-<i>` (GROUP one time in five, else TOPIC), 255 LITERAL READ ALLOW ACLs
    each, from hosts 127.0.0.1 to 127.0.0.255, each for a random one of 100 principals `User:test-user<n>`.
    """
    rng = random.Random(seed)
    acls: list[tuple[str, StandardAcl]] = []
    resource = 0
    while len(acls) < count:
        rtype = ResourceType.GROUP if rng.randrange(10) > 7 else ResourceType.TOPIC
        name = f"foo-bar35_resource-{resource}"
        for host in range(1, 256):
            principal = f"User:test-user{rng.randrange(100)}"
            acl = StandardAcl(
                rtype,
                name,
                PatternType.LITERAL,
                principal,
                f"127.0.0.{host}",
                AclOperation.READ,
                AclPermissionType.ALLOW,
            )
            acls.append((f"id-{len(acls)}", acl))
        resource += 1
    return acls[:count]
