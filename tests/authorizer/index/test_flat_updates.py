"""Updates that touch only what they change (issue #19): the radix tree, view versions, and by-resource-type's memo.

`test_properties.py` checks decisions after updates against the reference model and
`test_index_build.py` checks updated structures against a bulk build; here each piece is checked
on its own: `trie` against a dict model (persistence included), a one-ACL change on a large view
shares everything it did not change, `PrincipalView.changes_since` against a list model, and the
by-resource-type memo answers the worked example of `resource_type` without scanning.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import immutables
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from kraftacl.authorizer.decision import by_resource_type as resource_type
from kraftacl.authorizer.decision.standard import RequestContext, StandardAuthorizer
from kraftacl.authorizer.index import trie, views
from kraftacl.authorizer.index.acl_index import AclIndex, TypeIndex
from kraftacl.authorizer.index.native_rows import prefix_trie
from kraftacl.authorizer.model.acls import (
    AclOperation,
    AclPermissionType,
    AuthorizationResult,
    PatternType,
    ResourceType,
)
from kraftacl.authorizer.model.acls import StandardAcl as Acl
from tests.authorizer.index.test_index_build import trie_shape

BASE = settings(max_examples=300, deadline=None, database=None)
names = st.text(alphabet="ab.", max_size=4)
# ("put", name, grants id) or ("drop", index into the names present)
trie_ops = st.lists(
    st.one_of(st.tuples(st.just("put"), names, st.integers(0, 3)), st.tuples(st.just("drop"), st.integers(0, 99))),
    max_size=40,
)


@settings(BASE)
@given(trie_ops, st.lists(names, max_size=6))
def test_trie_puts_and_drops_match_a_dict_model(ops: list[tuple[Any, ...]], requests: list[str]) -> None:
    grants = [{"*": 1 << n} for n in range(4)]
    root: trie.Node | None = None
    model: dict[str, dict[str, int]] = {}
    history: list[tuple[trie.Node | None, dict[str, dict[str, int]]]] = [(root, {})]
    for op in ops:
        if op[0] == "put":
            root = trie.put(root, op[1], grants[op[2]])
            model[op[1]] = grants[op[2]]
        elif model:
            name = sorted(model)[op[1] % len(model)]
            assert root is not None
            root = trie.drop(root, name)
            del model[name]
        note(f"{op} -> {sorted(model)}")
        assert trie_shape(root) == trie_shape(prefix_trie(model)), "the same tree as a bulk build of the set"
        history.append((root, dict(model)))
    for old, old_model in history:  # every earlier tree still holds exactly its own names
        assert list(trie.items(old)) == sorted(old_model.items())
        assert trie.size(old) == len(old_model)
        for request in [*requests, *old_model, *(name + "b" for name in old_model)]:
            want = [(name, old_model[name]) for name in sorted(old_model, key=len) if request.startswith(name)]
            assert list(trie.covering(old, request)) == want
            assert trie.get(old, request) == old_model.get(request)


def test_dropping_a_name_the_tree_does_not_hold_raises() -> None:
    root = prefix_trie({"ab": {"*": 1}, "abcd": {"*": 2}, "b": {"*": 4}})
    for missing in ["", "a", "abc", "abx", "abcde", "c"]:
        with pytest.raises(KeyError):
            trie.drop(root, missing)
    assert list(trie.items(trie.drop(root, "ab"))) == [("abcd", {"*": 2}), ("b", {"*": 4})]


def acl(name: str, host: str = "*", pattern: PatternType = PatternType.LITERAL, who: str = "User:big") -> Acl:
    return Acl(ResourceType.TOPIC, name, pattern, who, host, AclOperation.READ, AclPermissionType.ALLOW)


def big_index(count: int = 2000) -> AclIndex:
    """One principal with `count` literal names, `count // 4` prefixed ones under `p-`, and 300 hosts on `*`."""
    pairs = [(f"l{n}", acl(f"t-{n}")) for n in range(count)]
    pairs += [(f"p{n}", acl(f"p-{n}", pattern=PatternType.PREFIXED)) for n in range(count // 4)]
    pairs += [(f"h{n}", acl("*", host=f"10.0.{n // 256}.{n % 256}")) for n in range(300)]
    return AclIndex.build(pairs)


def topics(index: AclIndex) -> TypeIndex:
    tindex = index.types[ResourceType.TOPIC]
    assert tindex is not None
    return tindex


def test_one_change_to_a_large_view_shares_everything_it_did_not_change() -> None:
    before = big_index()
    view = topics(before).principals["User:big"]
    after = before.apply([], [("n1", acl("new-topic")), ("n2", acl("p-7x", pattern=PatternType.PREFIXED))])
    changed = topics(after).principals["User:big"]
    assert isinstance(changed.literal, views.NameMap) and changed.literal._base is view.literal
    assert dict(changed.literal._over) == {"new-topic": {"*": 1 << AclOperation.READ}}
    assert len(changed.literal) == len(view.literal) + 1
    # The tree: only the path to `p-7x` is new; every other subtree is the very same object.
    old_kids, new_kids = view.trie[4:], changed.trie[4:]  # type: ignore[index]
    shared = [kid for kid in new_kids if any(kid is old for old in old_kids)]
    assert len(shared) == len(new_kids) - 1 and len(new_kids) == len(old_kids)
    # A name thousands of ACLs share is a persistent set: one more ACL is one HAMT insert.
    star = topics(after).literal["*"]
    assert isinstance(star, immutables.Map) and len(star) == 300
    again = after.apply([], [("n3", acl("*", host="10.9.9.9"))])
    assert len(topics(again).literal["*"]) == 301 and len(topics(after).literal["*"]) == 300
    # The grants of a name of many hosts become a HAMT on their first change: one more host is one insert.
    hosts = topics(again).principals["User:big"].literal["*"]
    assert isinstance(hosts, immutables.Map) and len(hosts) == 301 and hosts["10.9.9.9"] == 1 << AclOperation.READ
    built = view.literal["*"]
    assert isinstance(built, dict) and len(built) == 300, "the built view's grants are untouched"
    fewer = again.apply(["n3", *(f"h{n}" for n in range(280))], [])
    assert dict(topics(fewer).principals["User:big"].literal["*"]) == {
        f"10.0.1.{n}": 1 << AclOperation.READ for n in range(24, 44)
    }
    assert isinstance(topics(fewer).principals["User:big"].literal["*"], dict), "a dict again at few hosts"
    assert topics(before).literal.get("new-topic") is None, "the built index is untouched"


def test_changes_since_follows_a_list_model() -> None:
    view: views.PrincipalView | None = views.EMPTY_VIEW
    versions: list[int] = [-1]
    log: list[tuple[int, str]] = []  # (serial, name) of every change, in order
    for serial in range(1, 40):
        assert view is not None
        names = [f"n{serial}-{k}" for k in range(serial % 3 + 1)]
        bits = {("literal", name): (0, 1) for name in names}
        view = view.updated({"literal": {name: {"*": 1} for name in names}}, serial, bits)
        versions.append(serial)
        log += [(serial, name) for name in names]
        assert view is not None and view.serial == serial
        for old in versions:
            kept = view.changes_since(old)
            want = [(s, name) for s, name in log if s > old]
            if kept is not None:
                assert [(change[0], change[2]) for change in kept] == want
            else:
                assert len(want) > views.HISTORY_LIMIT - 2, f"changes since {old} dropped too early"
        assert len(view.history[2]) <= views.HISTORY_LIMIT  # type: ignore[index]
    assert view is not None and view.changes_since(12345) is None


def dominated(count: int) -> StandardAuthorizer:
    """big's `count` literal READ ALLOWs on `foo-0`... and one PREFIXED DENY of READ on `foo-` (id `d`) above them."""
    deny = Acl(
        ResourceType.TOPIC, "foo-", PatternType.PREFIXED, "User:big", "*", AclOperation.READ, AclPermissionType.DENY
    )
    auth = StandardAuthorizer()
    auth.load_snapshot([(f"l{n}", acl(f"foo-{n}")) for n in range(count)] + [("d", deny)])
    auth.complete_initial_load()
    return auth


