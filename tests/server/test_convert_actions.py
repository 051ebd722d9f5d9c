"""serve's action conversion cache: a hit gives exactly what a conversion gives, a bad action still names its
field, and the cache stays bounded."""

from __future__ import annotations

import msgspec
import pytest

from server import convert
from server.convert import action_of, actions_of
from server.errors import BadRequest
from server.wire import ActionIn

ACTIONS = [
    ActionIn("READ", "TOPIC", "orders"),
    ActionIn("read", "topic", "orders"),  # Kafka's fromString upper-cases these
    ActionIn("DESCRIBE", "GROUP", "g", ref_count=3, log_if_allowed=False, log_if_denied=False),
    ActionIn("READ", "TOPIC", "orders", log_if_denied=False),
]


def test_a_hit_is_exactly_the_conversion() -> None:
    first = actions_of(ACTIONS)
    again = actions_of([msgspec.json.decode(msgspec.json.encode(a), type=ActionIn) for a in ACTIONS])
    expected = [action_of(a, "$") for a in ACTIONS]
    assert first == again == expected
    assert again[3].log_if_denied is False and again[0].log_if_denied is True


def test_a_bad_action_names_its_field_after_good_ones_were_cached() -> None:
    actions_of(ACTIONS)
    with pytest.raises(BadRequest) as exc:
        actions_of([*ACTIONS, ActionIn("READ", "TOPICS", "orders")])
    assert exc.value.field == "$.actions[4].resource_type"


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(convert, "_ACTIONS_MAX", 3)
    convert._ACTIONS.clear()
    names = [ActionIn("READ", "TOPIC", f"t{i}") for i in range(10)]
    assert [a.resource_name for a in actions_of(names)] == [f"t{i}" for i in range(10)]
    assert len(convert._ACTIONS) <= 3
