"""`kraft-acl replay` and `kraft-acl diff`: the ACL state of a metadata log at an offset, and what changed between two.

Stateless; every command opens the log read-only (no lock, so a running writer is fine) and closes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from kraftacl.authorizer.history.metadata_source import SourceFormat
from kraftacl.authorizer.model.acls import StandardAcl
from kraftacl.authorizer.state.image import AclsImage
from kraftacl.cli.errors import fail
from kraftacl.cli.kafka_files import kafka_files, kafka_state
from kraftacl.cli.log_state import (
    STATE_AT_HELP,
    acl_json,
    acl_table,
    check_batch_boundary,
    check_offset,
    library_errors,
    provenance_json,
    replayed,
    sorted_acls,
)
from kraftacl.cli.output import Output, OutputOpt, print_table
from kraftacl.metadata_log.records import iso_time
from kraftacl.snapshots.naming import parse_name

LogDir = Annotated[
    Path,
    typer.Option(
        "--log-dir",
        metavar="DIR",
        help="the metadata log directory (segments, snapshots), or Apache Kafka's KRaft metadata",
    ),
]


def replay_command(
    log_dir: LogDir,
    to_offset: Annotated[int | None, typer.Option("--to-offset", metavar="N", help=STATE_AT_HELP)] = None,
    output: OutputOpt = Output.table,
) -> None:
    """The ACL state at an offset: the newest snapshot at or below it plus the log tail.

    --log-dir may also name Apache Kafka's own KRaft metadata (a metadata.log.dir, `__cluster_metadata-0`,
    one `.log` segment or one `.checkpoint`); offsets are then Kafka's.

    \b
    Example:
      kraft-acl replay --log-dir data/meta --to-offset 120
      kraft-acl replay --log-dir data/meta -o json
      kraft-acl replay --log-dir /var/lib/kafka/meta/__cluster_metadata-0
    """
    if kafka_files(log_dir) is not None:
        state = kafka_state(log_dir, to_offset, "--to-offset")
        _print_state(state.image, state.high_watermark, state.snapshot, output, state.format)
        return
    with replayed(log_dir, to_offset) as node:
        with library_errors():
            hwm = node.backend.high_watermark()
        image, loaded = node.image, node.loaded_snapshot
    _print_state(image, hwm, loaded, output, SourceFormat.KRAFT_ACL_LOG)


def _print_state(image: AclsImage, hwm: int, loaded: Path | None, output: Output, fmt: SourceFormat) -> None:
    p = image.provenance
    if output.is_json:
        typer.echo(
            json.dumps(
                {
                    "format": fmt.value,
                    "offset": p.next_offset,
                    "high_watermark": hwm,
                    "provenance": provenance_json(p),
                    "snapshot": None if loaded is None else str(loaded),
                    "acls": [acl_json(i, a) for i, a in sorted_acls(image.acls)],
                }
            )
        )
        return
    typer.echo(f"State at offset {p.next_offset} (high-water mark {hwm})")
    if p.last_offset < 0:
        typer.echo("Provenance: no record applied")
    else:
        typer.echo(
            f"Provenance: last offset {p.last_offset}, epoch {p.epoch}, "
            f"timestamp {p.timestamp_ms} ({iso_time(p.timestamp_ms)})"
        )
    if loaded is None:
        typer.echo(
            f"Source: log offsets 0..{p.last_offset} (no snapshot)"
            if p.last_offset >= 0
            else "Source: nothing (no record below offset 0)"
        )
    else:
        start = parse_name(loaded).end_offset
        tail = f"log offsets {start}..{p.last_offset}" if start <= p.last_offset else "no log records"
        typer.echo(f"Source: snapshot {loaded}, then {tail}")
    typer.echo(f"Format: {fmt}")
    typer.echo(f"{len(image)} ACL(s)")
    if len(image):
        print_table(acl_table(image.acls))


def diff_command(
    log_dir: LogDir,
    from_offset: Annotated[
        int, typer.Option("--from-offset", metavar="A", help="the earlier state: every record below offset A")
    ],
    to_offset: Annotated[
        int,
        typer.Option("--to-offset", metavar="B", help="the later state: every record below offset B (exclusive)"),
    ],
    output: OutputOpt = Output.table,
) -> None:
    """ACLs added and removed between the state at offset A and the state at offset B (by ACL id).

    --log-dir may also name Apache Kafka's own KRaft metadata; offsets are then Kafka's.

    \b
    Example:
      kraft-acl diff --log-dir data/meta --from-offset 0 --to-offset 120
    """
    if from_offset > to_offset:
        fail(f"--from-offset {from_offset} is above --to-offset {to_offset}")
    before: Mapping[str, StandardAcl]
    after: Mapping[str, StandardAcl]
    if kafka_files(log_dir) is not None:
        before = kafka_state(log_dir, from_offset, "--from-offset").image.acls
        after = kafka_state(log_dir, to_offset, "--to-offset", say=False).image.acls
    else:
        with replayed(log_dir, from_offset, option="--from-offset") as node, library_errors():
            check_offset("--to-offset", to_offset, node.backend.high_watermark())
            check_batch_boundary("--to-offset", to_offset, node.backend)
            before = node.image.acls
            node.loader.catch_up(to_offset)  # the same node walks on from A to B
            after = node.image.acls
    removed = {i: a for i, a in before.items() if i not in after}
    added = {i: a for i, a in after.items() if i not in before}
    if output.is_json:
        typer.echo(
            json.dumps(
                {
                    "from_offset": from_offset,
                    "to_offset": to_offset,
                    "added": _acls_json(added),
                    "removed": _acls_json(removed),
                }
            )
        )
        return
    typer.echo(f"Offsets {from_offset} -> {to_offset}: {len(added)} added, {len(removed)} removed")
    for sign, acls in (("-", removed), ("+", added)):
        for acl_id, acl in sorted_acls(acls):
            typer.echo(f"{sign} {acl_id} {acl}")


def _acls_json(acls: Mapping[str, StandardAcl]) -> list[dict[str, Any]]:
    return [acl_json(i, a) for i, a in sorted_acls(acls)]