def test_by_resource_type_after_a_change_checks_points_instead_of_scanning() -> None:
    """The worked example of `resource_type`: a PREFIXED DENY dominates everything, then one ALLOW comes and goes."""
    auth = dominated(500)
    ctx = RequestContext("User:big", "10.0.0.1")
    scans = mock.patch.object(resource_type._Query, "scan", autospec=True, side_effect=resource_type._Query.scan)

    def ask() -> AuthorizationResult:
        return auth.authorize_by_resource_type(ctx, AclOperation.READ, ResourceType.TOPIC)

    with scans as scan:
        assert ask() is AuthorizationResult.DENIED and scan.call_count == 1  # the first call scans
        assert ask() is AuthorizationResult.DENIED and scan.call_count == 1
        auth.apply_changes([], [("new", acl("new-topic"))])
        assert ask() is AuthorizationResult.ALLOWED
        auth.apply_changes(["new"], [])
        assert ask() is AuthorizationResult.DENIED
        auth.apply_changes([], [("other", acl("x", who="User:other"))])  # another principal: not even a point check
        assert ask() is AuthorizationResult.DENIED
        assert scan.call_count == 1, "no call after a change scanned the views"
        auth.apply_changes(["d"], [])  # the PREFIXED DENY goes: what it dominated may be free
        assert ask() is AuthorizationResult.ALLOWED and scan.call_count == 2
        auth.apply_changes(["l499"], [])  # the scan's witness (the first ALLOW it met, foo-0) still holds
        assert ask() is AuthorizationResult.ALLOWED and scan.call_count == 2


