"""Property tests: StandardAuthorizer against the brute-force reference model in `reference.py`.

Everything is generated from small alphabets (names, principals, hosts) so that prefixes, wildcards
and principal collisions are frequent. ACLs and requests are plain tuples of enum names so that a
falsifying example prints readably; `note()` adds the ACL set and the request that disagreed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from itertools import product
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.decision.standard import Action, RequestContext, StandardAuthorizer
from kraftacl.authorizer.errors import InvalidActionError, InvalidFilterError
from kraftacl.authorizer.index import views
from kraftacl.authorizer.index.acl_index import AclIndex
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.model.filters import AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter
from tests.authorizer import reference as ref
from tests.authorizer.index.test_index_build import small_limits

# ---- alphabets --------------------------------------------------------------------------------------

# `h` and `hardcode` meet authorizeByResourceType's probe resource (§8 step 2).
NAMES = ["", "f", "fo", "foo", "foobar", "*", "*a", "bar", "b", "h", "hardcode"]
ACL_PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:alice", "Group:*", "bob", "user:alice"]
# Request principals always have a colon (Kafka's KafkaPrincipal is a (type, name) pair).
REQUEST_PRINCIPALS = [
    "User:alice",
    "User:bob",
    "User:*",
    "Group:alice",
    "Group:*",
    "user:alice",
    "User:carol",
]
SUPER_USER_CHOICES = ["User:alice", "User:bob", "User:*", "Group:*"]
ACL_HOSTS = ["*", "10.0.0.1", "10.0.0.2", "0:0:0:0:0:0:0:1", "::1", ""]
# Client address as the socket reports it -> Java's getHostAddress() text, written out by hand (§17.1).
ADDRESSES = {
    "10.0.0.1": "10.0.0.1",
    "10.0.0.2": "10.0.0.2",
    "::1": "0:0:0:0:0:0:0:1",
    "0:0:0:0:0:0:0:1": "0:0:0:0:0:0:0:1",
    "::ffff:10.0.0.1": "10.0.0.1",
}
CONCRETE_TYPES = ["TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"]
WEIGHTED_TYPES = ["TOPIC"] * 4 + ["GROUP"] * 3 + CONCRETE_TYPES
COMMON_OPS = [
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "ALL",
]
RARE_OPS = ["CLUSTER_ACTION", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS", "UNKNOWN"]

# Two kinds of ACL set, both weighted by repeating entries:
#  * broad: every type, principal, host, operation and permission of the alphabets, UNKNOWN ones included;
#  * focused: TOPIC/GROUP, alice or `User:*` from `*`, a few operations: many ACLs apply to each request,
#    so implications, DENY-wins, domination and the deciding ACL are exercised together.
names = st.one_of(st.sampled_from([*NAMES, "*"]), st.text(alphabet="fo*b!", max_size=4))
focused_names = st.one_of(st.sampled_from([*NAMES, "*"]), st.text(alphabet="fo*", max_size=3))
ACL_OPS = COMMON_OPS * 4 + ["READ", "DESCRIBE", "ALL", "WRITE"] * 2 + RARE_OPS
FOCUSED_OPS = ["READ", "WRITE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALL"]

AclSpec = tuple[str, str, str, str, str, str, str]  # type, name, pattern, principal, host, op, permission
broad_acl_specs = st.tuples(
    st.sampled_from(WEIGHTED_TYPES),
    names,
    st.sampled_from(["LITERAL"] * 5 + ["PREFIXED"] * 4 + ["UNKNOWN"]),
    st.sampled_from(["User:alice"] * 4 + ["User:bob"] * 2 + ["User:*"] * 3 + ACL_PRINCIPALS),
    st.sampled_from(["*"] * 8 + ["10.0.0.1"] * 2 + ACL_HOSTS),
    st.sampled_from(ACL_OPS),
    st.sampled_from(["ALLOW"] * 5 + ["DENY"] * 4 + ["UNKNOWN"]),
)
focused_acl_specs = st.tuples(
    st.sampled_from(["TOPIC"] * 4 + ["GROUP"]),
    focused_names,
    st.sampled_from(["LITERAL"] * 6 + ["PREFIXED"] * 6 + ["UNKNOWN"]),
    st.sampled_from(["User:alice"] * 3 + ["User:*"] * 2 + ["User:bob", "bob"]),
    st.sampled_from(["*"] * 6 + ["10.0.0.1", "10.0.0.2"]),
    st.sampled_from(FOCUSED_OPS),
    st.sampled_from(["ALLOW"] * 6 + ["DENY"] * 4 + ["UNKNOWN"]),
)
acl_specs = st.one_of(broad_acl_specs, focused_acl_specs)

Request = tuple[str, str, str, str, str]  # principal, client address, op, type, name
request_principals = st.sampled_from(["User:alice"] * 5 + ["User:bob"] * 2 + REQUEST_PRINCIPALS)
request_addresses = st.sampled_from(["10.0.0.1"] * 3 + sorted(ADDRESSES))
request_ops = st.sampled_from(COMMON_OPS * 3 + ["READ", "DESCRIBE", "DESCRIBE_CONFIGS"] * 3 + RARE_OPS + ["ANY"])
request_types = st.sampled_from(WEIGHTED_TYPES * 3 + ["UNKNOWN", "ANY"])
# A requested operation that an ALLOW of this operation also grants (§5.3), to exercise implications.
IMPLIES = {
    "READ": "DESCRIBE",
    "WRITE": "DESCRIBE",
    "DELETE": "DESCRIBE",
    "ALTER": "DESCRIBE",
    "ALTER_CONFIGS": "DESCRIBE_CONFIGS",
    "CREATE": "DESCRIBE",
    "DESCRIBE": "READ",
}

BASE = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def to_acl(spec: AclSpec) -> StandardAcl:
    rtype, name, pattern, principal, host, op, perm = spec
    return StandardAcl(
        ResourceType[rtype],
        name,
        PatternType[pattern],
        principal,
        host,
        AclOperation[op],
        AclPermissionType[perm],
    )


def fmt(spec: AclSpec) -> str:
    rtype, name, pattern, principal, host, op, perm = spec
    return f"({rtype}, {name!r}, {pattern}, {principal!r}, {host!r}, {op}, {perm})"


@dataclass(frozen=True)
class Scenario:
    """An ACL set, a configuration and some requests, printed one ACL per line."""

    acls: tuple[AclSpec, ...]
    super_users: frozenset[str]
    allow_everyone: bool
    requests: tuple[Request, ...] = field(default=())

    def __repr__(self) -> str:
        lines = [
            f"Scenario(allow_everyone={self.allow_everyone}, super_users={sorted(self.super_users)},",
            "  acls=[",
        ]
        lines += [f"    {fmt(spec)}," for spec in self.acls]
        lines.append("  ],")
        lines.append("  requests=[")
        lines += [f"    {req!r}," for req in self.requests]
        lines.append("  ])")
        return "\n".join(lines)

    def stored(self) -> list[StandardAcl]:
        return [to_acl(spec) for spec in self.acls]

    def authorizer(self) -> StandardAuthorizer:
        auth = StandardAuthorizer(config(self.super_users, self.allow_everyone))
        auth.load_snapshot({f"id{i}": to_acl(spec) for i, spec in enumerate(self.acls)})
        auth.complete_initial_load()
        return auth


def config(super_users: frozenset[str], allow_everyone: bool) -> AuthorizerConfig:
    return AuthorizerConfig(super_users=super_users, allow_everyone_if_no_acl_found=allow_everyone)


super_user_sets = st.one_of(
    st.just(frozenset[str]()),
    st.just(frozenset[str]()),
    st.just(frozenset[str]()),
    st.frozensets(st.sampled_from(SUPER_USER_CHOICES), min_size=1, max_size=2),
)


def request_strategy(acls: list[AclSpec], types: st.SearchStrategy[str]) -> st.SearchStrategy[Request]:
    """Free requests, and requests derived from one of the ACLs (its own request, then one field changed)."""
    pool = sorted({spec[1] for spec in acls} | {spec[1] + "o" for spec in acls})
    req_names = st.one_of(names, st.sampled_from(pool)) if pool else names
    free = st.tuples(request_principals, request_addresses, request_ops, types, req_names)
    if not acls:
        return free

    @st.composite
    def near(draw: st.DrawFn) -> Request:
        # An ACL's own request (matching principal and address where possible), then at most one field
        # replaced by a free one: the ACL then applies, or misses for exactly one reason.
        rtype, name, _, principal, host, op, _ = draw(st.sampled_from(acls))
        addresses = sorted(a for a, text in ADDRESSES.items() if text == host)
        fields: list[str] = [
            principal if ":" in principal else draw(request_principals),
            draw(st.sampled_from(addresses)) if addresses else draw(request_addresses),
            draw(st.sampled_from([op, op, IMPLIES.get(op, op)])),
            rtype,
            draw(st.sampled_from([name, name, name + "o", name + "bar"])),
        ]
        which = draw(st.integers(0, 7))
        if which < 5:
            fields[which] = draw([request_principals, request_addresses, request_ops, types, req_names][which])
        return (fields[0], fields[1], fields[2], fields[3], fields[4])

    return st.one_of(free, near(), near())


BOOLEANS = st.booleans()


@st.composite
def scenarios(
    draw: st.DrawFn,
    max_acls: int = 10,
    types: st.SearchStrategy[str] = request_types,
    max_requests: int = 16,
    allow_everyone: st.SearchStrategy[bool] = BOOLEANS,
) -> Scenario:
    specs = draw(st.sampled_from([acl_specs, broad_acl_specs, focused_acl_specs]))
    acls = draw(st.lists(specs, max_size=max_acls, unique=True))
    requests = draw(st.lists(request_strategy(acls, types), min_size=1, max_size=max_requests))
    return Scenario(tuple(acls), draw(super_user_sets), draw(allow_everyone), tuple(requests))


def context(request: Request) -> RequestContext:
    return RequestContext.of(request[0], request[1], request="Test")


def action(request: Request) -> Action:
    _, _, op, rtype, name = request
    return Action(AclOperation[op], ResourceType[rtype], name)


def expected_authorize(s: Scenario, acls: list[StandardAcl], request: Request) -> str:
    principal, address, op, rtype, name = request
    return ref.ref_authorize(
        acls,
        s.super_users,
        s.allow_everyone,
        principal,
        ADDRESSES[address],
        AclOperation[op],
        ResourceType[rtype],
        name,
    )


# ---- authorize ----------------------------------------------------------------------------------------


@settings(BASE, max_examples=400)
@given(scenarios())
def test_authorize_matches_reference(s: Scenario) -> None:
    note(repr(s))
    auth, acls = s.authorizer(), s.stored()
    for request in s.requests:
        want = expected_authorize(s, acls, request)
        got = auth.authorize(context(request), [action(request)])[0].name
        assert got == want, f"authorize {request}: want {want}, got {got}"
        one = auth.authorize_one(context(request), AclOperation[request[2]], ResourceType[request[3]], request[4])
        assert one.name == want, f"authorize_one {request}: want {want}, got {one.name}"
    # One call per client with every action: results in input order, all against the same state.
    for who in {(r[0], r[1]) for r in s.requests}:
        batch = [r for r in s.requests if (r[0], r[1]) == who]
        got_batch = [res.name for res in auth.authorize(context(batch[0]), [action(r) for r in batch])]
        assert got_batch == [expected_authorize(s, acls, r) for r in batch], f"batch for {who}"


@settings(BASE, max_examples=200)
@given(scenarios(types=st.sampled_from(WEIGHTED_TYPES)))
def test_explain_is_consistent_with_reference(s: Scenario) -> None:
    """explain() gives the reference decision and a rule that can justify it (§5.4-§5.6, §6)."""
    note(repr(s))
    auth, acls = s.authorizer(), s.stored()
    for request in s.requests:
        principal, address, op_name, rtype_name, name = request
        op, rtype, host = AclOperation[op_name], ResourceType[rtype_name], ADDRESSES[address]
        want = expected_authorize(s, acls, request)
        decision = auth.explain(context(request), action(request))
        assert decision.result.name == want, request
        candidates = [a for a in acls if ref.is_candidate(a, rtype, name)]
        applying = [a for a in candidates if ref.applies(a, principal, host, op)]
        kind, acl = decision.rule.kind, decision.rule.acl
        if principal in s.super_users:
            assert kind == "SuperUser", request
        elif applying:
            assert kind == "MatchingAcl" and acl in applying, request
            assert (acl.permission_type == AclPermissionType.ALLOW) == (want == ref.ALLOWED), request
            if name == "" or name[0] > "*":
                # §6: the first applying DENY in Kafka's scan order decides, else the last applying ALLOW.
                visited = [a for a in ref.ref_scan_order(acls, rtype, name) if a in applying]
                assert set(visited) == set(applying), "the §6 walk visits every candidate"
                denies = [a for a in visited if a.permission_type != AclPermissionType.ALLOW]
                kafka_choice = denies[0] if denies else visited[-1]
                assert acl == kafka_choice, f"{request}: rule {decision.rule}, Kafka names {kafka_choice}"
        else:
            assert acl is None, request
            assert kind == ("DefaultAllow" if want == ref.ALLOWED else "DefaultDeny"), request


# ---- authorized operations and authorizeByResourceType -------------------------------------------------


@settings(BASE, max_examples=200)
@given(scenarios(types=st.sampled_from(WEIGHTED_TYPES), max_requests=8))
def test_authorized_operations_matches_reference(s: Scenario) -> None:
    note(repr(s))
    auth, acls = s.authorizer(), s.stored()
    for principal, address, _, rtype, name in s.requests:
        want = ref.ref_authorized_operations(
            acls, s.super_users, s.allow_everyone, principal, ADDRESSES[address], ResourceType[rtype], name
        )
        got = auth.authorized_operations(RequestContext.of(principal, address), ResourceType[rtype], name)
        assert got == want, f"authorized_operations {(principal, address, rtype, name)}: want {want}, got {got}"


@settings(BASE, max_examples=400)
@given(scenarios(max_acls=12, allow_everyone=st.sampled_from([False, False, True])))
def test_by_resource_type_matches_reference(s: Scenario) -> None:
    note(repr(s))
    auth, acls = s.authorizer(), s.stored()
    for principal, address, op_name, rtype_name, _ in s.requests:
        op, rtype = AclOperation[op_name], ResourceType[rtype_name]
        ctx = RequestContext.of(principal, address)
        if op in (AclOperation.ANY, AclOperation.UNKNOWN) or rtype in (
            ResourceType.ANY,
            ResourceType.UNKNOWN,
        ):
            with pytest.raises(InvalidActionError):
                auth.authorize_by_resource_type(ctx, op, rtype)
            continue
        want = ref.ref_by_resource_type(acls, s.super_users, s.allow_everyone, principal, ADDRESSES[address], op, rtype)
        got = auth.authorize_by_resource_type(ctx, op, rtype).name
        assert got == want, f"by_resource_type {(principal, address, op_name, rtype_name)}: want {want}, got {got}"


# ACL sets made for the domination check: one or two types, nested names, mostly `*` hosts and READ/ALL.
BRT_NAMES = ["", "a", "ab", "abc", "abcd", "abd", "b", "*", "h", "hardcode"]
brt_acl_specs = st.tuples(
    st.sampled_from(["TOPIC"] * 3 + ["GROUP"]),
    st.one_of(st.sampled_from(BRT_NAMES), st.text(alphabet="ab", max_size=3)),
    st.sampled_from(["LITERAL"] * 5 + ["PREFIXED"] * 5 + ["UNKNOWN"]),
    st.sampled_from(["User:alice"] * 3 + ["User:*", "User:bob", "bob"]),
    st.sampled_from(["*"] * 4 + ["10.0.0.1", "10.0.0.2"]),
    st.sampled_from(["READ"] * 3 + ["ALL", "WRITE", "DESCRIBE"]),
    st.sampled_from(["ALLOW"] * 4 + ["DENY"] * 4 + ["UNKNOWN"]),
)


@settings(BASE, max_examples=400)
@given(
    st.lists(brt_acl_specs, max_size=8, unique=True),
    super_user_sets,
    st.sampled_from([False, False, True]),
    st.lists(
        st.tuples(
            st.sampled_from(["User:alice"] * 3 + ["User:bob", "User:*"]),
            st.sampled_from(["10.0.0.1", "10.0.0.2"]),
            st.sampled_from(["READ"] * 3 + ["ALL", "WRITE", "DESCRIBE"]),
            st.sampled_from(["TOPIC"] * 3 + ["GROUP"]),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_by_resource_type_domination_matches_reference(
    acls: list[AclSpec],
    super_users: frozenset[str],
    allow_everyone: bool,
    requests: list[tuple[str, str, str, str]],
) -> None:
    s = Scenario(tuple(acls), super_users, allow_everyone, tuple((*r, "") for r in requests))
    note(repr(s))
    auth, stored = s.authorizer(), s.stored()
    for principal, address, op, rtype in requests:
        want = ref.ref_by_resource_type(
            stored,
            super_users,
            allow_everyone,
            principal,
            ADDRESSES[address],
            AclOperation[op],
            ResourceType[rtype],
        )
        got = auth.authorize_by_resource_type(
            RequestContext.of(principal, address), AclOperation[op], ResourceType[rtype]
        ).name
        assert got == want, f"by_resource_type {(principal, address, op, rtype)}: want {want}, got {got}"


# ---- acls(filter) ----------------------------------------------------------------------------------------

FilterSpec = tuple[str, str | None, str, str | None, str | None, str, str]
filter_specs = st.tuples(
    st.sampled_from(["ANY"] * 4 + CONCRETE_TYPES + ["UNKNOWN"]),
    st.one_of(st.none(), names),
    st.sampled_from(["ANY", "ANY", "MATCH", "MATCH", "LITERAL", "PREFIXED", "UNKNOWN"]),
    st.one_of(st.none(), st.none(), st.sampled_from(ACL_PRINCIPALS)),
    st.one_of(st.none(), st.none(), st.sampled_from(ACL_HOSTS)),
    st.sampled_from(["ANY"] * 5 + COMMON_OPS + RARE_OPS),
    st.sampled_from(["ANY"] * 3 + ["ALLOW", "DENY", "UNKNOWN"]),
)


def to_filter(spec: FilterSpec) -> AclBindingFilter:
    rtype, name, pattern, principal, host, op, perm = spec
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType[rtype], name, PatternType[pattern]),
        AccessControlEntryFilter(principal, host, AclOperation[op], AclPermissionType[perm]),
    )


def ref_filter(spec: FilterSpec, acl: StandardAcl) -> bool:
    rtype, name, pattern, principal, host, op, perm = spec
    return ref.ref_filter_matches(
        ResourceType[rtype],
        name,
        PatternType[pattern],
        principal,
        host,
        AclOperation[op],
        AclPermissionType[perm],
        acl,
    )


def raises_in_reference(spec: FilterSpec, acls: list[StandardAcl]) -> bool:
    try:
        for acl in acls:
            ref_filter(spec, acl)
    except ValueError:
        return True
    return False


@st.composite
def filters_near(draw: st.DrawFn, acls: tuple[AclSpec, ...]) -> FilterSpec:
    """One ACL's exact filter with some fields loosened (ANY, MATCH, null, or a nearby name)."""
    rtype, name, pattern, principal, host, op, perm = draw(st.sampled_from(acls))

    def loosen(value: str | None, *looser: str | None) -> str | None:
        return draw(st.sampled_from([value, value, *looser]))

    return (
        str(loosen(rtype, "ANY")),
        loosen(name, None, name + "o", name[:-1], "*", draw(names)),
        str(loosen(pattern, "ANY", "MATCH", "MATCH")),
        loosen(principal, None, None),
        loosen(host, None, None),
        str(loosen(op, "ANY", "ANY")),
        str(loosen(perm, "ANY", "ANY")),
    )


