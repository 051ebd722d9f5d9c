"""StandardAuthorizer unit tests: lifecycle, argument checks, audit log, explain, updates and concurrency.

Spec sections: §4 (lifecycle), §5.1 (pre-checks), §5.6 (audit log), §6 (deciding ACL), §8, §13,
KIP-801 (record order, aclCount) and docs/ARCHITECTURE.md "one consistent view per decision".
"""

from __future__ import annotations

import itertools
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future

import pytest

from kraftacl.authorizer.decision.audit import TRACE
from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.errors import AuthorizerNotReadyError, ImageError, InvalidActionError
from kraftacl.authorizer.model.acls import (
    AclOperation,
    AclPermissionType,
    AuthorizationResult,
    PatternType,
    ResourceType,
    StandardAcl,
)
from kraftacl.authorizer.model.filters import AclBindingFilter

RT = ResourceType
PT = PatternType
OP = AclOperation
PERM = AclPermissionType
ALLOWED, DENIED = AuthorizationResult.ALLOWED, AuthorizationResult.DENIED
AUDIT = "kafka.authorizer.logger"


def acl(rtype: RT, name: str, pattern: PT, principal: str, op: OP, perm: PERM, host: str = "*") -> StandardAcl:
    return StandardAcl(rtype, name, pattern, principal, host, op, perm)


def authorizer(
    acls: Sequence[StandardAcl] = (),
    *,
    super_users: tuple[str, ...] = (),
    allow_everyone: bool = False,
    loaded: bool = True,
    early: tuple[str, ...] = (),
) -> StandardAuthorizer:
    auth = StandardAuthorizer(
        AuthorizerConfig(
            super_users=frozenset(super_users),
            allow_everyone_if_no_acl_found=allow_everyone,
            early_start_listeners=early,
        )
    )
    auth.load_snapshot({f"id{i}": a for i, a in enumerate(acls)})
    if loaded:
        auth.complete_initial_load()
    return auth


def ctx(principal: str, address: str = "10.0.0.1", request: str = "Fetch") -> RequestContext:
    return RequestContext.of(principal, address, request=request)


def decide(
    auth: StandardAuthorizer, principal: str, op: OP, rtype: RT, name: str, address: str = "10.0.0.1"
) -> AuthorizationResult:
    return auth.authorize(ctx(principal, address), [Action(op, rtype, name)])[0]


# V10's ACL set (testAuthorizationWithManyAcls).
V10_ACLS = [
    acl(RT.TOPIC, "green2", PT.LITERAL, "User:*", OP.READ, PERM.ALLOW),
    acl(RT.TOPIC, "green", PT.PREFIXED, "User:bob", OP.READ, PERM.ALLOW),
    acl(RT.TOPIC, "betamax4", PT.LITERAL, "User:bob", OP.READ, PERM.ALLOW),
    acl(RT.TOPIC, "betamax", PT.LITERAL, "User:bob", OP.READ, PERM.ALLOW),
    acl(RT.TOPIC, "beta", PT.PREFIXED, "User:*", OP.READ, PERM.ALLOW),
    acl(RT.TOPIC, "alpha", PT.PREFIXED, "User:*", OP.READ, PERM.ALLOW),
    acl(RT.TOPIC, "alp", PT.PREFIXED, "User:bob", OP.READ, PERM.DENY),
    acl(RT.GROUP, "*", PT.LITERAL, "User:bob", OP.WRITE, PERM.ALLOW),
    acl(RT.GROUP, "wheel", PT.LITERAL, "User:*", OP.WRITE, PERM.DENY),
]

# ---- §4 lifecycle -----------------------------------------------------------------------------------------


def test_v14_not_ready_fails_the_whole_batch_but_super_users_pass() -> None:
    auth = authorizer(V10_ACLS, super_users=("User:superman",), loaded=False)
    assert not auth.ready
    with pytest.raises(AuthorizerNotReadyError):
        auth.authorize(ctx("User:bob"), [Action(OP.READ, RT.TOPIC, "green1"), Action(OP.READ, RT.TOPIC, "green1")])
    assert auth.authorize(ctx("User:superman"), [Action(OP.WRITE, RT.GROUP, "wheel")]) == [ALLOWED]
    for call in (
        lambda: auth.authorize_one(ctx("User:bob"), OP.READ, RT.TOPIC, "green1"),
        lambda: auth.explain(ctx("User:bob"), Action(OP.READ, RT.TOPIC, "green1")),
        lambda: auth.authorized_operations(ctx("User:bob"), RT.TOPIC, "green1"),
        lambda: auth.authorize_by_resource_type(ctx("User:bob"), OP.READ, RT.TOPIC),  # D09c
    ):
        with pytest.raises(AuthorizerNotReadyError):
            call()
    assert auth.authorize_one(ctx("User:superman"), OP.READ, RT.TOPIC, "x") is ALLOWED
    assert auth.authorize_by_resource_type(ctx("User:superman"), OP.READ, RT.TOPIC) is ALLOWED
    assert auth.authorized_operations(ctx("User:superman"), RT.TOPIC, "x") == 3576
    assert str(auth.explain(ctx("User:superman"), Action(OP.READ, RT.TOPIC, "x")).rule) == "SuperUser"
    auth.complete_initial_load()
    assert auth.ready
    assert auth.authorize(
        ctx("User:bob"),
        [
            Action(OP.READ, RT.TOPIC, "green1"),
            Action(OP.WRITE, RT.GROUP, "wheel"),
            Action(OP.READ, RT.TOPIC, "alpha"),
        ],
    ) == [ALLOWED, DENIED, DENIED]


