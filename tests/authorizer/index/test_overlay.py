"""`authorizer.index.overlay.OverlayMap`: a dict adopted as the base plus a HAMT overlay with tombstones.

The property test replays random set/delete/pop rounds against a plain dict model. Each round
mutates some earlier map (not only the latest, so maps sharing a base and an overlay branch), and
after every `finish()` checks the result against the model, checks every earlier map still equals
its own model (persistence), and checks that the adopted base dicts were never written to. Small
`_MIN_FOLD` values make the overlay fold into a fresh base dict after a few changes.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from kraftacl.authorizer.index import overlay
from kraftacl.authorizer.index.overlay import OverlayMap

MISSING = object()  # a default no map ever holds
KEYS = [f"k{n}" for n in range(40)]
keys = st.sampled_from(KEYS)
values = st.one_of(st.integers(-3, 3), st.none(), st.text(alphabet="ab", max_size=2))
Op = tuple[Any, ...]
ops = st.one_of(
    st.tuples(st.just("set"), keys, values),
    st.tuples(st.just("del"), keys),
    st.tuples(st.just("pop"), keys, st.sampled_from([None, "dflt"])),
)
# One round: which earlier map to mutate (an index into the history, taken modulo its length), then the edits.
rounds = st.lists(st.tuples(st.integers(0, 50), st.lists(ops, max_size=30)), min_size=1, max_size=8)


def check_equal(m: OverlayMap[str, Any], model: dict[str, Any]) -> None:
    """Every read of the Mapping interface agrees with the dict model."""
    assert len(m) == len(model)
    listed = list(m)
    assert len(listed) == len(set(listed)) == len(model), "iteration yields each key once"
    assert set(listed) == set(model)
    assert sorted(m.items()) == sorted(model.items(), key=lambda kv: kv[0])
    assert sorted(map(repr, m.values())) == sorted(map(repr, model.values()))
    assert m.keys() == model.keys()
    assert m.items() == model.items()
    assert dict(m) == model
    assert m == model
    assert m == OverlayMap(dict(model))
    for key in KEYS:
        assert (key in m) == (key in model)
        assert m.get(key, MISSING) is model.get(key, MISSING)
        assert m.get(key) == model.get(key)
        if key in model:
            assert m[key] is model[key]
            assert (key, model[key]) in m.items()
        else:
            with pytest.raises(KeyError):
                m[key]


def apply_round(m: OverlayMap[str, Any], model: dict[str, Any], edits: list[Op]) -> OverlayMap[str, Any]:
    """Apply `edits` to a mutation of `m` and to `model` (in place); return the finished map."""
    mut = m.mutate()
    for op in edits:
        key = op[1]
        assert (key in mut) == (key in model)
        assert mut.get(key, MISSING) is model.get(key, MISSING)
        if op[0] == "set":
            mut[key] = op[2]
            model[key] = op[2]
        elif op[0] == "del":
            if key in model:
                del mut[key]
                del model[key]
            else:
                with pytest.raises(KeyError):
                    del mut[key]
        else:
            assert mut.pop(key, op[2]) is model.pop(key, op[2])
        if key in model:
            assert mut[key] is model[key]
        else:
            with pytest.raises(KeyError):
                mut[key]
    return mut.finish()


@settings(max_examples=300)
@given(
    base=st.dictionaries(keys, values, max_size=len(KEYS)),
    min_fold=st.sampled_from([1, 2, 3, overlay._MIN_FOLD]),
    plan=rounds,
)
def test_overlay_matches_dict_model(base: dict[str, Any], min_fold: int, plan: list[tuple[int, list[Op]]]) -> None:
    note(f"_MIN_FOLD={min_fold}")
    with mock.patch.object(overlay, "_MIN_FOLD", min_fold):
        first = OverlayMap(base)
        assert first._base is base, "the base dict is adopted, not copied"
        # (map, its model, its base dict object, a copy of that base's content when the map was made)
        history = [(first, dict(base), base, dict(base))]
        check_equal(first, base)
        for pick, edits in plan:
            parent, parent_model, _, _ = history[pick % len(history)]
            model = dict(parent_model)
            child = apply_round(parent, model, edits)
            check_equal(child, model)
            if child._base is not parent._base:  # folded: the overlay went into a fresh base dict
                assert not child._over and child._base == model
            else:
                assert len(child._over) < max(min_fold, len(parent._base) // 16), "a big overlay is folded"
            history.append((child, model, child._base, dict(child._base)))
            for old, old_model, old_base, old_base_content in history:
                assert old._base is old_base, "a map keeps its base dict object"
                assert old_base == old_base_content, "no fold or edit writes to an adopted base dict"
                check_equal(old, old_model)


def test_worked_example_from_the_docstring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overlay, "_MIN_FOLD", 4096)
    base = {"a": 1, "b": 2}
    m0 = OverlayMap(base)
    mut = m0.mutate()
    mut["b"] = 3
    del mut["a"]
    mut["c"] = 4
    m1 = mut.finish()
    assert base == {"a": 1, "b": 2} and m1._base is base
    assert dict(m1._over) == {"b": 3, "a": overlay._GONE, "c": 4}
    assert dict(m1) == {"b": 3, "c": 4} and len(m1) == 2
    assert "a" not in m1 and m1.get("a", 0) == 0
    assert dict(m0) == {"a": 1, "b": 2}


def test_delitem_of_a_missing_key_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overlay, "_MIN_FOLD", 4096)
    m = OverlayMap({"base": 1})
    mut = m.mutate()
    with pytest.raises(KeyError):
        del mut["never"]
    del mut["base"]  # now a tombstone
    with pytest.raises(KeyError):
        del mut["base"]
    mut["new"] = 2
    del mut["new"]  # added in the overlay, then removed from it
    with pytest.raises(KeyError):
        del mut["new"]
    assert mut.pop("base", "gone") == "gone" and mut.pop("new") is None
    done = mut.finish()
    assert dict(done) == {} and len(done) == 0
    again = done.mutate()
    with pytest.raises(KeyError):
        del again["base"]  # a tombstone carried over from the finished map
    again["base"] = 5  # re-adding a deleted base key
    assert dict(again.finish()) == {"base": 5}
    assert dict(m) == {"base": 1} and dict(done) == {}


def test_fold_copies_and_leaves_the_old_base_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overlay, "_MIN_FOLD", 2)
    base = {"a": 1, "b": 2, "c": 3}
    m0 = OverlayMap(base)
    mut = m0.mutate()
    del mut["a"]
    mut["d"] = 4
    m1 = mut.finish()
    assert m1._base is not base and not m1._over, "two overlay entries reach _MIN_FOLD=2: folded"
    assert m1._base == {"b": 2, "c": 3, "d": 4} == dict(m1)
    assert base == {"a": 1, "b": 2, "c": 3} and m0._base is base and dict(m0) == base
    # Below the threshold nothing is copied: the new map shares the base.
    small = m0.mutate()
    small["a"] = 10
    m2 = small.finish()
    assert m2._base is base and dict(m2) == {"a": 10, "b": 2, "c": 3} and base["a"] == 1


def test_fold_threshold_grows_with_the_base(monkeypatch: pytest.MonkeyPatch) -> None:
    """max(_MIN_FOLD, len(base) // 16): a base of 64 keys tolerates 3 overlay entries, folds at 4."""
    monkeypatch.setattr(overlay, "_MIN_FOLD", 1)
    base = {n: n for n in range(64)}
    m = OverlayMap(base)
    mut = m.mutate()
    for n in range(3):
        del mut[n]
    m3 = mut.finish()
    assert m3._base is base and len(m3) == 61
    mut = m3.mutate()
    mut[100] = 100
    m4 = mut.finish()
    assert m4._base is not base and not m4._over and dict(m4) == {n: n for n in [*range(3, 64), 100]}
    assert base == {n: n for n in range(64)}