@settings(BASE, max_examples=300)
@given(st.data(), scenarios(max_requests=1))
def test_acls_filter_matches_brute_force(data: st.DataObject, s: Scenario) -> None:
    note(repr(s))
    auth, acls = s.authorizer(), s.stored()
    filter_strategy = st.one_of(filter_specs, filters_near(s.acls), filters_near(s.acls)) if s.acls else filter_specs
    filters = data.draw(st.lists(filter_strategy, min_size=1, max_size=6), label="filters")
    for spec in filters:
        note(f"filter {spec}")
        if raises_in_reference(spec, acls):
            continue  # MATCH with a name against an UNKNOWN-pattern ACL: see the test below
        want = [acl for acl in acls if ref_filter(spec, acl)]
        got = auth.acls(to_filter(spec))
        assert sorted(map(str, got)) == sorted(map(str, want)), f"acls({spec})"
        # §9.4: listed in index order.
        assert got == sorted(want, key=ref.ref_kafka_order_key), f"acls({spec}) order"
        with_ids = auth.acls_with_ids(to_filter(spec))
        assert sorted(str(acl) for _, acl in with_ids) == sorted(map(str, want))
        assert all(auth.index.by_id[acl_id] == acl for acl_id, acl in with_ids)


@settings(BASE, max_examples=100)
@given(scenarios(max_requests=1), names, st.sampled_from(["ANY", "TOPIC", "GROUP"]))
def test_match_filter_against_unknown_pattern_acl_raises(s: Scenario, name: str, rtype: str) -> None:
    """§9.2 step 5 / F16: MATCH with a name reaching an UNKNOWN-pattern ACL of that type raises."""
    hand_made = ("TOPIC" if rtype == "ANY" else rtype, "x", "UNKNOWN", "User:bob", "*", "READ", "ALLOW")
    acls = tuple(dict.fromkeys((*s.acls, hand_made)))
    s = Scenario(acls, s.super_users, s.allow_everyone)
    note(repr(s))
    auth = s.authorizer()
    match = AclBindingFilter(ResourcePatternFilter(ResourceType[rtype], name, PatternType.MATCH))
    with pytest.raises(InvalidFilterError, match="Unsupported PatternType: UNKNOWN"):
        auth.acls(match)
    # With a null name, MATCH matches every pattern of the type, the UNKNOWN one included (F17).
    null_name = AclBindingFilter(ResourcePatternFilter(ResourceType[rtype], None, PatternType.MATCH))
    assert to_acl(hand_made) in auth.acls(null_name)