def test_not_ready_even_with_allow_everyone_and_no_acls() -> None:
    """KIP-801 "Initialization": no window where anyone may do anything before the load."""
    auth = authorizer([], allow_everyone=True, loaded=False)
    with pytest.raises(AuthorizerNotReadyError):
        decide(auth, "User:bob", OP.READ, RT.TOPIC, "foo")
    auth.complete_initial_load()
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "foo") is ALLOWED


def test_start_futures_complete_on_initial_load() -> None:
    auth = authorizer([], early=("CONTROLLER",), loaded=False)
    futures = auth.start(["PLAINTEXT", "CONTROLLER", "SSL"])
    assert set(futures) == {"PLAINTEXT", "CONTROLLER", "SSL"}
    assert futures["CONTROLLER"].done() and futures["CONTROLLER"].result() is None
    assert not futures["PLAINTEXT"].done() and not futures["SSL"].done()
    auth.complete_initial_load()
    assert futures["PLAINTEXT"].result(timeout=0) is None
    assert futures["SSL"].result(timeout=0) is None
    assert auth.start(["PLAINTEXT"])["PLAINTEXT"].done()  # a later start sees the completed load
    auth.close()  # closing after the load changes nothing
    assert futures["PLAINTEXT"].exception(timeout=0) is None


def test_start_futures_fail_on_complete_initial_load_with_error() -> None:
    auth = authorizer([], early=("CONTROLLER",), loaded=False)
    futures = auth.start(["PLAINTEXT", "CONTROLLER"])
    error = RuntimeError("metadata load failed")
    auth.complete_initial_load(error)
    assert futures["PLAINTEXT"].exception(timeout=0) is error
    assert futures["CONTROLLER"].exception(timeout=0) is None
    assert not auth.ready  # loadingComplete stays false
    with pytest.raises(AuthorizerNotReadyError):
        decide(auth, "User:bob", OP.READ, RT.TOPIC, "foo")
    auth.complete_initial_load(RuntimeError("second"))  # already done: unchanged
    assert futures["PLAINTEXT"].exception(timeout=0) is error


def test_close_before_load_fails_the_futures_with_timeout() -> None:
    auth = authorizer([], loaded=False)
    future: Future[None] = auth.start(["PLAINTEXT"])["PLAINTEXT"]
    auth.close()
    exc = future.exception(timeout=0)
    assert isinstance(exc, TimeoutError)
    assert str(exc) == "The authorizer was closed before the initial load could complete."


# ---- §5.1 pre-checks (V15) -------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", [PT.PREFIXED, PT.ANY, PT.MATCH, PT.UNKNOWN])
def test_v15_non_literal_action_is_rejected_before_the_super_user_check(pattern: PT) -> None:
    message = f"Only literal resources are supported. Got: {pattern.name}"
    auth = authorizer([], super_users=("User:superman",), loaded=False)
    for who in (
        "User:superman",
        "User:alice",
    ):  # super user: still rejected; not loaded: this check comes first
        with pytest.raises(InvalidActionError, match=message):
            auth.authorize(ctx(who), [Action(OP.READ, RT.TOPIC, "something", pattern)])
        with pytest.raises(InvalidActionError, match=message):
            auth.explain(ctx(who), Action(OP.READ, RT.TOPIC, "something", pattern))
    # One bad action fails the batch, wherever it is.
    with pytest.raises(InvalidActionError):
        auth.authorize(ctx("User:superman"), [Action(OP.READ, RT.TOPIC, "a"), Action(OP.READ, RT.TOPIC, "b", pattern)])
    assert isinstance(InvalidActionError("x"), ValueError)  # Kafka: IllegalArgumentException


def test_super_user_is_exact_and_case_sensitive() -> None:
    deny_all = [acl(RT.TOPIC, "foo", PT.LITERAL, "User:*", OP.ALL, PERM.DENY)]
    auth = authorizer(deny_all, super_users=("User:superuser1", "User:superuser2"))  # V19
    assert decide(auth, "User:superuser1", OP.READ, RT.TOPIC, "foo") is ALLOWED
    assert decide(auth, "User:alice", OP.READ, RT.TOPIC, "foo") is DENIED
    assert decide(auth, "user:superuser1", OP.READ, RT.TOPIC, "foo") is DENIED
    assert decide(auth, "Group:superuser1", OP.READ, RT.TOPIC, "foo") is DENIED


def test_request_principal_user_star_is_an_ordinary_principal() -> None:
    """§7.1 project decision: it matches ACLs whose principal is `User:*` (Kafka would throw)."""
    auth = authorizer(
        [
            acl(RT.TOPIC, "t", PT.LITERAL, "User:*", OP.READ, PERM.ALLOW),
            acl(RT.TOPIC, "u", PT.LITERAL, "User:alice", OP.READ, PERM.ALLOW),
        ]
    )
    assert decide(auth, "User:*", OP.READ, RT.TOPIC, "t") is ALLOWED
    assert decide(auth, "User:*", OP.READ, RT.TOPIC, "u") is DENIED


def test_request_name_starting_with_star_is_covered_by_the_wildcard() -> None:
    """§7.1 project decision: the LITERAL `*` ACL covers `*a` (Kafka skips it)."""
    auth = authorizer(
        [
            acl(RT.TOPIC, "*", PT.LITERAL, "User:alice", OP.READ, PERM.ALLOW),
            acl(RT.GROUP, "*", PT.LITERAL, "User:*", OP.ALL, PERM.DENY),
        ],
        allow_everyone=True,
    )
    assert decide(auth, "User:alice", OP.READ, RT.TOPIC, "*a") is ALLOWED
    assert decide(auth, "User:alice", OP.READ, RT.GROUP, "*g1") is DENIED


