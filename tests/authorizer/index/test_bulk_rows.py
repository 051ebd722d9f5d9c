"""`authorizer.index.bulk_rows`, as source and as its mypyc-compiled copy: the same results, row for row.

The index build's properties (tests/authorizer/index/test_index_build.py) run here against each
implementation of `group_acls`, and `apply_new_rows` is checked against a plain model of the
initial replay: adds of new ids, removes of present ones, and the first row that breaks either.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from kraftacl.authorizer.errors import ImageError
from kraftacl.authorizer.index import build as index_build
from kraftacl.authorizer.index import bulk_rows, trie
from kraftacl.authorizer.index.acl_index import AclIndex
from kraftacl.authorizer.index.type_index import intern_grants
from kraftacl.authorizer.model.acls import (
    WILDCARD_PRINCIPAL,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
)
from kraftacl.authorizer.model.operations import ALLOW_TEST, DENY_TEST, grant_bit
from kraftacl.authorizer.state.image import image_from_columns
from kraftacl.authorizer.state.records import COLUMN_CODES, UNKNOWN_CODES, acl_from_record
from kraftacl.metadata_log.native import load_native
from kraftacl.metadata_log.records import AccessControlEntryRecord
from kraftacl.snapshots.columns import AclColumns, columns_of
from tests.authorizer import reference
from tests.authorizer.index.test_index_build import BASE, acl_sets, assert_same, pairs_of, trie_shape

_compiled, _ = load_native(bulk_rows, "kraftacl.authorizer.index._bulk_rows_native")
IMPLEMENTATIONS = [pytest.param(bulk_rows, id="source")] + (
    [pytest.param(_compiled, id="native")] if _compiled is not None else []
)
each_implementation = pytest.mark.parametrize("module", IMPLEMENTATIONS)


def built_by(module: ModuleType) -> Any:
    """The bulk build's loops taken from `module` (the source or the compiled copy)."""
    return mock.patch.multiple(
        index_build,
        group_acls_into=module.group_acls_into,
        intern_merged=module.intern_merged,
        prefix_tries_from=module.prefix_tries_from,
    )


@each_implementation
@settings(BASE)
@given(group=acl_sets)
def test_build_equals_incremental_apply(module: ModuleType, group: list[StandardAcl]) -> None:
    note("\n".join(map(str, group)))
    pairs = pairs_of(group)
    with built_by(module):
        built = AclIndex.build(pairs)
    assert_same(built, AclIndex.empty().apply([], pairs), group)


@each_implementation
def test_merged_grants_are_the_interned_dicts(module: ModuleType) -> None:
    read = StandardAcl(
        ResourceType.TOPIC, "t", PatternType.LITERAL, "User:a", "*", AclOperation.READ, AclPermissionType.ALLOW
    )
    acls = [read, read._replace(operation=AclOperation.WRITE), read._replace(host="h", operation=AclOperation.ALL)]
    with built_by(module):
        index = AclIndex.build(pairs_of(acls))
    grants = index.types[ResourceType.TOPIC].principals["User:a"].literal["t"]  # type: ignore[union-attr]
    assert grants == {"*": (1 << AclOperation.READ) | (1 << AclOperation.WRITE), "h": 1 << AclOperation.ALL}
    assert grants is intern_grants(dict(grants))
    assert index.types[ResourceType.TOPIC].literal["t"] == tuple(acls)  # type: ignore[union-attr]


def model_apply(changes: dict[str, Any], ids: list[str], rows: list[Any]) -> int:
    """The initial replay as a plain loop: the reference for `apply_new_rows`."""
    for position, (acl_id, acl) in enumerate(zip(ids, rows, strict=True)):
        if acl is not None:
            if acl_id in changes:
                return position
            changes[acl_id] = acl
        elif changes.pop(acl_id, None) is None:
            return position
    return -1


steps = st.lists(st.tuples(st.sampled_from("abcde"), st.one_of(st.none(), st.integers(0, 9))), max_size=30)


@each_implementation
@settings(BASE)
@given(start=st.dictionaries(st.sampled_from("abc"), st.integers(0, 9), max_size=3), batch=steps)
def test_apply_new_rows_matches_the_model(
    module: ModuleType, start: dict[str, Any], batch: list[tuple[str, int | None]]
) -> None:
    ids, rows = [acl_id for acl_id, _ in batch], [row for _, row in batch]
    apply: Callable[[dict[str, Any], list[str], list[Any]], int] = module.apply_new_rows
    mine, theirs = dict(start), dict(start)
    assert apply(mine, ids, rows) == model_apply(theirs, ids, rows)
    assert mine == theirs


