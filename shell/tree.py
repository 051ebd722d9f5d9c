"""The metadata shell's tree over one View: Kafka 3.4's `/acl/id/<id>` (KIP-801's JSON), Kafka 4's
`/image/acls/<id>` and `/image/provenance`, `/local/version`, and the views Kafka lacks:
`/acl/by-resource/<TYPE>/<PATTERN>/<name>/<id>`, `/acl/by-principal/<principal>/<id>` and `/provenance`.

Nodes are made on demand from an immutable View and status, and are themselves immutable; a
directory lists its children unsorted (commands sort, as Kafka's do) unless it keeps them sorted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import cached_property, partial
from importlib import metadata

from kraftacl.authorizer.model.acls import PatternType, ResourceType
from kraftacl.authorizer.state.image import Provenance
from kraftacl.shell.paths import acl_id_of, decode_name, encode_name
from kraftacl.shell.render import acl_json
from kraftacl.shell.sources.base import SourceStatus, View


class Printer:
    """Kafka's ShellNodePrinter: `name:` headers and text lines, indented two spaces per level."""

    def __init__(self, write: Callable[[str], object]) -> None:
        self.write = write
        self.level = 0

    def enter(self, name: str) -> None:
        self.write(f"{'  ' * self.level}{name}:\n")
        self.level += 1

    def leave(self) -> None:
        self.level -= 1

    def output(self, text: str) -> None:
        indent = "  " * self.level
        self.write("".join(f"{indent}{line}\n" for line in text.split("\n")))


class Node:
    """A directory (the default) or, when `is_directory` is False, a leaf that prints text."""

    is_directory = True

    def child_names(self) -> Iterable[str]:
        return ()

    def sorted_names(self) -> Sequence[str]:
        """The children's names in Kafka's order (String.compareTo: code points, the BMP being what matters)."""
        return sorted(self.child_names())

    def child(self, name: str) -> Node | None:
        return None

    def print(self, printer: Printer) -> None:
        """A directory prints each child under its name, in order (Kafka's MetadataNode.print)."""
        for name in self.sorted_names():
            child = self.child(name)
            if child is not None:
                printer.enter(name)
                child.print(printer)
                printer.leave()


class Leaf(Node):
    """A file: its text, printed as is."""

    is_directory = False

    def __init__(self, text: str) -> None:
        self.text = text

    def print(self, printer: Printer) -> None:
        printer.output(self.text)


class Fixed(Node):
    """A directory with a fixed set of children, each made when asked for."""

    def __init__(self, children: dict[str, Callable[[], Node]]) -> None:
        self.children = children

    def child_names(self) -> Iterable[str]:
        return self.children

    def child(self, name: str) -> Node | None:
        make = self.children.get(name)
        return None if make is None else make()


class AclIds(Node):
    """ACLs by id: base64 ids listed, base64 or dashed UUIDs accepted; leaves are JSON (`json`) or StandardAcl text."""

    def __init__(self, view: View, ids: Sequence[str] | None = None, json: bool = False) -> None:
        self.view = view
        self.ids = ids  # None: every ACL of the view
        self.json = json

    def child_names(self) -> Iterable[str]:
        return self.view.ids() if self.ids is None else self.ids

    def sorted_names(self) -> Sequence[str]:
        return self.view.sorted_ids if self.ids is None else self.ids  # groups keep their ids sorted

    @cached_property
    def members(self) -> frozenset[str] | None:
        """The group's ids as a set (a glob over a large group asks for each of them)."""
        return None if self.ids is None else frozenset(self.ids)

    def child(self, name: str) -> Node | None:
        acl_id = acl_id_of(name)
        if acl_id is None or (self.members is not None and acl_id not in self.members):
            return None
        acl = self.view.acl(acl_id)
        if acl is None:
            return None
        return Leaf(acl_json(acl_id, acl) if self.json else str(acl))


class Names(Node):
    """Escaped names (resource names, principals), each a directory of the ACL ids filed under it."""

    def __init__(self, view: View, ids_by_name: Callable[[], dict[str, list[str]]]) -> None:
        self.view = view
        self.ids_by_name = ids_by_name

    def child_names(self) -> Iterable[str]:
        return (encode_name(name) for name in self.ids_by_name())

    def child(self, name: str) -> Node | None:
        ids = self.ids_by_name().get(decode_name(name))
        return None if ids is None else AclIds(self.view, ids)


def _by_resource(view: View) -> Node:
    by_resource = view.groups.by_resource

    def names(rtype: ResourceType, ptype: PatternType) -> Node:
        return Names(view, lambda: by_resource[rtype][ptype])

    def patterns(rtype: ResourceType) -> Node:
        return Fixed({p.name: partial(names, rtype, p) for p in by_resource[rtype]})

    return Fixed({t.name: partial(patterns, t) for t in by_resource})


def kafka_time(timestamp_ms: int) -> str:
    """Java's ISO_ZONED_DATE_TIME of a UTC ZonedDateTime: `2023-11-14T22:13:20.5Z[UTC]` (fraction only if any)."""
    moment = datetime.fromtimestamp(timestamp_ms // 1000, UTC)
    millis = timestamp_ms % 1000
    fraction = f".{millis:03d}".rstrip("0") if millis else ""
    return f"{moment.strftime('%Y-%m-%dT%H:%M:%S')}{fraction}Z[UTC]"


def kafka_provenance(p: Provenance) -> str:
    """Kafka's ProvenanceNode text."""
    return f"offset {p.last_offset}, epoch {p.epoch}, time {kafka_time(p.timestamp_ms)}"


def _provenance(view: View, status: SourceStatus) -> Node:
    p = view.provenance
    fields = {
        "offset": str(view.offset),
        "lastOffset": str(p.last_offset),
        "epoch": str(p.epoch),
        "time": kafka_time(p.timestamp_ms),
        "highWaterMark": "none" if status.high_watermark is None else str(status.high_watermark),
        "ready": str(status.ready).lower(),
        "snapshot": status.snapshot or "none",
        "source": status.description,
        "following": str(status.following).lower(),
    }
    if status.error is not None:
        fields["error"] = status.error
    if status.notes:
        fields["notes"] = "\n".join(status.notes)
    return Fixed({name: partial(Leaf, text) for name, text in fields.items()})


def version() -> str:
    """This kraft-acl's version."""
    try:
        return metadata.version("kraft-acl")
    except metadata.PackageNotFoundError:
        return "unknown"


def root(view: View, status: Callable[[], SourceStatus]) -> Node:
    """The whole tree at one state."""
    acl: dict[str, Callable[[], Node]] = {
        "id": lambda: AclIds(view, json=True),
        "by-resource": lambda: _by_resource(view),
        "by-principal": lambda: Names(view, lambda: view.groups.by_principal),
    }
    image: dict[str, Callable[[], Node]] = {
        "acls": lambda: AclIds(view),
        "provenance": lambda: Leaf(kafka_provenance(view.provenance)),
    }
    return Fixed(
        {
            "acl": partial(Fixed, acl),
            "image": partial(Fixed, image),
            "local": lambda: Fixed({"version": lambda: Leaf(version())}),
            "provenance": lambda: _provenance(view, status()),
        }
    )