def test_colon_less_principal_never_matches_but_is_a_candidate() -> None:
    """D15/D15b with the project's decision: no exception, no match, the default is not used."""
    auth = authorizer([acl(RT.TOPIC, "foo", PT.LITERAL, "bob", OP.READ, PERM.ALLOW)], allow_everyone=True)
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "foo") is DENIED
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "bar") is ALLOWED
    assert str(auth.explain(ctx("User:bob"), Action(OP.READ, RT.TOPIC, "foo")).rule) == "DefaultDeny"


def test_names_below_star_follow_the_clean_rules() -> None:
    """§7 D10a/D10b: Kafka throws or hangs; the project applies §5."""
    auth = authorizer(
        [
            acl(RT.GROUP, "!abX", PT.LITERAL, "User:bob", OP.READ, PERM.ALLOW),
            acl(RT.GROUP, "!y", PT.LITERAL, "User:bob", OP.READ, PERM.ALLOW),
        ]
    )
    assert decide(auth, "User:bob", OP.READ, RT.GROUP, "!abc") is DENIED
    assert decide(auth, "User:bob", OP.READ, RT.GROUP, "!x") is DENIED
    assert decide(auth, "User:bob", OP.READ, RT.GROUP, "!y") is ALLOWED


def test_client_address_is_compared_in_java_text_form() -> None:
    """D14/D14b and V09: `::1` is `0:0:0:0:0:0:0:1`; IPv4-mapped IPv6 is the IPv4 text."""
    auth = authorizer(
        [
            acl(RT.TOPIC, "t", PT.LITERAL, "User:bob", OP.READ, PERM.ALLOW, host="0:0:0:0:0:0:0:1"),
            acl(RT.TOPIC, "u", PT.LITERAL, "User:bob", OP.READ, PERM.ALLOW, host="::1"),
            acl(RT.TOPIC, "v", PT.LITERAL, "User:bob", OP.READ, PERM.ALLOW, host="10.0.0.1"),
            acl(RT.TOPIC, "w", PT.LITERAL, "User:bob", OP.READ, PERM.ALLOW, host="localhost"),
        ]
    )
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "t", address="::1") is ALLOWED
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "u", address="::1") is DENIED
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "v", address="::ffff:10.0.0.1") is ALLOWED
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "v", address="10.0.0.2") is DENIED
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "w", address="127.0.0.1") is DENIED


# ---- §8 authorizeByResourceType --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "rtype", "message"),
    [
        (OP.READ, RT.ANY, "Must specify a non-filter resource type for authorizeByResourceType"),
        (OP.READ, RT.UNKNOWN, "Unknown resource type"),
        (OP.ANY, RT.TOPIC, "Must specify a non-filter operation type for authorizeByResourceType"),
        (OP.UNKNOWN, RT.TOPIC, "Unknown operation type"),
        (OP.ANY, RT.ANY, "Must specify a non-filter resource type for authorizeByResourceType"),  # type first
        (OP.UNKNOWN, RT.UNKNOWN, "Unknown resource type"),
        (OP.ANY, RT.UNKNOWN, "Unknown resource type"),
    ],
)
def test_by_resource_type_argument_checks(op: OP, rtype: RT, message: str) -> None:
    for auth in (authorizer([], super_users=("User:superman",)), authorizer([], loaded=False)):
        for who in ("User:superman", "User:alice"):  # before the super-user probe and the not-ready check
            with pytest.raises(InvalidActionError) as info:
                auth.authorize_by_resource_type(ctx(who), op, rtype)
            assert str(info.value) == message


def by_type(
    auth: StandardAuthorizer, op: OP, rtype: RT, principal: str = "User:user1", address: str = "192.168.1.1"
) -> AuthorizationResult:
    return auth.authorize_by_resource_type(ctx(principal, address), op, rtype)


def test_v22_prefixed_deny_dominates() -> None:
    steps = [
        ("abcde", PERM.ALLOW, ALLOWED),
        ("abcd", PERM.DENY, DENIED),
        ("abc", PERM.ALLOW, ALLOWED),
        ("a", PERM.DENY, DENIED),
        ("ab", PERM.ALLOW, DENIED),
    ]
    auth = authorizer([])
    for i, (name, perm, expected) in enumerate(steps):
        auth.apply_changes([], [(f"v22-{i}", acl(RT.GROUP, name, PT.PREFIXED, "User:user1", OP.READ, perm))])
        assert by_type(auth, OP.READ, RT.GROUP) is expected, f"after adding {name} {perm.name}"


def test_v23_wildcard_deny_dominates() -> None:
    steps = [
        (acl(RT.GROUP, "hello", PT.PREFIXED, "User:user1", OP.WRITE, PERM.ALLOW), ALLOWED),
        (acl(RT.GROUP, "*", PT.LITERAL, "User:user1", OP.WRITE, PERM.DENY), DENIED),
        (acl(RT.GROUP, "*", PT.LITERAL, "User:user1", OP.WRITE, PERM.ALLOW), DENIED),
        (acl(RT.GROUP, "aloha", PT.LITERAL, "User:user1", OP.WRITE, PERM.ALLOW), DENIED),
    ]
    auth = authorizer([])
    for i, (new, expected) in enumerate(steps):
        auth.apply_changes([], [(f"v23-{i}", new)])
        assert by_type(auth, OP.WRITE, RT.GROUP) is expected, str(new)