@each_implementation
def test_apply_new_rows_refuses_unequal_columns(module: ModuleType) -> None:
    with pytest.raises(ValueError, match="2 ids but 1 rows"):
        module.apply_new_rows({}, ["a", "b"], [1])


@each_implementation
def test_hashed_dict_keeps_the_general_layout_as_it_grows(module: ModuleType) -> None:
    # The general layout stores each key's hash: 8 more bytes per entry than a str-only dict.
    names = [f"topic-{n}" for n in range(5000)]
    hashed, plain = module.hashed_dict(), {}
    assert hashed == {}
    for name in names:
        hashed[name] = plain[name] = name
    assert hashed == plain
    assert sys.getsizeof(hashed) >= sys.getsizeof(plain) + 8 * len(names)


@each_implementation
def test_group_acls_builds_its_name_maps_in_the_general_layout(module: ModuleType) -> None:
    acl = StandardAcl(
        ResourceType.TOPIC, "t", PatternType.LITERAL, "User:a", "*", AclOperation.READ, AclPermissionType.ALLOW
    )
    acls = [acl._replace(resource_name=f"t{n}") for n in range(2000)]
    acls += [acl._replace(resource_name=f"p{n}", pattern_type=PatternType.PREFIXED) for n in range(2000)]
    with built_by(module):
        topics = AclIndex.build(pairs_of(acls)).types[ResourceType.TOPIC]
    assert topics is not None
    view = topics.principals["User:a"]
    for built in (topics.literal._base, topics.prefixed._base, view.literal):  # a view's prefixed names: a tree
        plain = {name: None for name in built}
        assert sys.getsizeof(built) >= sys.getsizeof(plain) + 8 * len(plain)


codes = st.one_of(st.integers(-3, 70), st.sampled_from([-(2**31), 2**31 - 1]))
column_rows = st.lists(
    st.tuples(
        st.sampled_from("abcdef"), codes, st.text(max_size=3), codes, st.sampled_from(["User:a", ""]), codes, codes
    ),
    max_size=25,
)


@each_implementation
@settings(BASE)
@given(rows=column_rows)
def test_add_columns_converts_as_acl_from_record_and_stops_at_a_repeated_id(
    module: ModuleType, rows: list[tuple[str, int, str, int, str, int, int]]
) -> None:
    records = [
        AccessControlEntryRecord(acl_id * 22, rt, name, pt, who, "*", op, pm)
        for acl_id, rt, name, pt, who, op, pm in rows
    ]
    expected: dict[str, StandardAcl] = {}
    stop = -1
    for position, record in enumerate(records):  # the model: acl_from_record per row, up to the first repeat
        if record.id in expected:
            stop = position
            break
        expected[record.id] = acl_from_record(record)
    acls: dict[str, Any] = {}
    columns = columns_of(records) if records else AclColumns([], [], [], [], [], [], [], [])
    assert module.add_columns(acls, columns, COLUMN_CODES, UNKNOWN_CODES, StandardAcl) == stop
    assert acls == expected and all(type(acl) is StandardAcl for acl in acls.values())
    assert [tuple(map(type, acl)) for acl in acls.values()] == [tuple(map(type, acl)) for acl in expected.values()]


@each_implementation
def test_add_columns_refuses_unequal_columns(module: ModuleType) -> None:
    columns = AclColumns(["a"], [2], ["t"], [3], ["User:a"], ["*"], [3], [])
    with pytest.raises(ValueError, match=r"columns of unequal lengths: \[1, 1, 1, 1, 1, 1, 1, 0\]"):
        module.add_columns({}, columns, COLUMN_CODES, UNKNOWN_CODES, StandardAcl)


def test_a_snapshot_listing_an_id_twice_is_refused_with_its_record_number() -> None:
    record = AccessControlEntryRecord("A" * 22, 2, "t", 3, "User:a", "*", 3, 3)
    first = columns_of([record, dataclasses.replace(record, id="B" * 22)])
    second = columns_of([dataclasses.replace(record, id="C" * 22), dataclasses.replace(record, id="B" * 22)])
    with pytest.raises(ImageError, match=f"snapshot record 3: ACL {'B' * 22} appears twice in the snapshot"):
        image_from_columns([first, second])


