"""Per-row loops, compiled by mypyc: bulk loads (index build, initial replay, snapshot chunks), prefix trees,
and the grant mask every decision computes.

Pure functions over their arguments; callers own the dicts they pass in.

`setup.py` compiles a stamped copy of this file (see `metadata_log/native.py`); `authorizer.index.native_rows`
picks the compiled copy when it is current, else this source. Both must behave identically (the
tests run both), so this module is plain typed Python that mypyc turns into C-level dict and tuple
calls: a million ACLs leave no room for Python-level statements per ACL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Grants = dict[str, int]
# One resource type's grouped ACLs, filled by `group_acls`:
#   [0] literal    name -> the first ACL on that name (LITERAL pattern)
#   [1] prefixed   name -> the first ACL on that name (PREFIXED or a hand-made pattern code)
#   [2] shared     (name, is literal) -> every ACL on that name, in order, when there are several
#   [3] views      of LITERAL ACLs: principal -> name -> grants (host -> grant mask)
#   [4] the PREFIXED ACLs, in order (`prefix_tries` makes each principal's tree of them)
#   [5] views      of hand-made pattern codes, as [3]
Views = dict[str, dict[str, Grants]]
TypeGroups = tuple[dict[str, Any], dict[str, Any], dict[tuple[str, bool], list[Any]], Views, list[Any], Views]


WILDCARD_PRINCIPAL = "User:*"  # authorizer.model.acls.WILDCARD_PRINCIPAL (this module imports nothing of the project)
_ABSENT: Any = object()  # `apply_new_rows`' marker for an id `pop` did not find


def hashed_dict() -> dict[Any, Any]:
    """An empty dict in CPython's general key layout, which keeps each key's hash in its entry.

    A str-keyed dict starts in a compact layout without hashes: every probe that passes another key
    reads that key's object, a cache miss in a big map. A dict that once held a non-str key keeps
    the general layout as it grows, and its resizes read the stored hashes instead of every key:
    a million fresh ids go in about 20% faster, for 8 more bytes per entry. Used for id -> ACL maps.
    """
    fresh: dict[Any, Any] = {0: None}
    del fresh[0]
    return fresh


def group_acls(
    acls: list[tuple[Any, ...]],
    n_types: int,
    bits: tuple[tuple[int, ...], ...],
    singles: Any,
    intern: Callable[[Grants], Grants],
    literal: object,
    prefixed: object,
) -> list[TypeGroups | None]:
    """Group StandardAcl tuples per resource type code (None where a type has none), in one pass.

    `bits[permission][operation]` is an ACL's grant bit; `singles[host][permission * len(bits[0]) +
    operation]` the interned `{host: that bit}` (keyed by a small int, which CPython never allocates); `intern`
    shares a grants dict; `literal` and `prefixed` are the two pattern members. A name one
    principal has several ACLs on gets its grants ORed per host into one fresh dict (copied once
    from the shared single, then filled in place), interned once complete: linear in the ACLs even
    where one principal has thousands of hosts on one name (Kafka's JMH sets put 20,000 on `*`).
    The name maps and the views' name dicts are `hashed_dict`s: a new name's probes then compare
    stored hashes instead of reading the name of every occupied slot they pass, a cache miss each
    in maps this size. PREFIXED ACLs are only listed here: `prefix_tries` files them.
    """
    out: list[TypeGroups | None] = [None] * n_types
    merged: list[tuple[dict[str, Grants], str]] = []
    # ids of the dicts `merged` lists: alive until interned, and never an interned one, so an id is unambiguous.
    fresh: set[int] = set()
    group_acls_into(acls, 0, len(acls), out, merged, fresh, bits, singles, literal, prefixed)
    intern_merged(merged, 0, len(merged), intern)
    return out


def group_acls_into(
    acls: list[tuple[Any, ...]],
    start: int,
    end: int,
    out: list[TypeGroups | None],
    merged: list[tuple[dict[str, Grants], str]],
    fresh: set[int],
    bits: tuple[tuple[int, ...], ...],
    singles: Any,
    literal: object,
    prefixed: object,
) -> None:
    """`group_acls`' pass over `acls[start:end]` into `out`, `merged` and `fresh`, so that a caller can group a
    large list a step at a time (and give the GIL back between steps); `intern_merged` finishes."""
    for position in range(start, end):
        acl = acls[position]
        code: int = acl[0]
        name: str = acl[1]
        groups = out[code]
        if groups is None:
            groups = out[code] = (hashed_dict(), hashed_dict(), {}, {}, [], {})
        pattern: object = acl[2]
        kind = 0 if pattern == literal else (1 if pattern == prefixed else 2)
        buckets = groups[0] if kind == 0 else groups[1]
        first = buckets.get(name)
        if first is None:
            buckets[name] = acl
        else:
            shared = groups[2].get((name, kind == 0))
            if shared is None:
                groups[2][(name, kind == 0)] = [first, acl]
            else:
                shared.append(acl)
        if kind == 1:
            groups[4].append(acl)
            continue
        views = groups[3] if kind == 0 else groups[5]
        principal: str = acl[3]
        by_name = views.get(principal)
        if by_name is None:
            by_name = views[principal] = hashed_dict()
        _file_grant(by_name, acl, bits, singles, fresh, merged)


def intern_merged(
    merged: list[tuple[dict[str, Grants], str]], start: int, end: int, intern: Callable[[Grants], Grants]
) -> None:
    """Intern the merged grants `merged[start:end]` (complete once every ACL is grouped)."""
    for position in range(start, end):
        by_name, name = merged[position]
        by_name[name] = intern(by_name[name])


def prefix_tries(
    acls: list[tuple[Any, ...]], bits: tuple[tuple[int, ...], ...], singles: Any, intern: Callable[[Grants], Grants]
) -> dict[str, Any]:
    """principal -> the radix tree (`prefix_trie`) of its grants on the names of PREFIXED ACLs (`acls`, sorted here).

    One principal at a time: its name -> grants dict is built, turned into its tree and dropped
    before the next one's, so each reuses the memory the last one left (built all at once, the
    dicts would leave a million-ACL index with holes worth 20 bytes per ACL).
    """
    acls.sort(key=_principal)  # stable: each principal's ACLs stay in their order
    out: dict[str, Any] = {}
    start = 0
    while start < len(acls):
        start = prefix_tries_from(acls, start, len(acls), out, bits, singles, intern)
    return out


def prefix_tries_from(
    acls: list[tuple[Any, ...]],
    start: int,
    at_least: int,
    out: dict[str, Any],
    bits: tuple[tuple[int, ...], ...],
    singles: Any,
    intern: Callable[[Grants], Grants],
) -> int:
    """`prefix_tries`' work on `acls` (grouped by principal) from position `start`, whole principals only, until
    `at_least` ACLs are done (or all): the position to go on from."""
    merged: list[tuple[dict[str, Grants], str]] = []
    fresh: set[int] = set()
    done = 0
    while start < len(acls) and done < at_least:
        principal: str = acls[start][3]
        by_name: dict[str, Grants] = {}
        end = start
        while end < len(acls) and acls[end][3] == principal:
            _file_grant(by_name, acls[end], bits, singles, fresh, merged)
            end += 1
        for grants_of, name in merged:
            grants_of[name] = intern(grants_of[name])
        merged.clear()
        fresh.clear()
        out[principal] = prefix_trie(by_name)
        done += end - start
        start = end
    return start


def _principal(acl: tuple[Any, ...]) -> str:
    principal: str = acl[3]
    return principal


def _file_grant(
    by_name: dict[str, Grants],
    acl: tuple[Any, ...],
    bits: tuple[tuple[int, ...], ...],
    singles: Any,
    fresh: set[int],
    merged: list[tuple[dict[str, Grants], str]],
) -> None:
    """OR one ACL's grant bit into `by_name[its name]` (see `group_acls`)."""
    name: str = acl[1]
    host: str = acl[4]
    operation: int = acl[5]
    permission: int = acl[6]
    grants = by_name.get(name)
    if grants is None:
        by_name[name] = singles[host][permission * len(bits[0]) + operation]
    elif id(grants) in fresh:  # this name's own dict: filled in place
        grants[host] = grants.get(host, 0) | bits[permission][operation]
    else:  # a fresh dict, interned once complete: the shared ones are never mutated
        combined = dict(grants)
        combined[host] = combined.get(host, 0) | bits[permission][operation]
        by_name[name] = combined
        fresh.add(id(combined))
        merged.append((by_name, name))


def apply_new_rows(changes: dict[str, Any], ids: list[str], rows: list[Any]) -> int:
    """Apply rows onto `changes` in order (an ACL: add that id; None: remove it): -1, or the first bad position.

    A bad row is an add of an id already present or a remove of one that is absent; the rows
    before it are applied, it and the rest are not. One probe per row (`setdefault`, `pop`).
    """
    if len(rows) != len(ids):
        raise ValueError(f"{len(ids)} ids but {len(rows)} rows")
    for position in range(len(ids)):
        acl = rows[position]
        if acl is not None:
            size = len(changes)
            changes.setdefault(ids[position], acl)
            if len(changes) == size:  # the id was already there (compared by size: the value may be `acl` itself)
                return position
        elif changes.pop(ids[position], _ABSENT) is _ABSENT:
            return position
    return -1


def add_columns(
    acls: dict[str, Any],
    columns: tuple[Any, ...],
    codes: tuple[list[Any], list[Any], list[Any], list[Any]],
    unknown: tuple[Any, Any, Any, Any],
    row_type: type[tuple[Any, ...]],
) -> int:
    """Add a snapshot chunk's rows to `acls` as `row_type` tuples under their ids: -1, or the first
    position whose id is already present (the rows before it are added, it and the rest are not).

    `columns` is an AclColumns (ids, resource types, names, pattern types, principals, hosts,
    operations, permission types); `codes[k][code]` maps the k-th code column's values in range,
    `unknown[k]` every other value.
    """
    ids: list[str] = columns[0]
    types: list[int] = columns[1]
    names: list[str] = columns[2]
    patterns: list[int] = columns[3]
    principals: list[str] = columns[4]
    hosts: list[str] = columns[5]
    operations: list[int] = columns[6]
    permissions: list[int] = columns[7]
    count = len(ids)
    if not all(len(column) == count for column in columns):
        raise ValueError(f"columns of unequal lengths: {[len(column) for column in columns]}")
    rt_t, pt_t, op_t, pm_t = codes
    rt_u, pt_u, op_u, pm_u = unknown
    new = tuple.__new__
    for position in range(count):
        code = types[position]
        rt = rt_t[code] if 0 <= code < len(rt_t) else rt_u
        code = patterns[position]
        pt = pt_t[code] if 0 <= code < len(pt_t) else pt_u
        code = operations[position]
        op = op_t[code] if 0 <= code < len(op_t) else op_u
        code = permissions[position]
        pm = pm_t[code] if 0 <= code < len(pm_t) else pm_u
        acl = new(row_type, (rt, names[position], pt, principals[position], hosts[position], op, pm))
        if acls.setdefault(ids[position], acl) is not acl:
            return position
    return -1


def prefix_trie(prefixed: dict[str, Grants]) -> Any:
    """The radix tree of `authorizer.index.trie` over a view's prefixed names (None when there are none), in one pass.

    Names are taken in sorted order, keeping the path of still-open nodes as lists: each name
    closes the nodes deeper than what it shares with the previous name (the tree of a sorted set
    is built left to right), opening a branch point where it leaves a closed node's string.
    """
    names = sorted(prefixed)
    stack: list[list[Any]] = []  # the open path, [label, grants, depth, keys, kids], shallowest first
    previous = ""
    for name in names:
        if stack:
            common = _common_prefix(previous, name)
            while stack[-1][2] > common:
                done = _closed(stack.pop())
                if not stack or stack[-1][2] < common:  # `name` leaves `done`'s string below its parent
                    stack.append([name, None, common, [], []])
                _adopt(stack[-1], done)
        stack.append([name, prefixed[name], len(name), [], []])
        previous = name
    while len(stack) > 1:
        done = _closed(stack.pop())
        _adopt(stack[-1], done)
    return _closed(stack[0]) if stack else None


def _common_prefix(left: str, right: str) -> int:
    size = min(len(left), len(right))
    common = 0
    while common < size and left[common] == right[common]:
        common += 1
    return common


def _closed(node: list[Any]) -> tuple[Any, ...]:
    """A node's tuple (see `authorizer.index.trie`): (label, grants) for a leaf, else
    (label, grants, depth, keys, *kids)."""
    kids: list[Any] = node[4]
    if not kids:
        return (node[0], node[1])
    keys: list[str] = node[3]
    return (node[0], node[1], node[2], "".join(keys), *kids)


def _adopt(parent: list[Any], child: tuple[Any, ...]) -> None:
    label: str = child[0]
    depth: int = parent[2]
    parent[3].append(label[depth])
    parent[4].append(child)


def _host_mask(grants: Any, host: str) -> int:
    """The bits of `grants` for `host` and for `*`: a dict, or an `immutables.Map` of many hosts (`grant_edits`)."""
    if isinstance(grants, dict):
        hosts: dict[str, int] = grants
        return hosts.get(host, 0) | hosts.get("*", 0)
    found: int = grants.get(host, 0) | grants.get("*", 0)
    return found


def grant_mask(tindex: Any, principal: str, host: str, name: str) -> int:
    """OR of the grants of every ACL on `name` whose principal is `principal` or `User:*` and host matches.

    `tindex` is a TypeIndex. Probes, per principal view (`view_mask`): literal `name` and `*` (in the
    view's dict, or through the overlay of a view changed since the build: `{}` there is a removed name),
    the prefixed names covering `name` (a walk down the view's radix tree, `authorizer.index.trie`),
    then hand-made UNKNOWN-pattern ACLs. Every `authorize` computes this once per action.
    """
    principals: Any = tindex.principals
    mask = view_mask(principals.get(principal), host, name)
    if principal != WILDCARD_PRINCIPAL:  # the requester is `User:*` itself: one view applies
        mask |= view_mask(principals.get(WILDCARD_PRINCIPAL), host, name)
    return mask


def view_mask(view: Any, host: str, name: str) -> int:
    """OR of the grants on `name` for `host` in one principal's view (a PrincipalView, or None: no ACLs)."""
    if view is None:
        return 0
    mask = 0
    literal: Any = view.literal
    if isinstance(literal, dict):
        grants = literal.get(name)
        if grants:
            mask |= _host_mask(grants, host)
        grants = literal.get("*")
        if grants:
            mask |= _host_mask(grants, host)
    else:
        mask |= _overlay_mask(literal, host, name)
    node: Any = view.trie
    while node is not None:
        entry: tuple[Any, ...] = node
        found: Any = entry[1]
        if found is not None:
            label: str = entry[0]
            if not name.startswith(label):
                break
            mask |= _host_mask(found, host)
        if len(entry) == 2:  # a leaf
            break
        depth: int = entry[2]
        if depth >= len(name):
            break
        keys: str = entry[3]
        at = keys.find(name[depth])
        if at < 0:
            break
        node = entry[4 + at]
    other: dict[str, Any] = view.other  # values: a dict, or an `immutables.Map` of many hosts
    if other:
        for prefix, grants in other.items():
            if name.startswith(prefix):
                mask |= _host_mask(grants, host)
    return mask


def _overlay_mask(literal: Any, host: str, name: str) -> int:
    """The literal part of `grant_mask` for a view whose names are an OverlayMap (`authorizer.index.views.NameMap`)."""
    base: dict[str, Any] = literal._base  # values as `other`'s in `grant_mask`
    over: Any = literal._over
    mask = 0
    for key in (name, "*"):
        grants: Any = over[key] if key in over else base.get(key)  # `in`: a C slot, cheaper than a `get` call
        if grants:
            mask |= _host_mask(grants, host)
    return mask


# How a decision was reached (`authorizer.decision.standard` names them BY_ACL_DENY ... BY_SUPER_USER).
ACL_DENY, ACL_ALLOW, DEFAULT_DENY, DEFAULT_ALLOW, SUPER_USER = DECISION_CODES = (0, 1, 2, 3, 4)


def decide_many(
    types: Any,
    principal: str,
    host: str,
    ops: list[int],
    rtypes: list[int],
    names: list[str],
    deny_test: tuple[int, ...],
    allow_test: tuple[int, ...],
    default_allow: bool,
) -> list[int]:
    """The decision code of each LITERAL action (`ops[i]` on `names[i]` of type `rtypes[i]`) for one requester,
    against `types` (an AclIndex's TypeIndex per type code, None where a type has no ACLs).

    Decided as `decide_code` decides one action, in one compiled loop for a whole request: a broker's
    Metadata request asks hundreds of actions at once.
    """
    if len(rtypes) != len(ops) or len(names) != len(ops):
        raise ValueError(f"{len(ops)} operations, {len(rtypes)} resource types and {len(names)} names")
    out: list[int] = []
    views: dict[int, tuple[Any, Any]] = {}  # type code -> the requester's view and `User:*`'s, looked up once
    for i in range(len(ops)):
        op = ops[i]
        name = names[i]
        rtype = rtypes[i]
        tindex: Any = types[rtype]
        if tindex is None:
            out.append(DEFAULT_ALLOW if default_allow else DEFAULT_DENY)
            continue
        pair = views.get(rtype)
        if pair is None:
            principals: Any = tindex.principals
            star: Any = principals.get(WILDCARD_PRINCIPAL) if principal != WILDCARD_PRINCIPAL else None
            pair = (principals.get(principal), star)
            views[rtype] = pair
        mask = view_mask(pair[0], host, name) | view_mask(pair[1], host, name)
        out.append(code_of_mask(mask, tindex, op, name, deny_test, allow_test, default_allow))
    return out


def decide_code(
    tindex: Any,
    principal: str,
    host: str,
    op: int,
    name: str,
    deny_test: tuple[int, ...],
    allow_test: tuple[int, ...],
    default_allow: bool,
) -> int:
    """The decision code of one LITERAL action on a type that has ACLs (`tindex`, a TypeIndex)."""
    return code_of_mask(
        grant_mask(tindex, principal, host, name), tindex, op, name, deny_test, allow_test, default_allow
    )


def code_of_mask(
    mask: int,
    tindex: Any,
    op: int,
    name: str,
    deny_test: tuple[int, ...],
    allow_test: tuple[int, ...],
    default_allow: bool,
) -> int:
    """Kafka's order (spec §5) over the grants that apply: a matching DENY, then a matching ALLOW, then the
    default, which is DENIED whenever some ACL is a candidate for the resource (spec §5.5)."""
    if mask & deny_test[op]:
        return ACL_DENY
    if mask & allow_test[op]:
        return ACL_ALLOW
    if not default_allow or tindex.has_candidates(name):
        return DEFAULT_DENY
    return DEFAULT_ALLOW