def test_by_resource_type_after_more_changes_than_a_view_keeps() -> None:
    """A baseline older than the changes a view keeps is not trusted: the views are scanned again."""
    auth = dominated(10)
    ctx = RequestContext("User:big", "10.0.0.1")
    assert auth.authorize_by_resource_type(ctx, AclOperation.READ, ResourceType.TOPIC) is AuthorizationResult.DENIED
    auth.apply_changes([], [("bar", acl("bar"))])  # undominated: the answer is ALLOWED from here on
    for n in range(views.HISTORY_LIMIT + 1):  # dominated ALLOWs push `bar` out of the view's history
        auth.apply_changes([], [(f"more{n}", acl(f"foo-more-{n}"))])
    view = auth.index.types[ResourceType.TOPIC].principals["User:big"]  # type: ignore[union-attr]
    assert view.changes_since(0) is None
    assert auth.authorize_by_resource_type(ctx, AclOperation.READ, ResourceType.TOPIC) is AuthorizationResult.ALLOWED


@settings(BASE)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["", "!", "!a", "*", "*a", "a", "b", "ba"])), max_size=30))
def test_walk_marks_carried_by_an_update_equal_a_fresh_pass(steps: list[tuple[bool, str]]) -> None:
    """`TypeIndex.next_walk_marks` gives what a pass over every name gives, or None (then the pass runs)."""
    index = AclIndex.build([("seed", acl("b"))])
    present: dict[str, str] = {"b": "seed"}
    for n, (add, name) in enumerate(steps):
        before = topics(index)
        before.walk_marks()
        if add and name not in present:
            index = index.apply([], [(f"id{n}", acl(name))])
            present[name] = f"id{n}"
        elif not add and name in present and len(present) > 1:
            index = index.apply([present.pop(name)], [])
        after = topics(index)
        fresh = TypeIndex(after.literal, after.prefixed, after.length_counts, after.principals).walk_marks()
        assert after._walk_marks in (None, fresh), f"after {'adding' if add else 'removing'} {name!r}"
