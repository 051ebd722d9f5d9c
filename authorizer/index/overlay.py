"""An immutable mapping adopted from a dict in O(1) and updated copy-on-write through a small HAMT overlay.

An `OverlayMap` is never mutated once built, so readers on any thread may share it; a mutation
belongs to one thread until `finish()`.

Why not `immutables.Map` alone: building a Map of a million entries costs ~0.8 s (every insert
allocates HAMT nodes), 30 times a `dict.copy()`. A bulk load (snapshot, initial replay) instead
hands its finished dict over as the base; later changes go to an `immutables.Map` overlay of
key -> value (or a tombstone), O(log n) each. When the overlay outgrows 1/16 of the base it is
folded into a fresh base dict (one copy, amortized over that many changes). Worked example:

    base {a: 1, b: 2}, overlay {}            -> a=1 b=2
    set b=3, del a, set c=4                  -> base untouched, overlay {b: 3, a: GONE, c: 4}
    get a -> overlay says GONE -> missing;  get b -> 3;  len = 2 + 1 (c new) - 1 (a gone) = 2
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Any, Generic, TypeVar, overload

import immutables

K = TypeVar("K")
V = TypeVar("V")
_GONE: Any = object()  # tombstone in the overlay: the key was deleted from the base
_ABSENT: Any = object()  # "not in the overlay" (a lookup default; never stored)
_MIN_FOLD = 4096  # overlays smaller than this are never folded


class _Reads(Generic[K, V]):
    """Lookups through the overlay, then the base: shared by the map and its mutation."""

    __slots__ = ()
    _base: dict[K, V]
    _over: Any  # immutables.Map or its MapMutation: key -> value or the tombstone
    _gone: Any = _GONE  # the tombstone (a subclass may choose its own)

    @overload
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, /, default: V | Any) -> V | Any: ...
    def get(self, key: K, /, default: Any = None) -> Any:
        """The value of `key`, or `default`."""
        if self._over:
            value = self._over.get(key, _ABSENT)
            if value is not _ABSENT:
                return default if value is self._gone else value
        return self._base.get(key, default)

    def __getitem__(self, key: K) -> V:
        value = self.get(key, _ABSENT)
        if value is _ABSENT:
            raise KeyError(key)
        result: V = value
        return result

    def __contains__(self, key: object) -> bool:
        return self.get(key, _ABSENT) is not _ABSENT  # type: ignore[arg-type]


class OverlayMap(_Reads[K, V], Mapping[K, V]):
    """A read-only mapping: `base` dict (adopted, never mutated) plus an overlay of changes."""

    __slots__ = ("_base", "_len", "_over")

    def __init__(self, base: dict[K, V] | None = None) -> None:
        """Adopt `base` without copying it: the caller must never mutate that dict again."""
        self._base: dict[K, V] = {} if base is None else base
        self._over: immutables.Map[K, Any] = immutables.Map()
        self._len = len(self._base)

    @classmethod
    def _of(cls, base: dict[K, V], over: immutables.Map[K, Any], length: int) -> OverlayMap[K, V]:
        out: OverlayMap[K, V] = cls.__new__(cls)
        out._base, out._over, out._len = base, over, length
        return out

    @classmethod
    def fold_floor(cls) -> int:
        """Overlays smaller than this are never folded (read at each fold; a subclass may choose its own)."""
        return _MIN_FOLD

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[K]:
        over = self._over
        if not over:
            yield from self._base
            return
        for key in self._base:
            if key not in over:
                yield key
        gone = self._gone
        for key, value in over.items():
            if value is not gone:
                yield key

    def items(self) -> ItemsView[K, V]:
        """(key, value) pairs, iterated without a lookup per key."""
        return _Items(self)

    def values(self) -> ValuesView[V]:
        """The values, iterated without a lookup per key."""
        return _Values(self)

    def iter_items(self) -> Iterator[tuple[K, V]]:
        """The (key, value) pairs: the base's not overridden, then the overlay's live ones."""
        over = self._over
        if not over:
            yield from self._base.items()
            return
        for key, value in self._base.items():
            if key not in over:
                yield key, value
        gone = self._gone
        for key, value in over.items():
            if value is not gone:
                yield key, value

    def __repr__(self) -> str:
        return f"OverlayMap({len(self)} entries, {len(self._over)} in the overlay)"

    def mutate(self) -> OverlayMutation[K, V]:
        """A private, mutable copy-on-write view; `finish()` returns the new OverlayMap (of the same class)."""
        return OverlayMutation(self)

    def set(self, key: K, value: V) -> OverlayMap[K, V]:
        """A map with `key` set to `value` (one HAMT insert, no mutation object: the cheap way to change one key)."""
        over = self._over
        old = over.get(key, _ABSENT)
        grew = old is self._gone or (old is _ABSENT and key not in self._base)
        return self._settled(self._base, over.set(key, value), self._len + grew)

    def delete(self, key: K) -> OverlayMap[K, V]:
        """A map without `key` (KeyError when it has none)."""
        over = self._over
        old = over.get(key, _ABSENT)
        in_base = key in self._base
        if old is self._gone or (old is _ABSENT and not in_base):
            raise KeyError(key)
        smaller = over.set(key, self._gone) if in_base else over.delete(key)
        return self._settled(self._base, smaller, self._len - 1)

    @classmethod
    def _settled(cls, base: dict[K, V], over: immutables.Map[K, Any], length: int) -> OverlayMap[K, V]:
        """The map of `base` and `over`; a large overlay is folded into a new base dict (leaving the old base alone)."""
        if len(over) < max(cls.fold_floor(), len(base) // 16):
            return cls._of(base, over, length)
        fresh = base.copy()
        for key, value in over.items():
            if value is cls._gone:
                del fresh[key]
            else:
                fresh[key] = value
        return cls(fresh)

    def folded(self) -> dict[K, V] | None:
        """The base dict when the overlay is empty (the map is exactly that dict, never to be mutated), else None."""
        return None if self._over else self._base


class OverlayMutation(_Reads[K, V]):
    """Edits of one OverlayMap; the original is never touched."""

    __slots__ = ("_base", "_gone", "_kind", "_len", "_over")

    def __init__(self, source: OverlayMap[K, V]) -> None:
        self._base = source._base
        self._over = source._over.mutate()
        self._len = source._len
        self._kind = type(source)
        self._gone = source._gone

    def __setitem__(self, key: K, value: V) -> None:
        over = self._over
        old = over.get(key, _ABSENT)
        if old is self._gone or (old is _ABSENT and key not in self._base):
            self._len += 1
        over[key] = value

    def __delitem__(self, key: K) -> None:
        over = self._over
        old = over.get(key, _ABSENT)
        in_base = key in self._base
        if old is self._gone or (old is _ABSENT and not in_base):
            raise KeyError(key)
        self._len -= 1
        if in_base:
            over[key] = self._gone
        else:
            del over[key]

    def pop(self, key: K, default: Any = None) -> Any:
        """Remove `key` and return its value, or return `default` when it is absent."""
        value = self.get(key, _ABSENT)
        if value is _ABSENT:
            return default
        del self[key]
        return value

    def finish(self) -> OverlayMap[K, V]:
        """The edited map; folds a large overlay into a new base dict (the old base stays untouched)."""
        return self._kind._settled(self._base, self._over.finish(), self._len)


class _Items(ItemsView[K, V]):
    _mapping: OverlayMap[K, V]

    def __iter__(self) -> Iterator[tuple[K, V]]:
        return self._mapping.iter_items()


class _Values(ValuesView[V]):
    _mapping: OverlayMap[Any, V]

    def __iter__(self) -> Iterator[V]:
        mapping = self._mapping
        if not mapping._over:
            return iter(mapping._base.values())
        return (value for _, value in mapping.iter_items())