def test_by_resource_type_scan_details() -> None:
    # V24: ALL in the scan; D07: no implication in the scan (but the probe has it).
    auth = authorizer(
        [
            acl(RT.TOPIC, "sb1", PT.LITERAL, "User:user1", OP.WRITE, PERM.DENY),
            acl(RT.TOPIC, "sb1", PT.LITERAL, "User:user1", OP.ALL, PERM.ALLOW),
        ]
    )
    assert by_type(auth, OP.READ, RT.TOPIC) is ALLOWED
    auth.apply_changes([], [("all-deny", acl(RT.TOPIC, "sb1", PT.LITERAL, "User:user1", OP.ALL, PERM.DENY))])
    assert by_type(auth, OP.READ, RT.TOPIC) is DENIED
    d07 = authorizer([acl(RT.TOPIC, "foo", PT.LITERAL, "User:alice", OP.READ, PERM.ALLOW)])
    assert by_type(d07, OP.DESCRIBE, RT.TOPIC, "User:alice") is DENIED
    assert decide(d07, "User:alice", OP.DESCRIBE, RT.TOPIC, "foo") is ALLOWED
    # D08: a LITERAL deny does not dominate a PREFIXED allow of the same name; the other way round it does.
    d08 = authorizer(
        [
            acl(RT.TOPIC, "foo", PT.PREFIXED, "User:alice", OP.READ, PERM.ALLOW),
            acl(RT.TOPIC, "foo", PT.LITERAL, "User:alice", OP.READ, PERM.DENY),
        ]
    )
    assert by_type(d08, OP.READ, RT.TOPIC, "User:alice") is ALLOWED
    d08b = authorizer(
        [
            acl(RT.TOPIC, "foo", PT.LITERAL, "User:alice", OP.READ, PERM.ALLOW),
            acl(RT.TOPIC, "foo", PT.PREFIXED, "User:alice", OP.READ, PERM.DENY),
        ]
    )
    assert by_type(d08b, OP.READ, RT.TOPIC, "User:alice") is DENIED
    # D09/D09b: the "hardcode" probe with allow.everyone.
    d09 = authorizer([acl(RT.TOPIC, "x", PT.LITERAL, "User:alice", OP.ALL, PERM.DENY)], allow_everyone=True)
    assert by_type(d09, OP.READ, RT.TOPIC, "User:alice") is ALLOWED
    d09b = authorizer([acl(RT.TOPIC, "h", PT.PREFIXED, "User:bob", OP.READ, PERM.ALLOW)], allow_everyone=True)
    assert by_type(d09b, OP.READ, RT.TOPIC, "User:alice") is DENIED
    # V26: allow.everyone and no ACLs.
    assert by_type(authorizer([], allow_everyone=True), OP.WRITE, RT.TOPIC, "User:alice") is ALLOWED


def test_v27_unrelated_deny_does_not_dominate() -> None:
    h1, h2 = "192.168.1.1", "192.168.1.2"
    auth = authorizer(
        [
            acl(RT.TOPIC, "sb1", PT.LITERAL, "User:user1", OP.READ, PERM.DENY, host=h1),
            acl(RT.TOPIC, "sb1", PT.LITERAL, "User:user2", OP.READ, PERM.DENY, host=h1),
            acl(RT.TOPIC, "sb1", PT.LITERAL, "User:user1", OP.WRITE, PERM.DENY, host=h2),
            acl(RT.TOPIC, "sb1", PT.LITERAL, "User:user2", OP.READ, PERM.DENY, host=h2),
            acl(RT.TOPIC, "sb1", PT.LITERAL, "User:user1", OP.READ, PERM.ALLOW, host=h2),
            acl(RT.TOPIC, "sb2", PT.LITERAL, "User:user1", OP.READ, PERM.DENY, host=h2),
            acl(RT.GROUP, "s", PT.PREFIXED, "User:user1", OP.READ, PERM.DENY, host=h2),
        ]
    )
    for rtype in (RT.TOPIC, RT.GROUP, RT.TRANSACTIONAL_ID, RT.CLUSTER):
        assert by_type(auth, OP.READ, rtype, address=h1) is DENIED, rtype.name
    assert by_type(auth, OP.READ, RT.TOPIC, address=h2) is ALLOWED


def test_by_resource_type_memo_is_shared_by_hosts_no_acl_names(monkeypatch: pytest.MonkeyPatch) -> None:
    # A caller asking about itself picks its client address: a new one on each call must not make each call scan
    # every User:* ACL of the type (the memo's key takes one host for all the hosts no grant names).
    from kraftacl.authorizer.decision import by_resource_type
    from kraftacl.authorizer.index.views import Grants

    scans = 0
    real_scan = by_resource_type._Query.scan

    def counted(query: by_resource_type._Query) -> by_resource_type.Witness | None:
        nonlocal scans
        scans += 1
        return real_scan(query)

    monkeypatch.setattr(by_resource_type._Query, "scan", counted)
    h1 = "10.9.9.9"
    public = [acl(RT.TOPIC, f"pub-{i}", PT.LITERAL, "User:*", OP.READ, PERM.ALLOW) for i in range(200)]
    auth = authorizer([*public, acl(RT.TOPIC, "w", PT.LITERAL, "User:*", OP.WRITE, PERM.ALLOW, host=h1)])
    for i in range(100):
        assert by_type(auth, OP.WRITE, RT.TOPIC, "User:alice", f"10.0.{i // 256}.{i % 256}") is DENIED
    assert scans == 1
    assert by_type(auth, OP.WRITE, RT.TOPIC, "User:alice", h1) is ALLOWED  # a host an ACL names keeps its own key
    assert scans == 2
    # the shared facts follow changes, for every host no grant names
    auth.apply_changes([], [("any-host", acl(RT.TOPIC, "w2", PT.LITERAL, "User:*", OP.WRITE, PERM.ALLOW))])
    assert by_type(auth, OP.WRITE, RT.TOPIC, "User:alice", "10.1.0.1") is ALLOWED
    auth.apply_changes(["any-host"], [])
    assert by_type(auth, OP.WRITE, RT.TOPIC, "User:alice", "10.1.0.2") is DENIED
    assert by_type(auth, OP.WRITE, RT.TOPIC, "User:alice", h1) is ALLOWED
    # a host that a new ACL names stops sharing the key
    named = acl(RT.TOPIC, "w3", PT.LITERAL, "User:alice", OP.WRITE, PERM.ALLOW, host="10.0.0.7")
    auth.apply_changes([], [("h2", named)])
    assert by_type(auth, OP.WRITE, RT.TOPIC, "User:alice", "10.0.0.7") is ALLOWED
    assert by_type(auth, OP.WRITE, RT.TOPIC, "User:alice", "10.0.0.8") is DENIED
    # the hosts a view names are walked once, then carried to its next versions (a change walks no large view)
    from kraftacl.authorizer.index import trie

    walks = 0
    real_items = trie.items

    def walked(node: trie.Node | None) -> Iterator[tuple[str, Grants]]:
        nonlocal walks
        walks += 1
        return real_items(node)

    monkeypatch.setattr(trie, "items", walked)
    for i in range(5):
        auth.apply_changes([], [(f"more-{i}", acl(RT.TOPIC, f"m{i}", PT.LITERAL, "User:*", OP.READ, PERM.ALLOW))])
        assert by_type(auth, OP.WRITE, RT.TOPIC, "User:alice", f"10.2.0.{i}") is DENIED
    assert walks == 0
    auth.apply_changes([], [("h3", acl(RT.TOPIC, "w4", PT.LITERAL, "User:*", OP.WRITE, PERM.ALLOW, host="10.3.0.1"))])
    assert by_type(auth, OP.WRITE, RT.TOPIC, "User:alice", "10.3.0.1") is ALLOWED
    assert by_type(auth, OP.WRITE, RT.TOPIC, "User:alice", "10.3.0.2") is DENIED


