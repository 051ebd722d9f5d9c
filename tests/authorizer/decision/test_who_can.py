"""`who_can` against `StandardAuthorizer.authorize` (and the brute-force reference model) on random ACL sets.

Every principal (and host) an entry names is asked of `authorize`; "any other principal" and "any
other host" are asked for fresh ones and for every principal and host the ACL set holds that no
other entry names. Completeness: every principal of a candidate ACL and every super user has its
entries, and every candidate ACL no request can match is listed apart.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from kraftacl.authorizer.decision.audit import DEFAULT_ALLOW, DEFAULT_DENY, SUPER_USER
from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.decision.who_can import WhoCan, WhoCanEntry, who_can
from kraftacl.authorizer.errors import AuthorizerNotReadyError, InvalidActionError
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from tests.authorizer import reference as ref
from tests.authorizer.decision.test_properties import (
    BASE,
    CONCRETE_TYPES,
    FOCUSED_OPS,
    AclSpec,
    acl_specs,
    names,
    to_acl,
)

FRESH_PRINCIPALS = ("User:zz-fresh", "Group:zz-fresh")
FRESH_HOSTS = ("192.0.2.77", "0:0:0:0:0:0:0:2")  # addresses no generated ACL uses
UNREACHABLE_HOSTS = {"::1", ""}  # ACL hosts no client address is ever written as (Java writes 0:0:0:0:0:0:0:1)
OPERATIONS = [*FOCUSED_OPS, "CREATE", "CLUSTER_ACTION", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"]
SUPER_USERS = st.frozensets(st.sampled_from(["User:alice", "User:bob", "User:root", "Group:*"]), max_size=2)
T, L, P = ResourceType.TOPIC, PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def authorizer(
    acls: list[StandardAcl], super_users: frozenset[str] = frozenset(), everyone: bool = False
) -> StandardAuthorizer:
    auth = StandardAuthorizer(AuthorizerConfig(super_users=super_users, allow_everyone_if_no_acl_found=everyone))
    auth.load_snapshot({f"id{n}": acl for n, acl in enumerate(acls)})
    auth.complete_initial_load()
    return auth


def asked(entry: WhoCanEntry, answer: WhoCan, acls: list[StandardAcl]) -> list[tuple[str, str]]:
    """The concrete (principal, host) pairs an entry's claim covers."""
    named = {e.principal for e in answer.entries if e.principal is not None}
    principals = (
        [entry.principal]
        if entry.principal is not None
        else [*FRESH_PRINCIPALS, *sorted({a.principal for a in acls if ":" in a.principal} - named - {"User:*"})]
    )
    mine = {e.host for e in answer.entries if e.principal == entry.principal and e.host is not None}
    others = {a.host for a in acls} - mine - UNREACHABLE_HOSTS - {"*"}
    hosts = [entry.host] if entry.host is not None else [*FRESH_HOSTS, *sorted(others)]
    return [(p, h) for p in principals for h in hosts]


@given(
    specs=st.lists(acl_specs, max_size=30),
    super_users=SUPER_USERS,
    everyone=st.booleans(),
    rtype=st.sampled_from(["TOPIC"] * 4 + ["GROUP"] * 2 + CONCRETE_TYPES),
    name=names,
    op=st.sampled_from(OPERATIONS),
)
@settings(BASE, max_examples=300)
def test_who_can_matches_authorize(
    specs: list[AclSpec], super_users: frozenset[str], everyone: bool, rtype: str, name: str, op: str
) -> None:
    acls = list(dict.fromkeys(to_acl(spec) for spec in specs))  # the index refuses two ACLs with one content
    auth = authorizer(acls, super_users, everyone)
    operation, resource_type = AclOperation[op], ResourceType[rtype]
    answer = who_can(auth, operation, resource_type, name)
    note(f"acls={acls}\nsuper_users={sorted(super_users)} everyone={everyone}\nanswer={answer}")
    action = Action(operation, resource_type, name)
    candidates = [a for a in acls if ref.is_candidate(a, resource_type, name)]
    for entry in answer.entries:
        for principal, host in asked(entry, answer, acls):
            context = RequestContext(principal, host)
            assert auth.authorize(context, [action]) == [entry.decision.result], (entry, principal, host)
            assert auth.explain(context, action) == entry.decision, (entry, principal, host)
            want = ref.ref_authorize(acls, super_users, everyone, principal, host, operation, resource_type, name)
            assert entry.decision.result.name == want, (entry, principal, host)
            if entry.decision.rule is not SUPER_USER:
                applying = {a for a in candidates if ref.applies(a, principal, host, operation)}
                assert set(entry.acls) == applying, (entry, principal, host)
    reachable = [a for a in candidates if a not in answer.unmatched]
    assert {e.principal for e in answer.entries if e.principal is not None} == (
        {a.principal for a in reachable if a.principal != "User:*"} | super_users
    )
    assert set(answer.unmatched) == {a for a in candidates if ":" not in a.principal or a.host in UNREACHABLE_HOSTS}
    for row_principal in {e.principal for e in answer.entries}:
        rows = [e for e in answer.entries if e.principal == row_principal]
        assert [e.host for e in rows].count(None) == 1 and rows[-1].host is None  # one "any other host" row, last
        specific = {e.host for e in rows if e.host is not None}
        owners = {row_principal, "User:*"} if row_principal is not None else {"User:*"}
        assert specific <= {a.host for a in reachable if a.principal in owners}
    assert answer.covered == bool(candidates)


