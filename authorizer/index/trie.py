"""One principal's PREFIXED names as a persistent radix tree, walked to find every name that prefixes a resource name.

A node is an immutable tuple, never changed once built; an update copies only the nodes on the
path to the changed name (path copying), so any number of threads may read a tree while a new
one is derived from it.

A node is a tuple, in one of two shapes:

    (label, grants)                          a name with nothing below it (a leaf)
    (label, grants, depth, keys, *kids)      a name with names below it, or a branch point

    label   the node's name when it holds one (`grants` is not None); for a branch point, the
            name of a node below it: only its first `depth` characters matter
    grants  the name's grants (host -> grant mask, never empty), or None at a branch point
    depth   how many characters the node's string has (len(label) for a name)
    keys    one character per child: the character at position `depth` of the child's names
    kids    the children, in `keys` order (sorted, so a walk in key order yields sorted names)

(Leaves are most of a tree's nodes, and two fields and no child tuple make a tree smaller than the
sorted arrays it replaced.) A branch point has at least two children, and a name with one child
keeps it: the tree of a set of names is unique (a radix tree), however it was built. Worked
example, the names `ab`, `abcd`, `abx` and `b`:

    ("ab",  None, 0, "ab", <ab>, <b>)                branch point at ""
    <ab>    ("ab", g1, 2, "cx", <abcd>, <abx>)       name "ab", two children
    <abcd>  ("abcd", g2)                             name "abcd"
    <abx>   ("abx", g3)                              name "abx"
    <b>     ("b", g4)                                name "b"

The names covering N = "abcz": at "" (a branch point) take N[0] = "a" -> "ab", a prefix of N:
it covers N; take N[2] = "c" -> "abcd", not a prefix of N: stop. Nothing below a name that is
not a prefix of N can be one, and a branch point need not be checked: the next name on the path
is. A walk costs one step per branch point or name on N's path, however many names there are;
an insert or a removal copies those nodes and nothing else. `bulk_rows.prefix_trie` builds a
tree in one pass over sorted names, and `bulk_rows.grant_mask` walks it for every decision.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Grants = Mapping[str, int]  # host -> grant mask
# (label, grants) or (label, grants, depth, keys, *kids): see the module docstring.
Node = tuple[Any, ...]
_KIDS = 4  # where an inner node's children start


def covering(node: Node | None, name: str) -> Iterator[tuple[str, Grants]]:
    """(prefix name, grants) of every name in the tree that is a prefix of `name`, shortest first."""
    while node is not None:
        label, grants = node[0], node[1]
        if grants is not None:
            if not name.startswith(label):
                return
            yield label, grants
        if len(node) == 2:
            return
        depth, keys = node[2], node[3]
        if depth >= len(name):
            return
        at = keys.find(name[depth])
        if at < 0:
            return
        node = node[_KIDS + at]


def get(node: Node | None, name: str) -> Grants | None:
    """The grants of exactly `name`, or None."""
    found = None
    for label, grants in covering(node, name):
        if len(label) == len(name):
            found = grants
    return found


def items(node: Node | None) -> Iterator[tuple[str, Grants]]:
    """Every (name, grants) of the tree, in sorted order."""
    stack = [node] if node is not None else []
    while stack:
        node = stack.pop()
        if node[1] is not None:
            yield node[0], node[1]
        stack.extend(reversed(node[_KIDS:]))


def size(node: Node | None) -> int:
    """How many names the tree holds (a walk over every node)."""
    return sum(1 for _ in items(node))


def depth_of(node: Node) -> int:
    """The length of a node's string."""
    return len(node[0]) if len(node) == 2 else int(node[2])


def shaped(label: str, grants: Grants | None, depth: int, keys: str, kids: tuple[Node, ...]) -> Node:
    """The node of these fields in its canonical shape: a leaf when it has no children."""
    if not kids:
        return (label, grants)
    return (label, grants, depth, keys, *kids)


def put(node: Node | None, name: str, grants: Grants) -> Node:
    """A tree with `name` holding `grants` (added, or its grants replaced); `node` is untouched."""
    if node is None:
        return (name, grants)
    label, old = node[0], node[1]
    depth, keys, kids = depth_of(node), _keys(node), node[_KIDS:]
    common = _common(label, name, min(depth, len(name)))
    if common < depth:  # `name` leaves this node's string at `common`: a new node above this one
        if common == len(name):
            return (name, grants, common, label[common], node)
        leaf: Node = (name, grants)
        pair = (node, leaf) if label[common] < name[common] else (leaf, node)
        return (name, None, common, pair[0][0][common] + pair[1][0][common], *pair)
    if depth == len(name):
        return shaped(name, grants, depth, keys, kids)
    char = name[depth]
    at = keys.find(char)
    if at >= 0:
        return (label, old, depth, keys, *kids[:at], put(kids[at], name, grants), *kids[at + 1 :])
    at = _insertion_point(keys, char)
    return (label, old, depth, keys[:at] + char + keys[at:], *kids[:at], (name, grants), *kids[at:])


def drop(node: Node, name: str) -> Node | None:
    """A tree without `name`, which it must hold (KeyError otherwise); `node` is untouched."""
    label, grants = node[0], node[1]
    depth, keys, kids = depth_of(node), _keys(node), node[_KIDS:]
    if depth == len(name):
        if grants is None or label != name:
            raise KeyError(name)
        if len(kids) == 1:
            only: Node = kids[0]
            return only  # a name with one child: the child takes its place
        return (label, None, depth, keys, *kids) if kids else None
    at = keys.find(name[depth]) if depth < len(name) else -1
    if at < 0:
        raise KeyError(name)
    child = drop(kids[at], name)
    if child is not None:
        return (label, grants, depth, keys, *kids[:at], child, *kids[at + 1 :])
    rest = (*kids[:at], *kids[at + 1 :])
    if grants is None and len(rest) == 1:
        survivor: Node = rest[0]
        return survivor  # a branch point left with one child is no longer one
    return shaped(label, grants, depth, keys[:at] + keys[at + 1 :], rest)


def _keys(node: Node) -> str:
    return "" if len(node) == 2 else str(node[3])


def _common(label: str, name: str, limit: int) -> int:
    """The length of the common prefix of `label` and `name`, at most `limit`."""
    if name.startswith(label[:limit]):
        return limit
    common = 0
    while label[common] == name[common]:
        common += 1
    return common


def _insertion_point(keys: str, char: str) -> int:
    at = 0
    while at < len(keys) and keys[at] < char:
        at += 1
    return at