# ---- §13 authorized operations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rtype", "bits"),
    [
        (RT.TOPIC, 3576),
        (RT.GROUP, 3400),
        (RT.CLUSTER, 8096),
        (RT.TRANSACTIONAL_ID, 272),
        (RT.DELEGATION_TOKEN, 256),
        (RT.USER, 24576),
    ],
)
def test_authorized_operations_all_allowed(rtype: RT, bits: int) -> None:
    assert (
        authorizer([], super_users=("User:superman",)).authorized_operations(ctx("User:superman"), rtype, "x") == bits
    )
    assert authorizer([], allow_everyone=True).authorized_operations(ctx("User:bob"), rtype, "x") == bits
    assert authorizer([]).authorized_operations(ctx("User:bob"), rtype, "x") == 0


def test_authorized_operations_follow_authorize() -> None:
    auth = authorizer([acl(RT.CLUSTER, "kafka-cluster", PT.LITERAL, "User:alice", OP.ALTER, PERM.ALLOW)])  # V18a
    assert auth.authorized_operations(ctx("User:alice"), RT.CLUSTER, "kafka-cluster") == (1 << 7) | (1 << 8)
    auth = authorizer(
        [
            acl(RT.CLUSTER, "kafka-cluster", PT.LITERAL, "User:alice", OP.DESCRIBE, PERM.DENY),
            acl(RT.CLUSTER, "kafka-cluster", PT.LITERAL, "User:alice", OP.ALL, PERM.ALLOW),
        ]
    )  # V18b
    assert auth.authorized_operations(ctx("User:alice"), RT.CLUSTER, "kafka-cluster") == 8096 & ~(1 << 8)
    for rtype in (RT.ANY, RT.UNKNOWN):
        with pytest.raises(InvalidActionError):
            auth.authorized_operations(ctx("User:alice"), rtype, "x")


# ---- §5.6 audit log --------------------------------------------------------------------------------------

BOB_DENY = acl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", OP.READ, PERM.DENY)
BOB_ALLOW = acl(RT.TOPIC, "green", PT.PREFIXED, "User:bob", OP.READ, PERM.ALLOW)


@pytest.fixture
def audit_records(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG, logger=AUDIT)
    yield caplog


def audit_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == AUDIT]


def test_denied_action_logs_at_info(audit_records: pytest.LogCaptureFixture) -> None:
    auth = authorizer([BOB_DENY, BOB_ALLOW])
    assert auth.authorize(ctx("User:bob"), [Action(OP.READ, RT.TOPIC, "foo")]) == [DENIED]
    assert audit_lines(audit_records) == [
        (
            logging.INFO,
            "Principal = User:bob is Denied operation = READ from host = 10.0.0.1 on resource = "
            "Topic:LITERAL:foo for request = Fetch with resourceRefCount = 1 based on rule "
            "MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=foo, patternType=LITERAL, "
            "principal=User:bob, host=*, operation=READ, permissionType=DENY))",
        )
    ]


def test_allowed_action_logs_at_debug(audit_records: pytest.LogCaptureFixture) -> None:
    auth = authorizer([BOB_DENY, BOB_ALLOW])
    assert auth.authorize(ctx("User:bob"), [Action(OP.READ, RT.TOPIC, "green1", ref_count=3)]) == [ALLOWED]
    assert audit_lines(audit_records) == [
        (
            logging.DEBUG,
            "Principal = User:bob is Allowed operation = READ from host = 10.0.0.1 on resource = "
            "Topic:LITERAL:green1 for request = Fetch with resourceRefCount = 3 based on rule "
            "MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=green, patternType=PREFIXED, "
            "principal=User:bob, host=*, operation=READ, permissionType=ALLOW))",
        )
    ]