# ---- incremental updates and immutability ----------------------------------------------------------------


def decisions(auth: StandardAuthorizer, requests: list[Request]) -> list[object]:
    out: list[object] = []
    for request in requests:
        ctx, act = context(request), action(request)
        out.append(auth.authorize(ctx, [act])[0])
        if act.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            continue
        out.append(auth.authorized_operations(ctx, act.resource_type, act.resource_name))
        if act.operation not in (AclOperation.ANY, AclOperation.UNKNOWN):
            out.append(auth.authorize_by_resource_type(ctx, act.operation, act.resource_type))
    return out


def reference_decisions(
    snapshot: dict[str, AclSpec], super_users: frozenset[str], allow_everyone: bool, requests: list[Request]
) -> list[object]:
    acls = [to_acl(spec) for spec in snapshot.values()]
    out: list[object] = []
    for principal, address, op_name, rtype_name, name in requests:
        host, op, rtype = ADDRESSES[address], AclOperation[op_name], ResourceType[rtype_name]
        out.append(ref.ref_authorize(acls, super_users, allow_everyone, principal, host, op, rtype, name))
        if rtype in (ResourceType.ANY, ResourceType.UNKNOWN):
            continue
        out.append(ref.ref_authorized_operations(acls, super_users, allow_everyone, principal, host, rtype, name))
        if op not in (AclOperation.ANY, AclOperation.UNKNOWN):
            out.append(ref.ref_by_resource_type(acls, super_users, allow_everyone, principal, host, op, rtype))
    return out


