"""The shell commands no Kafka tool has: `authorize` (the decision and its rule), `who-can`, `at <offset>` and
`history <id|path>` (when ACLs were added and removed).

Stateless functions of a ShellState and a parsed command line; the work itself is the library's
(`StandardAuthorizer.explain`, `authorizer.decision.who_can`, `authorizer.history.acl_history`).
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import TYPE_CHECKING, TypeVar

from kraftacl.authorizer.decision.standard import Action, RequestContext
from kraftacl.authorizer.decision.who_can import WhoCan, WhoCanEntry
from kraftacl.authorizer.decision.who_can import who_can as library_who_can
from kraftacl.authorizer.errors import AuthorizerError
from kraftacl.authorizer.history.acl_history import AclEvent
from kraftacl.authorizer.model.acls import CLUSTER_NAME, WILDCARD_HOST, AclOperation, ResourceType
from kraftacl.authorizer.model.hosts import ip_host_address
from kraftacl.metadata_log.records import iso_time
from kraftacl.shell.parse import EXIT_USAGE, Parsed
from kraftacl.shell.paths import acl_id_of
from kraftacl.shell.render import table
from kraftacl.shell.sources.base import SourceError, SourceStatus, View

if TYPE_CHECKING:
    from kraftacl.shell.state import Match, ShellState

E = TypeVar("E", bound=IntEnum)
_NUMBER = re.compile(r"-?\d+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def named(cls: type[E], text: str, what: str) -> E:
    """A concrete enum member from its name in any case, with `-` or `_`, or CamelCase (`DescribeConfigs`)."""
    for key in (text.upper().replace("-", "_"), _CAMEL.sub("_", text).upper()):
        member = cls.__members__.get(key)
        if member is not None and member.name not in ("ANY", "UNKNOWN"):
            return member
    choices = ", ".join(name for name in cls.__members__ if name not in ("ANY", "UNKNOWN"))
    raise ValueError(f"unknown {what} '{text}' (one of {choices})")


def resource(text: str) -> tuple[ResourceType, str]:
    """`TYPE:name` (`CLUSTER` alone is the cluster resource)."""
    type_text, colon, name = text.partition(":")
    rtype = named(ResourceType, type_text, "resource type")
    if colon:
        return rtype, name
    if rtype is ResourceType.CLUSTER:
        return rtype, CLUSTER_NAME
    raise ValueError(f"resource '{text}' is not TYPE:name (TOPIC:orders)")


def authorize(shell: ShellState, parsed: Parsed) -> None:
    """The decision, the rule Kafka's audit log would name, and that ACL's path."""
    principal, host = parsed.one("principal") or "", parsed.one("host")
    try:
        operation = named(AclOperation, parsed.one("operation") or "", "operation")
        rtype, name = resource(parsed.one("resource") or "")
        if ":" not in principal:
            raise ValueError(f"principal '{principal}' is not Type:name (User:alice)")
        if host is not None and ip_host_address(host) is None:
            raise ValueError(f"host '{host}' is not an IP address (a request comes from a client's address)")
    except ValueError as exc:
        shell.error(f"authorize: {exc}", EXIT_USAGE)
        return
    ctx = RequestContext.of(principal, host) if host is not None else RequestContext(principal, WILDCARD_HOST)
    view = shell.view
    try:
        decision = view.authorizer.explain(ctx, Action(operation, rtype, name, log_if_allowed=False))
    except AuthorizerError as exc:
        shell.error(f"authorize: {exc}")
        return
    shell.print(decision.result.name)
    shell.print(f"rule: {decision.rule}")
    acl_id = view.groups.id_of[decision.rule.acl] if decision.rule.acl is not None else None
    if acl_id is not None:
        shell.print(f"acl: /acl/id/{acl_id}")
    shell.record(result=decision.result.name, rule=str(decision.rule), acl_id=acl_id, offset=view.offset)


def who_can(shell: ShellState, parsed: Parsed) -> None:
    """One row per (principal, host) decision, then the ACLs the rows name."""
    try:
        operation = named(AclOperation, parsed.one("operation") or "", "operation")
        rtype, name = resource(parsed.one("resource") or "")
    except ValueError as exc:
        shell.error(f"who-can: {exc}", EXIT_USAGE)
        return
    view = shell.view
    try:
        answer = library_who_can(view.authorizer, operation, rtype, name)
    except AuthorizerError as exc:
        shell.error(f"who-can: {exc}")
        return
    shell.print(f"who-can {operation.name} {rtype.name}:{name} at offset {view.offset}")
    rows = [_row(view, answer, entry) for entry in answer.entries]
    for line in table(rows):
        shell.print(line)
    named_acls = {acl for entry in answer.entries for acl in entry.acls}
    shell.record(
        operation=operation.name,
        resource=f"{rtype.name}:{name}",
        offset=view.offset,
        rows=[dict(zip(("result", "principal", "host", "rule", "also"), row, strict=True)) for row in rows],
        acls={view.groups.id_of[acl]: str(acl) for acl in sorted(named_acls | set(answer.unmatched), key=str)},
        unmatched=sorted(view.groups.id_of[acl] for acl in answer.unmatched),
    )
    if named_acls:
        shell.print("")
        for line in sorted(f"{view.groups.id_of[acl]}  {acl}" for acl in named_acls):
            shell.print(line)
    if answer.unmatched:
        shell.print("")
        shell.print("ACLs on this resource that no request can match (a principal without a colon, or a host")
        shell.print("that is not an IP address as Java writes it):")
        for line in sorted(f"{view.groups.id_of[acl]}  {acl}" for acl in answer.unmatched):
            shell.print(line)


def _row(view: View, answer: WhoCan, entry: WhoCanEntry) -> list[str]:
    principal = entry.principal if entry.principal is not None else "any other principal"
    alone = sum(1 for other in answer.entries if other.principal == entry.principal) == 1
    host = entry.host if entry.host is not None else "any host" if alone else "any other host"
    deciding = entry.decision.rule.acl
    rule = entry.decision.rule.kind + ("" if deciding is None else f" {view.groups.id_of[deciding]}")
    others = sorted(view.groups.id_of[acl] for acl in entry.acls if acl != deciding)
    return [entry.decision.result.name, principal, host, rule, f"also applying: {' '.join(others)}" if others else ""]


def at(shell: ShellState, parsed: Parsed) -> None:
    """`at`: where the tree stands; `at N`: move it to the state at offset N; `at latest`: back to the newest."""
    text = parsed.one("offset")
    source = shell.source
    try:
        if text == "latest":
            source.seek(None)
            if shell.interactive:
                source.follow()
        elif text is not None:
            if not _NUMBER.fullmatch(text):
                shell.error(f"at: '{text}' is not an offset (a number, or latest)", EXIT_USAGE)
                return
            source.seek(int(text))
    except SourceError as exc:
        shell.error(f"at: {exc}")
        return
    shell.print(position(source.view().offset, source.status()))


def position(offset: int, status: SourceStatus) -> str:
    """Where the tree stands, in words."""
    if status.high_watermark is None and status.pinned is None and not status.following:
        return f"offset {offset} ({status.description}: one fixed state)"
    hwm = "unknown" if status.high_watermark is None else str(status.high_watermark)
    if status.pinned is not None:
        return f"offset {offset} (high-water mark {hwm}; pinned: `at latest` returns to the newest state)"
    following = ", following new records" if status.following else ""
    return f"offset {offset} (high-water mark {hwm}; the newest state{following})"


def acl_history(shell: ShellState, words: list[str]) -> None:
    """When each named ACL (ids, or paths and globs leading to ACLs) was added and removed."""
    ids: dict[str, None] = {}
    for word in words:
        acl_id = acl_id_of(word)
        if acl_id is not None:
            ids[acl_id] = None
            continue
        matches = shell.visit(word)
        found = [i for match in matches for i in _ids_under(match)]
        if not found:
            shell.error(f"history: {word}: no ACL id, and no path to ACLs.")
        ids.update(dict.fromkeys(found))
    if not ids:
        return
    try:
        history = shell.source.history(ids)
    except SourceError as exc:
        shell.error(f"history: {exc}")
        return
    for acl_id in ids:
        shell.print(acl_id)
        events = history.events[acl_id]
        for line in table([_event(event) for event in events]):
            shell.print(f"  {line}")
        if not any(event.added for event in events) and shell.view.acl(acl_id) is not None:
            shell.print(f"  in the state since before offset {history.log_start} (from a snapshot)")
        elif not events:
            shell.print(f"  no record at offsets {history.log_start}..{history.end - 1} names this id")
    if history.log_start > 0:
        shell.print(f"(the log starts at offset {history.log_start}: older records survive only in snapshots)")


def _event(event: AclEvent) -> list[str]:
    what, acl = ("added", str(event.acl)) if event.acl is not None else ("removed", "")
    return [f"offset {event.offset}", f"epoch {event.epoch}", iso_time(event.timestamp_ms), what, acl]


def _ids_under(match: Match) -> list[str]:
    """The ACL ids of the leaves at or below a matched node (leaves named by an id)."""
    if not match.node.is_directory:
        acl_id = acl_id_of(match.name)
        return [] if acl_id is None else [acl_id]
    out: list[str] = []
    stack = [(match.node, name) for name in reversed(match.node.sorted_names())]
    while stack:
        parent, name = stack.pop()
        child = parent.child(name)
        if child is None:
            continue
        if child.is_directory:
            stack.extend((child, n) for n in reversed(child.sorted_names()))
        elif (acl_id := acl_id_of(name)) is not None:
            out.append(acl_id)
    return out
