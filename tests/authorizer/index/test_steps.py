"""`index.steps.listed`: the same list as `list(...)`, whatever the step."""

from __future__ import annotations

from kraftacl.authorizer.index.steps import chunks, listed


def test_listed_equals_list_for_any_step() -> None:
    for n in (0, 1, 7, 8, 9, 100):
        for step in (1, 3, 8, 1000):
            assert listed(iter(range(n)), step) == list(range(n))
    assert listed({"a": 1, "b": 2}) == ["a", "b"]


def test_chunks_cover_the_items_in_order() -> None:
    assert list(chunks(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(chunks([], 3)) == []
