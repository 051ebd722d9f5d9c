"""`ColumnsView`, the snapshot source's View: ids and single ACLs from the decoded columns, equal to the whole
image's answers; the image built only when a command needs every ACL; an id listed twice refused at load."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.authorizer.errors import ImageError
from kraftacl.authorizer.state.image import Provenance, image_from_columns
from kraftacl.harness.acl_data import PROBE_ID, write_snapshot
from kraftacl.shell.sources.columns_view import SCANS_BEFORE_BUILDING, ColumnsView
from kraftacl.shell.sources.snapshot import SnapshotSource
from kraftacl.snapshots.columns import AclColumns
from kraftacl.snapshots.format import SnapshotReader


def test_ids_and_single_acls_come_from_the_columns(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, 25_000)  # three chunks
    whole = image_from_columns(SnapshotReader(path).columns())
    view = SnapshotSource(path, AuthorizerConfig()).view()
    assert view.sorted_ids == sorted(whole) and len(view.sorted_ids) == 25_000
    last = view.sorted_ids[-1]
    assert (view.acl(PROBE_ID), view.acl(last)) == (whole[PROBE_ID], whole[last])
    assert view.acl("bm90LWFuLWlkLWF0LWFsbA") is None
    assert "image" not in view.__dict__  # nothing so far needed the id -> ACL map
    assert view.authorizer.index.by_id == whole  # a decision builds it, once
    assert "image" in view.__dict__ and view.acl(last) is view.image.acls[last]


def test_many_lookups_build_the_map_once(tmp_path: Path) -> None:
    view = SnapshotSource(write_snapshot(tmp_path, 100), AuthorizerConfig()).view()
    ids = view.sorted_ids
    for acl_id in ids[:SCANS_BEFORE_BUILDING]:
        assert view.acl(acl_id) is not None
    assert "image" not in view.__dict__
    assert view.acl(ids[-1]) is view.image.acls[ids[-1]]


def test_an_id_listed_twice_is_refused_at_load(tmp_path: Path) -> None:
    [chunk] = SnapshotReader(write_snapshot(tmp_path, 5)).columns()
    twice = AclColumns._make([*column, column[1]] for column in chunk)
    with pytest.raises(ImageError, match=rf"snapshot record 5: ACL {chunk.ids[1]} appears twice"):
        ColumnsView([twice], Provenance(4, 1, 0), AuthorizerConfig())