def test_audit_lines_for_default_and_super_user_rules(audit_records: pytest.LogCaptureFixture) -> None:
    auth = authorizer([BOB_DENY], super_users=("User:superman",))
    auth.authorize(
        ctx("User:alice", "::1", request="Metadata"),
        [Action(OP.DESCRIBE, RT.TRANSACTIONAL_ID, "tx"), Action(OP.WRITE, RT.TOPIC, "foo")],
    )
    auth.authorize(ctx("User:superman", request="Produce"), [Action(OP.WRITE, RT.GROUP, "g")])
    open_auth = authorizer([], allow_everyone=True)
    open_auth.authorize(ctx("User:carol", request="Fetch"), [Action(OP.READ, RT.DELEGATION_TOKEN, "tok")])
    assert audit_lines(audit_records) == [
        (
            logging.INFO,
            "Principal = User:alice is Denied operation = DESCRIBE from host = 0:0:0:0:0:0:0:1 on resource "
            "= TransactionalId:LITERAL:tx for request = Metadata with resourceRefCount = 1 based on rule "
            "DefaultDeny",
        ),
        (
            logging.INFO,
            "Principal = User:alice is Denied operation = WRITE from host = 0:0:0:0:0:0:0:1 on resource = "
            "Topic:LITERAL:foo for request = Metadata with resourceRefCount = 1 based on rule DefaultDeny",
        ),
        (
            logging.DEBUG,
            "Principal = User:superman is Allowed operation = WRITE from host = 10.0.0.1 on resource = "
            "Group:LITERAL:g for request = Produce with resourceRefCount = 1 based on rule SuperUser",
        ),
        (
            logging.DEBUG,
            "Principal = User:carol is Allowed operation = READ from host = 10.0.0.1 on resource = "
            "DelegationToken:LITERAL:tok for request = Fetch with resourceRefCount = 1 based on rule "
            "DefaultAllow",
        ),
    ]


def test_unflagged_decisions_log_at_trace_only(caplog: pytest.LogCaptureFixture) -> None:
    auth = authorizer([BOB_DENY, BOB_ALLOW])
    quiet = [
        Action(OP.READ, RT.TOPIC, "foo", log_if_denied=False),
        Action(OP.READ, RT.TOPIC, "green1", log_if_allowed=False),
    ]
    caplog.set_level(logging.DEBUG, logger=AUDIT)
    assert auth.authorize(ctx("User:bob"), quiet) == [DENIED, ALLOWED]
    assert audit_lines(caplog) == []
    caplog.set_level(TRACE, logger=AUDIT)
    auth.authorize(ctx("User:bob"), quiet)
    lines = audit_lines(caplog)
    assert [level for level, _ in lines] == [TRACE, TRACE]
    assert "is Denied operation = READ" in lines[0][1] and "is Allowed operation = READ" in lines[1][1]


def test_by_resource_type_probe_is_audited_like_kafka(audit_records: pytest.LogCaptureFixture) -> None:
    """§8 step 2: the probe is (op, T, "hardcode"), refCount 0, logIfAllowed, not logIfDenied."""
    authorizer([], allow_everyone=True).authorize_by_resource_type(ctx("User:alice"), OP.WRITE, RT.TOPIC)
    authorizer([]).authorize_by_resource_type(ctx("User:alice"), OP.WRITE, RT.TOPIC)
    assert audit_lines(audit_records) == [
        (
            logging.DEBUG,
            "Principal = User:alice is Allowed operation = WRITE from host = 10.0.0.1 on resource = "
            "Topic:LITERAL:hardcode for request = Fetch with resourceRefCount = 0 based on rule "
            "DefaultAllow",
        ),
    ]


# ---- explain() -------------------------------------------------------------------------------------------


def explain(auth: StandardAuthorizer, principal: str, op: OP, rtype: RT, name: str) -> tuple[str, str]:
    decision = auth.explain(ctx(principal), Action(op, rtype, name))
    return decision.result.name, str(decision.rule)


def test_explain_rules() -> None:
    foo_deny = acl(RT.TOPIC, "foo", PT.LITERAL, "User:alice", OP.READ, PERM.DENY)
    fo_deny = acl(RT.TOPIC, "fo", PT.PREFIXED, "User:*", OP.ALL, PERM.DENY)
    foo_allow = acl(RT.TOPIC, "foo", PT.LITERAL, "User:alice", OP.WRITE, PERM.ALLOW)
    f_allow = acl(RT.TOPIC, "f", PT.PREFIXED, "User:alice", OP.WRITE, PERM.ALLOW)
    star_allow = acl(RT.TOPIC, "*", PT.LITERAL, "User:alice", OP.ALTER, PERM.ALLOW)
    auth = authorizer([foo_deny, fo_deny, foo_allow, f_allow, star_allow], super_users=("User:superman",))
    assert explain(auth, "User:superman", OP.READ, RT.TOPIC, "foo") == ("ALLOWED", "SuperUser")
    assert explain(auth, "User:alice", OP.READ, RT.GROUP, "foo") == ("DENIED", "DefaultDeny")  # no candidate
    assert explain(auth, "User:alice", OP.DELETE, RT.TOPIC, "bar") == (
        "DENIED",
        "DefaultDeny",
    )  # none applies
    # DENY wins; the first applying DENY in index order (name descending) is named: `foo` before `fo`.
    assert explain(auth, "User:alice", OP.READ, RT.TOPIC, "foo") == ("DENIED", f"MatchingAcl(acl={foo_deny})")
    assert explain(auth, "User:bob", OP.READ, RT.TOPIC, "foo") == ("DENIED", f"MatchingAcl(acl={fo_deny})")
    # ALLOW: the last applying ALLOW seen in the scan (the wildcard comes last).
    assert explain(auth, "User:alice", OP.WRITE, RT.TOPIC, "fxx") == (
        "ALLOWED",
        f"MatchingAcl(acl={f_allow})",
    )
    assert explain(auth, "User:alice", OP.DESCRIBE, RT.TOPIC, "fxx") == (
        "ALLOWED",
        f"MatchingAcl(acl={star_allow})",
    )
    assert explain(auth, "User:alice", OP.WRITE, RT.TOPIC, "foo") == ("DENIED", f"MatchingAcl(acl={fo_deny})")
    open_auth = authorizer([foo_deny], allow_everyone=True)
    assert explain(open_auth, "User:alice", OP.READ, RT.TOPIC, "bar") == ("ALLOWED", "DefaultAllow")
    assert explain(open_auth, "User:bob", OP.READ, RT.TOPIC, "foo") == ("DENIED", "DefaultDeny")
    unknown_perm = acl(RT.TOPIC, "foo", PT.LITERAL, "User:alice", OP.READ, PERM.UNKNOWN)  # D13
    assert explain(authorizer([unknown_perm]), "User:alice", OP.READ, RT.TOPIC, "foo") == (
        "DENIED",
        f"MatchingAcl(acl={unknown_perm})",
    )


