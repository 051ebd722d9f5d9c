"""`index.steps.listed`: the same list as `list(...)`, whatever the step."""

from __future__ import annotations

from kraftacl.authorizer.index.steps import listed


def test_listed_equals_list_for_any_step() -> None:
    for n in (0, 1, 7, 8, 9, 100):
        for step in (1, 3, 8, 1000):
            assert listed(iter(range(n)), step) == list(range(n))
    assert listed({"a": 1, "b": 2}) == ["a", "b"]
