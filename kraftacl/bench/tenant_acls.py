"""The ACL sets of the plugin benchmark, in serve's API form: a multi-tenant cluster, KAFKA-20667's shape on top
of it, and filler ACLs up to a total for the start-up case; plus the topics the Metadata request covers.

Pure functions of their arguments; each call builds fresh lists.

Tenant shape (about 7,000 ACLs for 500 tenants, 14 each): tenant `tNNN` (principal `User:tNNN`) has PREFIXED
`tNNN.` READ, WRITE, DESCRIBE and CREATE on topics, READ on groups, WRITE and DESCRIBE on transactional ids,
and LITERAL READ on 7 topics other tenants share with it. The cluster has 500 topics, 10 for each of the
first 50 tenants (`tNNN.topic-K`); the measured principal, `User:t000`, may describe 10 of them (its own)
plus the ones shared with it. KAFKA-20667's shape adds, for 7,000 other principals, a LITERAL `*` topic
DESCRIBE ALLOW each: StandardAuthorizer then visits all 7,000 for each of the 500 topics of a Metadata
request (3.5M ACLs), whatever the asking principal.
"""

from __future__ import annotations

import random

Acl = dict[str, str]
MEASURED = "t000"  # the tenant whose Metadata requests and produce traffic are timed
TOPIC_OWNERS = 50
TOPICS_PER_OWNER = 10


def _acl(rtype: str, name: str, pattern: str, principal: str, op: str, permission: str = "ALLOW") -> Acl:
    return {
        "resource_type": rtype,
        "resource_name": name,
        "pattern_type": pattern,
        "principal": principal,
        "host": "*",
        "operation": op,
        "permission_type": permission,
    }


def tenant(n: int) -> str:
    """The name (and SASL user) of tenant n."""
    return f"t{n:03d}"


def topics(owners: int = TOPIC_OWNERS) -> list[str]:
    """The cluster's topics: TOPICS_PER_OWNER for each of the first `owners` tenants."""
    return [f"{tenant(t)}.topic-{k}" for t in range(owners) for k in range(TOPICS_PER_OWNER)]


def tenant_shape(tenants: int = 500, owners: int = TOPIC_OWNERS, seed: int = 20) -> list[Acl]:
    """14 ACLs per tenant: 7 PREFIXED on its own names, 7 LITERAL READs of topics shared with it."""
    rng = random.Random(seed)
    shared = topics(owners)
    out: list[Acl] = []
    for t in range(tenants):
        user, prefix = f"User:{tenant(t)}", f"{tenant(t)}."
        out += [_acl("TOPIC", prefix, "PREFIXED", user, op) for op in ("READ", "WRITE", "DESCRIBE", "CREATE")]
        out.append(_acl("GROUP", prefix, "PREFIXED", user, "READ"))
        out += [_acl("TRANSACTIONAL_ID", prefix, "PREFIXED", user, op) for op in ("WRITE", "DESCRIBE")]
        others = [name for name in rng.sample(shared, 8) if not name.startswith(prefix)][:7]
        out += [_acl("TOPIC", name, "LITERAL", user, "READ") for name in others]
    return out


def kafka_20667_extra(principals: int = 7000) -> list[Acl]:
    """DESCRIBE on the LITERAL `*` topic for `principals` service accounts (none of them the measured tenant)."""
    return [_acl("TOPIC", "*", "LITERAL", f"User:svc-{i:05d}", "DESCRIBE") for i in range(principals)]


def filler(count: int, start: int = 0) -> list[Acl]:
    """`count` more distinct ACLs (LITERAL topic READs of other principals), to reach a total for start-up."""
    return [_acl("TOPIC", f"filler-{i}", "LITERAL", f"User:f{i % 5000}", "READ") for i in range(start, start + count)]
