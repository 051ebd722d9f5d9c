"""One principal's ACLs of one resource type (a `PrincipalView`), and how a change derives the next view.

A view is immutable once published, and so is everything it holds, so any number of threads may
read it while the writer derives the next one; a derived view shares all it did not change.

A view holds name -> grants (host -> grant mask, `authorizer.model.operations`) three ways:

    literal   the LITERAL names: the bulk build's dict; once the view changes and has more than
              `COPY_LIMIT` names, a `NameMap` (that dict, never written again, plus a HAMT of the
              changed names, where `{}` marks a removed one)
    trie      the PREFIXED names: a persistent radix tree (`authorizer.index.trie`)
    other     names of hand-made pattern codes (UNKNOWN, ANY, MATCH), a small dict copied on change

Why these, and not one persistent map each: a decision probes a view's literal names twice and
walks its tree once (`bulk_rows.grant_mask`), and a dict probe is about twice as fast as a HAMT
one, so what the bulk build made stays a dict. A change then costs O(log n) in the HAMT and a
path copy in the tree, whatever the size of the view (Kafka's testAuthorizer sets give one
principal 2.4 million ACLs); a `NameMap` folds its changes into a fresh dict once they reach a
sixteenth of it, so that copy costs under one dict entry per change on average. A sorted name
array with ancestor closures (the layout before) answered the prefix question with one bisect, but
any change rewrote it whole: a name's closure holds its ancestors' grants, so one change to
`foo-` touches every name under it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftacl.authorizer.index import trie
from kraftacl.authorizer.index.overlay import OverlayMap

# host -> grant mask: a dict, or an `immutables.Map` for many hosts (see `grant_edits`); read-only here
Grants = Mapping[str, int]
Bits = tuple[int, int]  # grant bits some host lost, and gained, on one name in one update
# One change of a view, kept for `authorize_by_resource_type`: (serial, kind, name, lost bits, gained bits).
Change = tuple[int, str, str, int, int]
# (this version's serial, the serial the kept changes start after, the changes), None for a view as built.
History = tuple[int, int, tuple[Change, ...]]
HISTORY_LIMIT = 8
EMPTY: Mapping[Any, Any] = {}
COPY_LIMIT = 64  # a changed view with at most this many literal names keeps a plain dict (copied whole)
_NAME_MAP_FLOOR = 64  # a NameMap's overlay is folded at max(this, a sixteenth of its base)
REMOVED: dict[str, int] = {}  # a NameMap's tombstone: grants no host has, so a probe that meets it adds nothing
NO_NAMES: dict[str, Grants] = {}  # the one empty name dict views share (views never write to their dicts)
Names = Mapping[str, Grants]  # a dict, or a NameMap


class NameMap(OverlayMap[str, Grants]):
    """A changed view's literal names: its dict plus a HAMT of changes, `REMOVED` for a removed name."""

    __slots__ = ()
    _gone = REMOVED

    @classmethod
    def fold_floor(cls) -> int:
        return _NAME_MAP_FLOOR