EMPTY_NAME_CASES = {
    # N = "": pass 1 visits the "" ACLs first, pass 2 the wildcard: Kafka names the "" DENY.
    "empty-request-name": (
        [
            acl(RT.TOPIC, "", PT.LITERAL, "User:alice", OP.READ, PERM.DENY),
            acl(RT.TOPIC, "*", PT.LITERAL, "User:alice", OP.READ, PERM.DENY),
        ],
        "",
        0,
    ),
    # N = "foo": `bar` diverges, pass 1 re-seeks to "" and finds the "" PREFIXED DENY before `*`.
    "empty-prefix-deny": (
        [
            acl(RT.TOPIC, "", PT.PREFIXED, "User:alice", OP.READ, PERM.DENY),
            acl(RT.TOPIC, "*", PT.LITERAL, "User:alice", OP.READ, PERM.DENY),
            acl(RT.TOPIC, "bar", PT.LITERAL, "User:bob", OP.READ, PERM.ALLOW),
        ],
        "foo",
        0,
    ),
    # Pass 2 re-seeks past `*` PREFIXED to ("", LITERAL), skipping the "" UNKNOWN-pattern ACL: the
    # last ALLOW Kafka sees is the wildcard.
    "empty-unknown-pattern-allow": (
        [
            acl(RT.TOPIC, "", PT.UNKNOWN, "User:alice", OP.READ, PERM.ALLOW),
            acl(RT.TOPIC, "*", PT.LITERAL, "User:alice", OP.READ, PERM.ALLOW),
            acl(RT.TOPIC, "*", PT.PREFIXED, "User:bob", OP.READ, PERM.ALLOW),
        ],
        "foo",
        1,
    ),
}


@pytest.mark.parametrize("case", sorted(EMPTY_NAME_CASES))
def test_explain_names_the_acl_kafka_finds(case: str, caplog: pytest.LogCaptureFixture) -> None:
    acls, name, deciding = EMPTY_NAME_CASES[case]
    auth = authorizer(acls)
    expected = acls[deciding]
    decision = auth.explain(ctx("User:alice"), Action(OP.READ, RT.TOPIC, name))
    assert decision.result is (ALLOWED if expected.permission_type is PERM.ALLOW else DENIED)
    caplog.set_level(logging.DEBUG, logger=AUDIT)
    auth.authorize(ctx("User:alice"), [Action(OP.READ, RT.TOPIC, name)])
    assert audit_lines(caplog)[0][1].endswith(f"based on rule MatchingAcl(acl={expected})")
    assert decision.rule.acl == expected


# ---- updates, acl_count, KIP-801 record order ------------------------------------------------------------


def test_acl_count_follows_updates() -> None:
    auth = authorizer([])
    assert auth.acl_count() == 0
    auth.load_snapshot({"a": BOB_DENY, "b": BOB_ALLOW})
    assert auth.acl_count() == 2
    auth.apply_changes(["a"], [("c", BOB_DENY), ("d", acl(RT.GROUP, "g", PT.LITERAL, "User:x", OP.READ, PERM.ALLOW))])
    assert auth.acl_count() == 3
    auth.apply_changes(["b", "c", "d"], [])
    assert auth.acl_count() == 0
    assert auth.acls(AclBindingFilter()) == []


def test_rejected_updates_leave_the_state_unchanged() -> None:
    """§4.6: duplicate id, duplicate content and unknown id are errors; a failed batch publishes nothing."""
    auth = authorizer([BOB_DENY])
    before = auth.index
    other = acl(RT.GROUP, "g", PT.LITERAL, "User:x", OP.READ, PERM.ALLOW)
    with pytest.raises(ImageError):
        auth.apply_changes([], [("new", other), ("id0", BOB_ALLOW)])  # id0 exists
    with pytest.raises(ImageError):
        auth.apply_changes([], [("new", other), ("dup", BOB_DENY)])  # same content as id0
    with pytest.raises(ImageError):
        auth.apply_changes(["missing"], [("new", other)])
    with pytest.raises(ImageError):
        auth.apply_changes([], [("a", other), ("b", other)])  # duplicate content within the batch
    with pytest.raises(ImageError):
        auth.load_snapshot([("a", other), ("b", other)])
    assert auth.index is before
    assert auth.acls(AclBindingFilter()) == [BOB_DENY]
    auth.apply_changes(["id0"], [("again", BOB_DENY)])  # remove and re-add the same content in one batch
    assert dict(auth.index.by_id) == {"again": BOB_DENY}
    assert dict(before.by_id) == {"id0": BOB_DENY}


KIP801_DENY = acl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", OP.ALL, PERM.DENY)
KIP801_ALLOW = acl(RT.TOPIC, "*", PT.LITERAL, "User:bob", OP.ALL, PERM.ALLOW)