request_names = st.one_of(st.sampled_from(["", "*", "a", "ab", "abc", "b"]), st.text(alphabet="ab*", max_size=4))


@each_implementation
@settings(BASE)
@given(names=st.sets(st.text(alphabet="ab.", max_size=5), max_size=12), requests=st.lists(request_names, max_size=8))
def test_prefix_trie_finds_what_a_brute_force_search_finds(
    module: ModuleType, names: set[str], requests: list[str]
) -> None:
    prefixed = {name: {name: 1} for name in names}  # grants unique to each name
    tree = module.prefix_trie(prefixed)
    assert list(trie.items(tree)) == sorted(prefixed.items())
    one_by_one = None
    for name in sorted(names, key=lambda name: (len(name), name[::-1])):  # another order than the build's
        one_by_one = trie.put(one_by_one, name, prefixed[name])
    assert trie_shape(tree) == trie_shape(one_by_one), "the tree of a set is unique"
    for request in [*requests, *names, *(name + "a" for name in names)]:
        want = [(other, prefixed[other]) for other in sorted(names, key=len) if request.startswith(other)]
        assert list(trie.covering(tree, request)) == want, request
        assert trie.get(tree, request) == prefixed.get(request)


# ---- grant_mask: the decision's per-action probe -------------------------------------------------------


@each_implementation
@settings(max_examples=300, deadline=None)
@given(
    acl_sets,
    st.sampled_from(list(ResourceType)),
    st.sampled_from(["User:alice", "User:bob", "User:*", "Group:alice"]),
    st.sampled_from(["*", "10.0.0.1", "::1", ""]),
    request_names,
)
def test_grant_mask_ors_the_grant_of_every_acl_that_applies(
    module: ModuleType, acls: list[StandardAcl], rtype: ResourceType, principal: str, host: str, name: str
) -> None:
    """Against the reference model's candidate, principal and host rules (spec §5.2, §5.3), ACL by ACL."""
    tindex = AclIndex.build(pairs_of(acls)).types[rtype]
    expected = 0
    for acl in acls:
        if (
            reference.is_candidate(acl, rtype, name)
            and reference.principal_matches(acl.principal, principal)
            and reference.host_matches(acl.host, host)
        ):
            expected |= grant_bit(acl.operation, acl.permission_type)
    assert (0 if tindex is None else module.grant_mask(tindex, principal, host, name)) == expected


def test_grant_mask_wildcard_is_the_model_s() -> None:
    assert bulk_rows.WILDCARD_PRINCIPAL == WILDCARD_PRINCIPAL


@each_implementation
@settings(max_examples=300, deadline=None)
@given(
    acl_sets,
    st.sampled_from(["User:alice", "User:bob", "User:*", "Group:alice"]),
    st.sampled_from(["*", "10.0.0.1", "::1", ""]),
    st.lists(
        st.tuples(st.sampled_from(list(AclOperation)), st.sampled_from(list(ResourceType)), request_names),
        max_size=12,
    ),
    st.booleans(),
)
def test_decide_many_decides_each_action_as_the_reference_model(
    module: ModuleType,
    acls: list[StandardAcl],
    principal: str,
    host: str,
    actions: list[tuple[AclOperation, ResourceType, str]],
    allow_everyone: bool,
) -> None:
    """One call for a whole request gives, action by action, the reference model's result (spec §5.2-§5.5)."""
    types = AclIndex.build(pairs_of(acls)).types
    codes = module.decide_many(
        types,
        principal,
        host,
        [int(op) for op, _, _ in actions],
        [int(rtype) for _, rtype, _ in actions],
        [name for _, _, name in actions],
        DENY_TEST,
        ALLOW_TEST,
        allow_everyone,
    )
    results = ["ALLOWED" if code in (module.ACL_ALLOW, module.DEFAULT_ALLOW) else "DENIED" for code in codes]
    expected = [reference.ref_authorize(acls, (), allow_everyone, principal, host, *action) for action in actions]
    assert results == expected


@each_implementation
def test_decide_many_refuses_unequal_lists(module: ModuleType) -> None:
    with pytest.raises(ValueError, match="2 operations, 1 resource types and 2 names"):
        module.decide_many(AclIndex.empty().types, "User:a", "*", [2, 3], [2], ["a", "b"], DENY_TEST, ALLOW_TEST, False)