class PrincipalView:
    """One principal's ACLs of one resource type (see the module docstring); immutable once published."""

    __slots__ = ("history", "hosts", "literal", "other", "trie")

    def __init__(
        self, literal: Names, tree: trie.Node | None, other: Mapping[str, Grants], history: History | None = None
    ) -> None:
        self.literal = literal
        self.trie = tree
        self.other = other
        self.history = history  # its version and recent changes, for `authorize_by_resource_type`
        # the hosts its grants name but `*` (or ever named since they were first asked: a superset), None until asked
        self.hosts: frozenset[str] | None = None

    @property
    def prefixed(self) -> dict[str, Grants]:
        """The PREFIXED names and their grants, as a new dict (a walk over the whole tree)."""
        return dict(trie.items(self.trie))

    def grants(self, kind: str, name: str) -> Grants | None:
        """The grants of `name` among the `kind` names ("literal", "prefixed" or "other"), or None."""
        if kind == "literal":
            return self.literal.get(name)
        if kind == "prefixed":
            return trie.get(self.trie, name)
        return self.other.get(name)

    def named_hosts(self) -> frozenset[str]:
        """Every host its grants name, `*` aside, and maybe hosts they named before (a superset: never fewer): one
        walk over the view the first time a version of it is asked, then carried to each next version with the hosts
        its changes add (`updated`), so that a change to a large view costs no walk (a field set once; two threads
        that race compute the same set)."""
        hosts = self.hosts
        if hosts is None:
            named: set[str] = set()
            for grants in (*self.literal.values(), *self.other.values()):
                named.update(grants)
            for _, grants in trie.items(self.trie):
                named.update(grants)
            named.discard("*")
            hosts = self.hosts = frozenset(named)
        return hosts

    def is_empty(self) -> bool:
        """True when the principal has no ACL of this type left."""
        return not (len(self.literal) or self.trie is not None or self.other)

    @property
    def serial(self) -> int:
        """This version of the view: 0 as built, else the serial of the TypeIndex that last changed it."""
        return self.history[0] if self.history is not None else 0

    def changes_since(self, serial: int) -> tuple[Change, ...] | None:
        """The changes from version `serial` of this view to this one, oldest first; None when they are not kept."""
        mine, since, changes = self.history if self.history is not None else (0, 0, ())
        if serial == mine:
            return ()
        if serial != since and not any(change[0] == serial for change in changes):
            return None  # an older version (or another view of this principal, removed since)
        return tuple(change for change in changes if change[0] > serial)

    def updated(
        self,
        changes: Mapping[str, Mapping[str, Grants | None]],
        serial: int = 0,
        bits: Mapping[tuple[str, str], Bits] = EMPTY,
    ) -> PrincipalView | None:
        """The view with `changes` (kind -> name -> new grants, None to remove the name); None when nothing is left.

        `serial` names the new version, and `bits` says, per changed (kind, name), which grant bits
        some host lost and gained: the view keeps the last `HISTORY_LIMIT` such changes (see `changes_since`).
        """
        literal, tree, other = self.literal, self.trie, self.other
        for kind, names in changes.items():
            if kind == "literal":
                literal = _updated_names(literal, names)
            elif kind == "prefixed":
                for name, grants in names.items():
                    tree = trie.put(tree, name, grants) if grants is not None else trie.drop(tree, name)  # type: ignore[arg-type]
            else:
                other = dict(other)
                _apply(other, names)
        fresh = PrincipalView(literal, tree, other, self._next_history(serial, bits))
        if self.hosts is not None:  # asked before: carried over with what the changes add (a removed host stays)
            added = {host for names in changes.values() for grants in names.values() if grants for host in grants}
            added.discard("*")
            fresh.hosts = self.hosts if added <= self.hosts else self.hosts | added
        return None if fresh.is_empty() else fresh

    def _next_history(self, serial: int, bits: Mapping[tuple[str, str], Bits]) -> History:
        _, since, kept = self.history if self.history is not None else (0, 0, ())
        new = [(serial, kind, name, lost, gained) for (kind, name), (lost, gained) in bits.items() if kind != "other"]
        if len(new) > HISTORY_LIMIT:
            return (serial, serial, ())
        changes = (*kept, *new)
        if len(changes) > HISTORY_LIMIT:  # drop the oldest versions' changes, each version's all together
            cut = len(changes) - HISTORY_LIMIT
            while changes[cut][0] == changes[cut - 1][0]:
                cut += 1
            since, changes = changes[cut - 1][0], changes[cut:]
        return (serial, since, changes)


EMPTY_VIEW = PrincipalView(NO_NAMES, None, NO_NAMES, (-1, -1, ()))  # the view of a principal without ACLs of a type


def _updated_names(names: Names, changes: Mapping[str, Grants | None]) -> Names:
    """`names` with `changes` applied: a copied dict while small, else the changes go into a NameMap's overlay."""
    if isinstance(names, dict) and len(names) + len(changes) <= COPY_LIMIT:
        fresh = dict(names)
        _apply(fresh, changes)
        return fresh
    done: OverlayMap[str, Grants] = names if isinstance(names, NameMap) else NameMap(names)  # type: ignore[arg-type]
    for name, grants in changes.items():
        done = done.delete(name) if grants is None else done.set(name, grants)
    folded = done.folded()
    return done if folded is None else folded


def _apply(names: dict[str, Grants], changes: Mapping[str, Grants | None]) -> None:
    for name, grants in changes.items():
        if grants is None:
            del names[name]
        else:
            names[name] = grants