def test_super_users_user_star_prefixed_wildcard_and_default() -> None:
    acls = [
        StandardAcl(T, "orders", L, "User:alice", "*", AclOperation.READ, ALLOW),
        StandardAcl(T, "ord", P, "User:*", "*", AclOperation.DESCRIBE, ALLOW),
        StandardAcl(T, "*", L, "User:mallory", "*", AclOperation.ALL, DENY),
        StandardAcl(T, "orders", L, "User:bob", "10.0.0.1", AclOperation.READ, ALLOW),
    ]
    answer = who_can(authorizer(acls, frozenset({"User:root"})), AclOperation.READ, T, "orders")
    rows = [(e.principal, e.host, e.decision.result.name, str(e.decision.rule)) for e in answer.entries]
    assert rows == [
        ("User:alice", None, "ALLOWED", f"MatchingAcl(acl={acls[0]})"),
        ("User:bob", "10.0.0.1", "ALLOWED", f"MatchingAcl(acl={acls[3]})"),
        ("User:bob", None, "DENIED", "DefaultDeny"),
        ("User:mallory", None, "DENIED", f"MatchingAcl(acl={acls[2]})"),
        ("User:root", None, "ALLOWED", "SuperUser"),
        (None, None, "DENIED", "DefaultDeny"),
    ]
    # DESCRIBE: User:* on the `ord` prefix lets everyone in, except mallory's DENY ALL on `*`; bob's READ
    # (which implies DESCRIBE) also applies from 10.0.0.1, so that host keeps a row of its own.
    describe = who_can(authorizer(acls), AclOperation.DESCRIBE, T, "orders")
    assert [(e.principal, e.host, e.decision.result.name, len(e.acls)) for e in describe.entries] == [
        ("User:alice", None, "ALLOWED", 2),
        ("User:bob", "10.0.0.1", "ALLOWED", 2),
        ("User:bob", None, "ALLOWED", 1),
        ("User:mallory", None, "DENIED", 2),
        (None, None, "ALLOWED", 1),
    ]


def test_allow_everyone_applies_only_where_no_acl_covers_the_name() -> None:
    acls = [StandardAcl(T, "orders", L, "User:alice", "*", AclOperation.READ, ALLOW)]
    uncovered = who_can(authorizer(acls, everyone=True), AclOperation.READ, T, "payments")
    assert not uncovered.covered
    assert [(e.principal, e.decision.rule) for e in uncovered.entries] == [(None, DEFAULT_ALLOW)]
    covered = who_can(authorizer(acls, everyone=True), AclOperation.READ, T, "orders")
    assert covered.covered and covered.entries[-1].decision.rule == DEFAULT_DENY


def test_unmatchable_acls_are_listed_apart() -> None:
    acls = [
        StandardAcl(T, "orders", L, "alice", "*", AclOperation.READ, ALLOW),  # no colon: matches no principal
        StandardAcl(T, "orders", L, "User:bob", "::1", AclOperation.READ, ALLOW),  # Java writes 0:0:0:0:0:0:0:1
        StandardAcl(T, "orders", L, "User:*", "localhost", AclOperation.READ, ALLOW),  # a host name never matches
    ]
    answer = who_can(authorizer(acls), AclOperation.READ, T, "orders")
    assert set(answer.unmatched) == set(acls)
    assert [(e.principal, e.host, e.acls) for e in answer.entries] == [(None, None, ())]


@pytest.mark.parametrize(
    ("operation", "rtype", "message"),
    [
        (AclOperation.ANY, T, "concrete operation"),
        (AclOperation.UNKNOWN, T, "concrete operation"),
        (AclOperation.READ, ResourceType.ANY, "concrete resource type"),
    ],
)
def test_filter_values_are_refused(operation: AclOperation, rtype: ResourceType, message: str) -> None:
    with pytest.raises(InvalidActionError, match=message):
        who_can(authorizer([]), operation, rtype, "x")


def test_not_ready_is_refused() -> None:
    with pytest.raises(AuthorizerNotReadyError):
        who_can(StandardAuthorizer(), AclOperation.READ, T, "x")