def apply_both(
    auth: StandardAuthorizer, current: dict[str, AclSpec], removed: list[str], added: list[tuple[str, AclSpec]]
) -> None:
    """One batch: to the authorizer, and to `current`, the model of its ACLs by id."""
    auth.apply_changes(removed, [(acl_id, to_acl(spec)) for acl_id, spec in added])
    for acl_id in removed:
        del current[acl_id]
    current.update(added)


def with_new_ids(specs: list[AclSpec], remaining: set[AclSpec], next_id: int) -> list[tuple[str, AclSpec]]:
    """The distinct `specs` not in `remaining`, in order, with ids from `id<next_id>` on."""
    fresh = [spec for spec in dict.fromkeys(specs) if spec not in remaining]
    return [(f"id{next_id + n}", spec) for n, spec in enumerate(fresh)]


def named(results: list[object]) -> list[object]:
    return [getattr(r, "name", r) for r in results]


@settings(BASE, max_examples=150)
@given(st.data(), super_user_sets, st.booleans())
def test_incremental_updates_equal_snapshot_load(
    data: st.DataObject, super_users: frozenset[str], allow_everyone: bool
) -> None:
    """apply_changes steps == load_snapshot of the final set; every published index stays as it was."""
    auth = StandardAuthorizer(config(super_users, allow_everyone))
    auth.complete_initial_load()
    current: dict[str, AclSpec] = {}
    history: list[tuple[AclIndex, dict[str, AclSpec]]] = [(auth.index, {})]
    next_id = 0
    for step in range(data.draw(st.integers(1, 6), label="steps")):
        ids = sorted(current)
        removed: list[str] = []
        if ids:
            removed = data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids)), label=f"rm{step}")
        remaining = {spec for acl_id, spec in current.items() if acl_id not in removed}
        drawn = data.draw(st.lists(acl_specs, unique=True, max_size=6), label=f"added{step}")
        re_add: bool = bool(removed) and data.draw(st.booleans(), label=f"re-add removed content{step}")
        if re_add:
            drawn += [current[acl_id] for acl_id in removed]
        added = with_new_ids(drawn, remaining, next_id)
        next_id += len(added)
        note(f"step {step}: remove {removed}; add {[(i, fmt(spec)) for i, spec in added]}")
        apply_both(auth, current, removed, added)
        history.append((auth.index, dict(current)))
        assert auth.acl_count() == len(current)

    all_specs = [spec for _, snap in history for spec in snap.values()]
    requests = data.draw(
        st.lists(request_strategy(all_specs, st.sampled_from(WEIGHTED_TYPES)), min_size=1, max_size=10),
        label="requests",
    )
    fresh = StandardAuthorizer(config(super_users, allow_everyone))
    fresh.load_snapshot({acl_id: to_acl(spec) for acl_id, spec in current.items()})
    fresh.complete_initial_load()
    assert named(decisions(auth, requests)) == named(decisions(fresh, requests))
    assert auth.acls(AclBindingFilter()) == fresh.acls(AclBindingFilter())

    # Every index published along the way still holds, and decides on, exactly its own ACL set.
    for version, (index, snapshot) in enumerate(history):
        assert dict(index.by_id) == {acl_id: to_acl(spec) for acl_id, spec in snapshot.items()}, version
        old = StandardAuthorizer(config(super_users, allow_everyone))
        old.publish(index)
        old.complete_initial_load()
        want = reference_decisions(snapshot, super_users, allow_everyone, requests)
        assert named(decisions(old, requests)) == want, f"index version {version}"