def test_kip801_deny_then_allow_in_log_order() -> None:
    """KIP-801 "Ordering": 1. deny bob foo, 2. allow bob all topics: bob may use every topic except foo."""
    auth = authorizer([])
    auth.apply_changes([], [("r1", KIP801_DENY)])
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "foo") is DENIED
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "bar") is DENIED
    auth.apply_changes([], [("r2", KIP801_ALLOW)])
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "foo") is DENIED
    assert decide(auth, "User:bob", OP.READ, RT.TOPIC, "bar") is ALLOWED
    both = authorizer([])
    both.apply_changes([], [("r1", KIP801_DENY), ("r2", KIP801_ALLOW)])  # one batch: same net effect
    assert both.authorize(ctx("User:bob"), [Action(OP.READ, RT.TOPIC, "foo"), Action(OP.READ, RT.TOPIC, "bar")]) == [
        DENIED,
        ALLOWED,
    ]


# ---- concurrency: every call sees one batch boundary -----------------------------------------------------


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Make the interpreter switch threads very often, so readers land inside the writer's batches."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


READER_FAILED = "a reader failed"


def run_readers(write: Callable[[set[object]], None], check: Callable[[], object], readers: int = 4) -> set[object]:
    """Run `write(seen)` here while `readers` threads call `check()` and add each result to `seen`.

    Returns every result observed; any reader error (a failed check) fails the test.
    """
    done = threading.Event()
    failures: list[BaseException] = []
    seen: set[object] = set()

    def reader() -> None:
        try:
            while not done.is_set():
                seen.add(check())
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)
            seen.add(READER_FAILED)

    threads = [threading.Thread(target=reader, daemon=True) for _ in range(readers)]
    for t in threads:
        t.start()
    try:
        write(seen)
    finally:
        done.set()
        for t in threads:
            t.join(timeout=30)
    assert not failures, failures[:3]
    return seen


def keep_writing(step: Callable[[int], None], seen: set[object], wanted: set[object], minimum: int) -> None:
    """Call `step(i)` at least `minimum` times and until the readers have seen `wanted` (at most 20 s)."""
    deadline = time.monotonic() + 20
    for i in itertools.count():
        if READER_FAILED in seen or (i >= minimum and (wanted <= seen or time.monotonic() > deadline)):
            return
        step(i)
        if i % 2:
            time.sleep(0)  # let the readers in; the other half of the batches come back to back


def test_readers_never_see_a_partial_batch(fast_switching: None) -> None:
    """State A allows x and denies y for alice; state B the reverse. One authorize call with both actions may
    only ever see (ALLOWED, DENIED) or (DENIED, ALLOWED); a mix means a batch was seen half applied."""
    deny_x = acl(RT.TOPIC, "x", PT.LITERAL, "User:alice", OP.READ, PERM.DENY)
    deny_y = acl(RT.TOPIC, "y", PT.LITERAL, "User:alice", OP.READ, PERM.DENY)
    base = [
        acl(RT.TOPIC, "x", PT.LITERAL, "User:*", OP.READ, PERM.ALLOW),
        acl(RT.TOPIC, "y", PT.PREFIXED, "User:*", OP.READ, PERM.ALLOW),
    ]
    filler = [acl(RT.TOPIC, f"filler-{i}", PT.PREFIXED, f"User:u{i % 7}", OP.WRITE, PERM.ALLOW) for i in range(60)]
    auth = authorizer(base)
    auth.apply_changes([], [("deny", deny_y)] + [(f"f0-{i}", f) for i, f in enumerate(filler)])
    actions = [Action(OP.READ, RT.TOPIC, "x"), Action(OP.READ, RT.TOPIC, "y")]
    state_a, state_b = (ALLOWED, DENIED), (DENIED, ALLOWED)
    alice = ctx("User:alice")

    def check() -> tuple[AuthorizationResult, ...]:
        seen = tuple(auth.authorize(alice, actions))
        assert seen in (state_a, state_b), f"mixed state {seen}"
        return seen

    def flip(i: int) -> None:
        # Each flip is one batch: remove the current DENY and all filler, add the other DENY and new filler.
        nxt = deny_x if i % 2 == 0 else deny_y
        removed = ["deny"] + [f"f{i}-{k}" for k in range(len(filler))]
        added = [("deny", nxt)] + [(f"f{i + 1}-{k}", f) for k, f in enumerate(filler)]
        if i % 4 >= 2:
            added.reverse()  # the order inside a batch must not matter either
        auth.apply_changes(removed, added)

    seen = run_readers(lambda seen: keep_writing(flip, seen, {state_a, state_b}, 200), check)
    assert seen == {state_a, state_b}, "the readers did not observe both states"


def test_readers_never_see_the_allow_without_the_deny(fast_switching: None) -> None:
    """KIP-801 ordering under load: records applied one at a time in log order never expose foo to bob."""
    auth = authorizer([])
    bob = ctx("User:bob")
    actions = [Action(OP.READ, RT.TOPIC, "foo"), Action(OP.READ, RT.TOPIC, "bar")]

    def check() -> tuple[AuthorizationResult, ...]:
        seen = tuple(auth.authorize(bob, actions))
        assert seen[0] is DENIED, "bob could read foo"
        return seen

    def step(i: int) -> None:
        # Records in log order, one batch each: +deny, +allow, -allow, -deny, ...
        if i % 4 == 0:
            auth.apply_changes([], [("r1", KIP801_DENY)])
        elif i % 4 == 1:
            auth.apply_changes([], [("r2", KIP801_ALLOW)])
        elif i % 4 == 2:
            auth.apply_changes(["r2"], [])
        else:
            auth.apply_changes(["r1"], [])

    both, none = (DENIED, ALLOWED), (DENIED, DENIED)
    seen = run_readers(lambda seen: keep_writing(step, seen, {both, none}, 400), check)
    assert seen == {both, none}
