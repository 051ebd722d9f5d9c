"""The bulk build (`index_build.build_types` via `AclIndex.build`) against incremental `apply`.

`test_properties.py` only compares decisions of a snapshot-loaded and an incrementally updated
authorizer; here the structures themselves must be equal, for every resource type code: bucket
contents, prefix lengths, and each principal's view (literal/prefixed/other grants, sorted prefix
names as a radix tree of the same shape). ACLs come from small alphabets so that names, principals and hosts
collide: several ACLs on one name for one principal, several hosts, PREFIXED and hand-made
pattern codes (UNKNOWN, ANY, MATCH), and every enum code including UNKNOWN and ANY.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import immutables
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from kraftacl.authorizer.errors import ImageError
from kraftacl.authorizer.index import grant_edits, overlay, trie, type_index, views
from kraftacl.authorizer.index.acl_index import AclIndex, TypeIndex, members
from kraftacl.authorizer.index.type_index import N_TYPES
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl

acls = st.builds(
    StandardAcl,
    st.sampled_from([ResourceType.TOPIC] * 3 + [ResourceType.GROUP] * 2 + list(ResourceType)),
    st.one_of(st.sampled_from(["", "*", "a", "ab", "abc", "b", "!"]), st.text(alphabet="ab*!", max_size=3)),
    st.sampled_from([PatternType.LITERAL] * 4 + [PatternType.PREFIXED] * 4 + list(PatternType)),
    st.sampled_from(["User:alice"] * 3 + ["User:bob", "User:*", "bob", ""]),
    st.sampled_from(["*"] * 3 + ["10.0.0.1", "10.0.0.2", "::1", ""]),
    st.sampled_from([AclOperation.READ, AclOperation.WRITE, AclOperation.ALL, *AclOperation]),
    st.sampled_from([AclPermissionType.ALLOW, AclPermissionType.DENY, *AclPermissionType]),
)
acl_sets = st.lists(acls, unique=True, max_size=40)
BASE = settings(max_examples=300, database=None)


def pairs_of(group: list[StandardAcl], start: int = 0) -> list[tuple[str, StandardAcl]]:
    return [(f"id{start + n}", acl) for n, acl in enumerate(group)]


def bucket_sets(buckets: Any) -> dict[str, set[StandardAcl]]:
    """name -> the set of its ACLs; also checks the bucket shape (bare ACL for one, tuple for several)."""
    out: dict[str, set[StandardAcl]] = {}
    for name, bucket in buckets.items():
        group = members(bucket)
        assert len(group) >= 1, f"empty bucket for {name!r}"
        assert isinstance(bucket, StandardAcl) == (len(group) == 1), f"bucket shape for {name!r}: {bucket!r}"
        assert isinstance(bucket, immutables.Map) == (len(group) > type_index.TUPLE_LIMIT), f"{name!r}: {bucket!r}"
        assert len(set(group)) == len(group), f"duplicate ACL in the bucket of {name!r}"
        out[name] = set(group)
    return out


def describe(index: TypeIndex | None) -> dict[str, Any] | None:
    """Everything a TypeIndex holds, as plain comparable values."""
    if index is None:
        return None
    return {
        "literal": bucket_sets(index.literal),
        "prefixed": bucket_sets(index.prefixed),
        "length_counts": dict(index.length_counts),
        "prefix_lengths": index.prefix_lengths,
        "walk_marks": index.walk_marks(),  # an updated index carries them forward when it can (next_walk_marks)
        "principals": {
            principal: {
                "literal": plain(view.literal),
                "prefixed": plain(view.prefixed),
                "other": plain(view.other),
                "trie": trie_shape(view.trie),
            }
            for principal, view in index.principals.items()
        },
    }


def plain(names: Any) -> dict[str, dict[str, int]]:
    """name -> grants as plain dicts (grants of many hosts are an immutables.Map after an update)."""
    return {name: dict(grants) for name, grants in names.items()}


def trie_shape(node: Any) -> Any:
    """A radix tree as nested tuples, a branch point's label cut to its own string (the rest is any name below it).

    The tree of a set of names is unique, so a built and an updated view must give the same shape.
    """
    if node is None:
        return None
    if len(node) == 2:
        return (node[0], dict(node[1]))  # a leaf: (name, grants)
    label, grants, depth, keys, *kids = node
    assert kids and len(kids) == len(keys) and list(keys) == sorted(keys), f"keys of {label[:depth]!r}"
    assert grants is not None or len(kids) >= 2, f"a branch point with {len(kids)} children at {label[:depth]!r}"
    assert grants is None or len(label) == depth, f"a name's depth is its length: {label!r}"
    for key, kid in zip(keys, kids, strict=True):
        assert trie.depth_of(kid) > depth and kid[0][:depth] == label[:depth] and kid[0][depth] == key, kid[0]
    held = None if grants is None else dict(grants)
    return (label[:depth], held, depth, keys, tuple(trie_shape(kid) for kid in kids))


def expected(group: list[StandardAcl], code: int) -> dict[str, Any] | None:
    """The literal/prefixed buckets and prefix lengths straight from the ACL list (brute force)."""
    mine = [acl for acl in group if acl.resource_type == code]
    if not mine:
        return None
    literal: dict[str, set[StandardAcl]] = {}
    prefixed: dict[str, set[StandardAcl]] = {}
    for acl in mine:
        target = literal if acl.pattern_type == PatternType.LITERAL else prefixed
        target.setdefault(acl.resource_name, set()).add(acl)
    return {"literal": literal, "prefixed": prefixed, "prefix_lengths": tuple(sorted({len(n) for n in prefixed}))}


def assert_same(built: AclIndex, applied: AclIndex, group: list[StandardAcl]) -> None:
    assert dict(built.by_id) == dict(applied.by_id)
    assert len(built.types) == len(applied.types) == N_TYPES
    for code in range(N_TYPES):
        left, right = describe(built.types[code]), describe(applied.types[code])
        assert left == right, f"type code {code}"
        want = expected(group, code)
        if want is None:
            assert left is None, f"type code {code}: an index without ACLs"
            continue
        assert left is not None
        assert {key: left[key] for key in want} == want, f"type code {code}"
        assert set(left["principals"]) == {acl.principal for acl in group if acl.resource_type == code}


@settings(BASE)
@given(acl_sets)
def test_build_equals_incremental_apply(group: list[StandardAcl]) -> None:
    note("\n".join(map(str, group)))
    pairs = pairs_of(group)
    assert_same(AclIndex.build(pairs), AclIndex.empty().apply([], pairs), group)


@settings(BASE)
@given(acl_sets, st.data(), st.sampled_from([1, 2, overlay._MIN_FOLD]), st.booleans())
def test_apply_on_a_built_index_equals_build(
    group: list[StandardAcl], data: st.DataObject, min_fold: int, small: bool
) -> None:
    """A bulk-built base then updated incrementally equals a bulk build of the final set.

    A small `_MIN_FOLD` makes the OverlayMaps (by_id, literal, prefixed) fold their overlays;
    `small` limits make every view past one literal name a NameMap (folded after one change or
    two), every bucket past two ACLs a persistent set, and grants past two hosts a HAMT.
    """
    with mock.patch.object(overlay, "_MIN_FOLD", min_fold), small_limits(small):
        check_apply_on_built(group, data)


@contextmanager
def small_limits(small: bool = True) -> Iterator[None]:
    """Shrink the sizes at which views and buckets change representation, so small examples reach them."""
    if not small:
        yield
        return
    with (
        mock.patch.object(views, "COPY_LIMIT", 1),
        mock.patch.object(views, "_NAME_MAP_FLOOR", 2),
        mock.patch.object(type_index, "TUPLE_LIMIT", 2),
        mock.patch.object(grant_edits, "HOSTS_LIMIT", 2),
    ):
        yield


def check_apply_on_built(group: list[StandardAcl], data: st.DataObject) -> None:
    first = data.draw(st.integers(0, len(group)), label="first build")
    built = AclIndex.build(pairs_of(group[:first]))
    removed = data.draw(st.sets(st.integers(0, max(first - 1, 0))), label="removed") if first else set()
    extra = data.draw(st.lists(acls, unique=True, max_size=10), label="added")
    # Re-adding a removed ACL's content under a new id is allowed; adding a still-present content is not.
    remaining = [acl for n, acl in enumerate(group[:first]) if n not in removed]
    added = list(dict.fromkeys(acl for acl in [*group[first:], *extra] if acl not in remaining))
    readded = data.draw(st.sets(st.sampled_from(sorted(removed))), label="re-added") if removed else set()
    added += [group[n] for n in sorted(readded) if group[n] not in added]
    added_pairs = pairs_of(added, start=len(group))
    note(f"built {group[:first]}; removed {sorted(removed)}; added {added}")
    for tindex in built.types:  # known before the update, so that the update carries them forward
        if tindex is not None and data.draw(st.booleans(), label="walk marks known"):
            tindex.walk_marks()
    updated = built.apply([f"id{n}" for n in sorted(removed)], added_pairs)
    final_pairs = [(f"id{n}", acl) for n, acl in enumerate(group[:first]) if n not in removed] + added_pairs
    assert_same(AclIndex.build(final_pairs), updated, remaining + added)
    assert dict(built.by_id) == dict(pairs_of(group[:first])), "the built index is left untouched"


@settings(BASE)
@given(st.lists(acls, unique=True, min_size=1, max_size=20), st.data())
def test_duplicate_content_under_another_id_is_refused(group: list[StandardAcl], data: st.DataObject) -> None:
    dup = data.draw(st.sampled_from(group), label="duplicated")
    where = data.draw(st.integers(0, len(group)), label="position")
    pairs = pairs_of(group)
    pairs.insert(where, ("dup-id", dup))
    with pytest.raises(ImageError, match="same content already exists"):
        AclIndex.build(pairs)
    with pytest.raises(ImageError, match="same content already exists"):
        AclIndex.empty().apply([], pairs)


def test_duplicates_among_a_shared_name_and_a_duplicate_id() -> None:
    read = StandardAcl(
        ResourceType.TOPIC, "t", PatternType.LITERAL, "User:a", "*", AclOperation.READ, AclPermissionType.ALLOW
    )
    write = read._replace(operation=AclOperation.WRITE)
    odd = read._replace(pattern_type=PatternType.UNKNOWN)
    with pytest.raises(ImageError, match="same content already exists"):
        AclIndex.build([("1", read), ("2", write), ("3", odd), ("4", write)])
    with pytest.raises(ImageError, match="an ACL with that id already exists"):
        AclIndex.build([("1", read), ("1", write)])
    index = AclIndex.build([("1", read), ("2", write), ("3", odd)])
    view = index.types[ResourceType.TOPIC].principals["User:a"]  # type: ignore[union-attr]
    assert view.literal == {"t": {"*": (1 << AclOperation.READ) | (1 << AclOperation.WRITE)}}
    assert view.other == {"t": {"*": 1 << AclOperation.READ}} and view.prefixed == {}
