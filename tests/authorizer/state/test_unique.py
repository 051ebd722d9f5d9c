"""`_unique` (the import's de-duplication, filed in shards) is `list(dict.fromkeys(items))`."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kraftacl.authorizer.state.controller import _unique


@given(
    st.lists(st.one_of(st.integers(-50, 50), st.text(max_size=3), st.tuples(st.integers(0, 3), st.text(max_size=2))))
)
def test_unique_keeps_the_first_of_each_in_order(items: list[object]) -> None:
    assert _unique(items) == list(dict.fromkeys(items))


def test_unique_over_many_steps() -> None:
    items = [i % 70_001 for i in range(200_000)]
    assert _unique(items) == list(range(70_001))
