"""`AclsImage.chunks`: the image as snapshot columns, grouped by (resource type, pattern type, principal).

A node writes its snapshots from these chunks, so they must hold every ACL of the image exactly
once, under its own id, with Kafka's wire codes; come in the documented order (each key's ACLs
together, keys ascending), since the bulk build's speed on a cold start relies on it; and load
back, through the file format, into the same image.
"""

from __future__ import annotations

import tempfile
from dataclasses import astuple
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftacl.authorizer.index.overlay import OverlayMap
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.image import AclsImage, Provenance, image_from_columns
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.metadata_log.codec.avro import uuid_to_text
from kraftacl.snapshots.columns import AclColumns
from kraftacl.snapshots.format import SnapshotHeader, SnapshotReader
from kraftacl.snapshots.store import SnapshotStore


def acl_id(n: int) -> str:
    raw = bytearray(n.to_bytes(16, "big"))
    raw[0] = 0x40 | (n % 0x3F)
    return uuid_to_text(bytes(raw))


acls = st.builds(
    StandardAcl,
    st.sampled_from(list(ResourceType)),
    st.text(alphabet="ab*-", max_size=3),
    st.sampled_from(list(PatternType)),
    st.sampled_from(["User:alice", "User:bob", "User:*", "Group:ops", ""]),
    st.sampled_from(["*", "10.0.0.1", "::1"]),
    st.sampled_from(list(AclOperation)),
    st.sampled_from(list(AclPermissionType)),
)


def image_of(group: list[StandardAcl]) -> AclsImage:
    return AclsImage(OverlayMap({acl_id(n): acl for n, acl in enumerate(group)}), Provenance(len(group) - 1, 1, 0))


def rows_of(chunks: list[AclColumns]) -> list[tuple[object, ...]]:
    return [row for chunk in chunks for row in zip(*chunk, strict=True)]


@settings(max_examples=150, deadline=None)
@given(st.lists(acls, max_size=60), st.integers(1, 9))
def test_chunks_hold_every_acl_once_in_key_order(group: list[StandardAcl], size: int) -> None:
    image = image_of(group)
    chunks = list(image.chunks(size))
    assert [c.rows for c in chunks] == [min(size, len(group) - i) for i in range(0, len(group), size)]
    rows = rows_of(chunks)
    expected = {astuple(record_from_acl(i, a)) for i, a in image.acls.items()}
    assert len(rows) == len(image) and set(rows) == expected
    assert all(type(code) is int for row in rows for code in (row[1], row[3], row[6], row[7]))
    keys = [(row[1], row[3], row[4]) for row in rows]  # resource type, pattern type, principal
    assert keys == sorted(keys), "keys out of order"
    ids_in_key_order = [row[0] for row in rows]
    by_key: dict[tuple[object, ...], list[object]] = {}
    for key, acl_id_ in zip(keys, ids_in_key_order, strict=True):
        by_key.setdefault(key, []).append(acl_id_)
    for members in by_key.values():  # within a key, the image's (id) order is kept
        assert members == [i for i in image.acls if i in set(members)]
    assert [astuple(r) for r in image.records()] == rows


@settings(max_examples=40, deadline=None)
@given(st.lists(acls, max_size=40), st.integers(1, 7))
def test_chunks_written_and_read_back_are_the_same_image(group: list[StandardAcl], size: int) -> None:
    image = image_of(group)
    with tempfile.TemporaryDirectory() as tmp:
        path = SnapshotStore(Path(tmp)).write_chunks(SnapshotHeader(len(group), 1, 0), image.chunks(size))
        reader = SnapshotReader(path)
        assert dict(image_from_columns(reader.columns())) == dict(image.acls)
        assert reader.verify() == len(group)


def test_a_chunk_that_cannot_be_stored_names_its_records_and_leaves_no_file(tmp_path: Path) -> None:
    image = image_of(
        [
            StandardAcl(
                ResourceType.TOPIC,
                f"t{n}",
                PatternType.LITERAL,
                "User:a",
                "*",
                AclOperation.READ,
                AclPermissionType.ALLOW,
            )
            for n in range(5)
        ]
    )
    good = list(image.chunks(2))
    bad = good[1]._replace(ids=[good[1].ids[0], "not-a-uuid"])
    store = SnapshotStore(tmp_path)
    with pytest.raises(
        ValueError, match=r"snapshot records 2\.\.3: record 1: id 'not-a-uuid' is not a Kafka Uuid text"
    ):
        store.write_chunks(SnapshotHeader(5, 1, 0), [good[0], bad, good[2]])
    assert list(tmp_path.iterdir()) == []