# ---- changes concentrated on one large principal (issue #19) ---------------------------------------------

BIG_NAMES = ["", "*", "h", "hardcode", *("".join(p) for n in range(1, 5) for p in product("ab", repeat=n))]
BIG_OPS = ["READ", "WRITE", "DESCRIBE", "ALL", "ALTER", "ALTER_CONFIGS", "DESCRIBE_CONFIGS", "CREATE"]


def big_spec(rng: random.Random, principal: str = "User:alice") -> AclSpec:
    """One ACL of the large principal's kind: nested names, three hosts, mostly ALLOW, some hand-made codes."""
    return (
        rng.choice(["TOPIC"] * 4 + ["GROUP"]),
        rng.choice(BIG_NAMES),
        rng.choice(["LITERAL"] * 6 + ["PREFIXED"] * 5 + ["UNKNOWN"]),
        principal,
        rng.choice(["*"] * 4 + ["10.0.0.1", "10.0.0.2"]),
        rng.choice(BIG_OPS),
        rng.choice(["ALLOW"] * 6 + ["DENY"] * 2 + ["UNKNOWN"]),
    )


@settings(BASE, max_examples=40)
@given(st.data(), st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_changes_concentrated_on_one_large_principal(
    data: st.DataObject, seed: int, allow_everyone: bool, small: bool
) -> None:
    """A principal with hundreds of ACLs (alice) gets batch after batch of removals and additions, many to one
    name; after every batch each decision (authorize, authorized operations, by-resource-type) equals the
    reference model's, and at the end a snapshot load of the final set decides the same.

    With `small` limits every view is a NameMap after its first change, overlays fold after two changes,
    buckets past two ACLs are persistent sets, and a view keeps two changes for by-resource-type.
    """
    rng = random.Random(seed)
    current: dict[str, AclSpec] = {}
    while len(current) < 300:
        spec = big_spec(rng) if rng.random() < 0.9 else big_spec(rng, rng.choice(["User:*", "User:bob"]))
        if spec not in current.values():
            current[f"id{len(current)}"] = spec
    auth = StandardAuthorizer(config(frozenset(), allow_everyone))
    auth.load_snapshot({acl_id: to_acl(spec) for acl_id, spec in current.items()})
    auth.complete_initial_load()
    next_id = len(current)
    with small_limits(small), mock.patch.object(views, "HISTORY_LIMIT", 2 if small else views.HISTORY_LIMIT):
        for step in range(data.draw(st.integers(1, 6), label="steps")):
            mine = sorted(acl_id for acl_id, spec in current.items() if spec[3] == "User:alice")
            removed = data.draw(st.lists(st.sampled_from(mine), unique=True, max_size=25), label=f"rm{step}")
            remaining = {spec for acl_id, spec in current.items() if acl_id not in removed}
            hot = data.draw(st.sampled_from(BIG_NAMES), label=f"hot name {step}")  # many changes to one name
            fresh = [big_spec(rng) for _ in range(data.draw(st.integers(0, 25), label=f"adds{step}"))]
            fresh += [(*big_spec(rng)[:1], hot, *big_spec(rng)[2:]) for _ in range(rng.randrange(8))]
            added = with_new_ids(fresh, remaining, next_id)
            next_id += len(added)
            note(f"step {step}: remove {removed}; add {[fmt(spec) for _, spec in added]}")
            apply_both(auth, current, removed, added)
            requests = data.draw(st.lists(big_requests, min_size=1, max_size=8), label=f"requests{step}")
            want = reference_decisions(current, frozenset(), allow_everyone, requests)
            assert named(decisions(auth, requests)) == want, f"after step {step}"
    fresh_auth = StandardAuthorizer(config(frozenset(), allow_everyone))
    fresh_auth.load_snapshot({acl_id: to_acl(spec) for acl_id, spec in current.items()})
    fresh_auth.complete_initial_load()
    requests = data.draw(st.lists(big_requests, min_size=1, max_size=8), label="final requests")
    assert named(decisions(auth, requests)) == named(decisions(fresh_auth, requests))


big_requests = st.tuples(
    st.sampled_from(["User:alice"] * 4 + ["User:*", "User:bob"]),
    st.sampled_from(["10.0.0.1", "10.0.0.2"]),
    st.sampled_from(BIG_OPS),
    st.sampled_from(["TOPIC"] * 3 + ["GROUP"]),
    st.one_of(st.sampled_from(BIG_NAMES), st.text(alphabet="ab", max_size=6)),
)


BRT_KEYS = list(product(["User:alice", "User:*", "User:bob"], ["10.0.0.1", "10.0.0.2"], ["READ", "WRITE"], ["TOPIC"]))
brt_memo_specs = st.tuples(
    st.just("TOPIC"),
    st.sampled_from(["", "*", "a", "ab", "abc", "abd", "b", "ba", "hardcode"]),
    st.sampled_from(["LITERAL", "PREFIXED", "PREFIXED", "UNKNOWN"]),
    st.sampled_from(["User:alice"] * 3 + ["User:*", "User:bob"]),
    st.sampled_from(["*", "*", "10.0.0.1"]),
    st.sampled_from(["READ", "READ", "ALL", "WRITE"]),
    st.sampled_from(["ALLOW", "DENY", "DENY", "UNKNOWN"]),
)


@settings(BASE, max_examples=300)
@given(st.data(), st.lists(brt_memo_specs, unique=True, max_size=30), st.sampled_from([1, 2, 8]))
def test_by_resource_type_after_every_batch_matches_reference(
    data: st.DataObject, start: list[AclSpec], history: int
) -> None:
    """by-resource-type asked the same questions between small batches (after some of them, and after the
    last): its memo's witnesses and baselines (resource_type.py), carried from batch to batch through
    views that keep `history` changes, give the reference model's answer every time. DENY prefixes are
    common, so DENIED baselines are, and questions skipped for a few batches leave baselines older than
    what a view keeps."""
    current = {f"id{n}": spec for n, spec in enumerate(start)}
    auth = StandardAuthorizer(config(frozenset(), False))
    auth.load_snapshot({acl_id: to_acl(spec) for acl_id, spec in current.items()})
    auth.complete_initial_load()
    next_id = len(current)
    with small_limits(), mock.patch.object(views, "HISTORY_LIMIT", history):
        for step in range(data.draw(st.integers(1, 10), label="steps")):
            if step == 0 or data.draw(st.booleans(), label=f"ask before step {step}"):
                check_by_resource_type(auth, current, f"before step {step}")
            ids = sorted(current)
            removed = (
                data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=3), label=f"rm{step}") if ids else []
            )
            remaining = {spec for acl_id, spec in current.items() if acl_id not in removed}
            drawn = data.draw(st.lists(brt_memo_specs, unique=True, max_size=3), label=f"add{step}")
            added = with_new_ids(drawn, remaining, next_id)
            next_id += len(added)
            note(f"step {step}: remove {[fmt(current[i]) for i in removed]}; add {[fmt(s) for _, s in added]}")
            apply_both(auth, current, removed, added)
        check_by_resource_type(auth, current, "at the end")


def check_by_resource_type(auth: StandardAuthorizer, current: dict[str, AclSpec], when: str) -> None:
    acls = [to_acl(spec) for spec in current.values()]
    for principal, address, op, rtype in BRT_KEYS:
        want = ref.ref_by_resource_type(
            acls, frozenset(), False, principal, address, AclOperation[op], ResourceType[rtype]
        )
        got = auth.authorize_by_resource_type(
            RequestContext.of(principal, address), AclOperation[op], ResourceType[rtype]
        )
        assert got.name == want, f"{when}: {(principal, address, op)}"
