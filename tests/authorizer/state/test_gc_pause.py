"""`paused_gc`: the collector is off inside the block and back after it; with `freeze`, what the block kept is out
of every later collection's walk."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kraftacl.authorizer.state.gc_pause import GcPause, paused_gc


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


class _Node:
    """A tracked object (the collector walks it)."""


def test_off_inside_on_after() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_nested_blocks_keep_it_off_until_the_outermost_ends() -> None:
    with paused_gc():
        with paused_gc():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_freeze_moves_what_the_block_kept_out_of_the_collections() -> None:
    before = gc.get_freeze_count()
    with paused_gc(freeze=True):
        kept = [_Node() for _ in range(10_000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(kept)
    assert not any(gc.is_tracked(n) and n in gc.get_objects(2) for n in kept[:3])


def test_an_error_inside_still_re_enables_it_and_freezes_nothing() -> None:
    with pytest.raises(RuntimeError), paused_gc(freeze=True):
        made = [_Node() for _ in range(1_000)]
        raise RuntimeError(f"boom after {len(made)}")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # a failed block kept nothing: its garbage (and cycles) stay collectable


def test_a_handed_over_pause_ends_once_and_outlives_blocks() -> None:
    pause = GcPause()
    with paused_gc():
        pass
    assert not gc.isenabled(), "the pause still holds after an inner block ends"
    pause.end()
    assert gc.isenabled()
    pause.end()  # idempotent: a second end does not re-count
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
