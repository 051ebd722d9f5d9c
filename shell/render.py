"""Text the metadata shell prints: KIP-801's ACL JSON as Kafka 3.4's shell printed it, `ls` columns as Kafka's
LsCommandHandler lays them out, and the tables of `who-can` and `history`.

Pure functions; thread-safe.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from kraftacl.authorizer.model.acls import StandardAcl


def acl_json(acl_id: str, acl: StandardAcl) -> str:
    """The AccessControlEntryRecord as Jackson's pretty printer writes it (`"key" : value`, enum codes)."""
    fields = (
        ("id", acl_id),
        ("resourceType", int(acl.resource_type)),
        ("resourceName", acl.resource_name),
        ("patternType", int(acl.pattern_type)),
        ("principal", acl.principal),
        ("host", acl.host),
        ("operation", int(acl.operation)),
        ("permissionType", int(acl.permission_type)),
    )
    body = ",\n".join(f"  {json.dumps(key)} : {json.dumps(value, ensure_ascii=False)}" for key, value in fields)
    return "{\n" + body + "\n}"


def column_layout(entries: Sequence[str], screen_width: int | None) -> tuple[int, list[int]]:
    """(entries per column, column widths) as Kafka's `calculateColumnSchema` picks them: the most columns,
    up to width/4, whose widths (longest entry + 2) fit the screen with the last column not empty."""
    count = len(entries)
    if screen_width is None or screen_width // 4 <= 1 or count == 0:
        return count, [0]
    lengths = [len(entry) for entry in entries]
    for columns in range(screen_width // 4, 1, -1):
        per_column = -(-count // columns)
        widths = [
            max(lengths[start : start + per_column], default=-2) + 2
            for start in range(0, columns * per_column, per_column)
        ]
        if widths[-1] != 0 and sum(widths) <= screen_width:
            return per_column, widths
    return count, [0]


def columns(entries: Sequence[str], screen_width: int | None) -> list[str]:
    """The lines of `entries` laid out in columns (one per line without a screen width)."""
    per_column, widths = column_layout(entries, screen_width)
    if len(widths) == 1:
        return list(entries)
    lines = []
    for line in range(per_column):
        cells = []
        for column, width in enumerate(widths):
            index = line + column * per_column
            if index < len(entries):
                entry = entries[index]
                cells.append(entry.ljust(width) if column < len(widths) - 1 else entry)
        lines.append("".join(cells))
    return lines


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows left-aligned in columns two spaces apart (the last column as is)."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]).rstrip() for row in rows
    ]
