"""`walk_order`: the ACL explain() and the audit log name is the one Kafka's two-pass index walk finds.

Dense in what matters: names around the walk's turning points ("" and `*`, a name between them,
names between `*` and the request's first character, prefixes of the request), every pattern
the index walk treats differently (LITERAL, PREFIXED, UNKNOWN), ALLOW and DENY, one principal
and host so that many ACLs apply at once. The expectation is `reference.ref_scan_order`, which
re-enacts Kafka's walk over the whole sorted ACL set, re-seeks included (spec §6).
"""

from __future__ import annotations

from hypothesis import example, given, note, settings
from hypothesis import strategies as st

from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from tests.authorizer import reference as ref

NAMES = ["", "*", "*x", "!x", "b", "bar", "c", "f", "fo", "foo", "foobar", "g"]
REQUESTS = ["", "foo", "foobar", "fx", "b", "c"]  # all scannable by Kafka: "" or a first character above "*"

acls = st.builds(
    StandardAcl,
    st.just(ResourceType.TOPIC),
    st.sampled_from(NAMES),
    st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED, PatternType.UNKNOWN]),
    st.sampled_from(["User:alice", "User:alice", "User:bob"]),
    st.just("*"),
    st.sampled_from([AclOperation.READ, AclOperation.ALL]),
    st.sampled_from([AclPermissionType.ALLOW, AclPermissionType.DENY]),
)


def topic(name: str, pattern: PatternType, principal: str, permission: AclPermissionType) -> StandardAcl:
    return StandardAcl(ResourceType.TOPIC, name, pattern, principal, "*", AclOperation.READ, permission)


@settings(max_examples=1500, deadline=None, database=None)
@given(st.lists(acls, unique=True, max_size=12), st.sampled_from(REQUESTS))
# A `*` ACL with a pattern code below LITERAL is the first `*` entry: pass 1 re-seeks from it to "".
@example(
    [
        topic("", PatternType.PREFIXED, "User:alice", AclPermissionType.DENY),
        topic("*", PatternType.LITERAL, "User:alice", AclPermissionType.DENY),
        topic("*", PatternType.UNKNOWN, "User:bob", AclPermissionType.ALLOW),
    ],
    "foo",
)
def test_explain_names_what_the_kafka_walk_finds(group: list[StandardAcl], name: str) -> None:
    note("\n".join(map(str, group)))
    auth = StandardAuthorizer()
    auth.load_snapshot({f"id{n}": acl for n, acl in enumerate(group)})
    auth.complete_initial_load()
    decision = auth.explain(
        RequestContext.of("User:alice", "10.0.0.1"), Action(AclOperation.READ, ResourceType.TOPIC, name)
    )
    applying = [
        acl
        for acl in group
        if ref.is_candidate(acl, ResourceType.TOPIC, name)
        and ref.applies(acl, "User:alice", "10.0.0.1", AclOperation.READ)
    ]
    if not applying:
        assert decision.rule.acl is None
        return
    visited = [acl for acl in ref.ref_scan_order(group, ResourceType.TOPIC, name) if acl in applying]
    assert set(visited) == set(applying), "the walk meets every applying candidate"
    denies = [acl for acl in visited if acl.permission_type != AclPermissionType.ALLOW]
    assert decision.rule.acl == (denies[0] if denies else visited[-1])
