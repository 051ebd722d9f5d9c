"""`kraft-acl log dump`: every batch and record of a metadata log, in the form of kafka-dump-log's
`--cluster-metadata-decoder` (record payloads as Kafka's JSON converter writes them).

Stateless; reads the log read-only, so it works while a writer appends.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from kraftacl.cli.errors import fail
from kraftacl.cli.log_state import LIBRARY_ERRORS, check_log_dir, check_offset
from kraftacl.cli.output import Output, output_option
from kraftacl.cli.record_json import record_payload
from kraftacl.metadata_log.backends.file.directory import list_segments
from kraftacl.metadata_log.backends.file.format import FrameError, decode_frame, iter_frames, read_segment_header
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.backends.file.meta import DurableEnd
from kraftacl.metadata_log.codec import DEFAULT_CODEC, BatchSchema
from kraftacl.metadata_log.errors import CorruptLogError, DecodeError, LogError, OffsetOutOfRangeError
from kraftacl.metadata_log.records import RecordBatch

Emit = Callable[[RecordBatch], None]


def _compact(value: Any) -> str:
    """Jackson-style compact JSON: no spaces, non-ASCII text kept as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def batch_lines(batch: RecordBatch) -> Iterator[str]:
    """The text form: one batch line, then one `| offset: ...` line per record."""
    yield (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {len(batch.records)} "
        f"epoch: {batch.epoch} CreateTime: {batch.timestamp_ms}"
    )
    for offset, record in enumerate(batch.records, start=batch.base_offset):
        yield f"| offset: {offset} payload: {_compact(record_payload(record))}"


def batch_json(batch: RecordBatch) -> dict[str, Any]:
    """The JSON form of one batch (one object per batch)."""
    return {
        "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset,
        "count": len(batch.records),
        "epoch": batch.epoch,
        "createTime": batch.timestamp_ms,
        "records": [
            {"offset": o, "payload": record_payload(r)} for o, r in enumerate(batch.records, start=batch.base_offset)
        ],
    }


def _emit_text(batch: RecordBatch) -> None:
    typer.echo("\n".join(batch_lines(batch)))


def _emit_json(batch: RecordBatch) -> None:
    typer.echo(_compact(batch_json(batch)))


def dump_command(
    log_dir: Annotated[
        Path,
        typer.Option(
            "--log-dir",
            metavar="DIR",
            help="the metadata log directory (kraft-acl's, or Apache Kafka's own KRaft metadata: a "
            "metadata.log.dir, __cluster_metadata-0, one .log segment or one .checkpoint)",
        ),
    ],
    from_offset: Annotated[
        int | None,
        typer.Option(
            "--from-offset",
            metavar="N",
            help="start with the batch that holds offset N (printed whole); default: the log start",
        ),
    ] = None,
    output: Annotated[
        Output, output_option("table (kafka-dump-log's text; text is the same) or json (one object per batch)")
    ] = Output.table,
) -> None:
    """Every committed batch and record with its offsets, as kafka-dump-log --cluster-metadata-decoder prints.

    Damage stops the dump: the batches before it are printed, then one error line naming the offset (exit 2).

    \b
    Example:
      kraft-acl log dump --log-dir data/meta --from-offset 100 | less
      kraft-acl log dump --log-dir /var/lib/kafka/meta/__cluster_metadata-0 -o json
    """
    emit = _emit_json if output.is_json else _emit_text
    if from_offset is not None and from_offset < 0:
        fail(f"--from-offset {from_offset} is negative")
    from kraftacl.cli.kafka_files import kafka_files
    from kraftacl.cli.kafka_files_dump import dump_kafka  # Apache Kafka's files: loaded only for them

    kafka = kafka_files(log_dir)
    if kafka is not None:  # Apache Kafka's own KRaft files: a directory, a .log segment or a .checkpoint
        dump_kafka(kafka, from_offset or 0, output)
        return
    check_log_dir(log_dir)
    try:
        backend = FileLog(log_dir, read_only=True)
    except CorruptLogError as exc:  # damage in the middle, or lost batches: show what comes before it
        fail(f"the log cannot be read from offset {_salvage(log_dir, from_offset or 0, emit)}: {exc}")
    except LIBRARY_ERRORS as exc:
        fail(str(exc))
    with backend:
        expected = from_offset = backend.log_start_offset() if from_offset is None else from_offset
        try:
            check_offset("--from-offset", from_offset, backend.high_watermark())
            for batch in backend.read(from_offset):
                emit(batch)
                expected = batch.next_offset
        except (DecodeError, OffsetOutOfRangeError) as exc:  # their messages name the offset
            fail(str(exc))
        except BrokenPipeError:  # the reader of stdout went away (`| head`): click exits quietly
            raise
        except LIBRARY_ERRORS as exc:
            fail(f"the log cannot be read from offset {expected}: {exc}")


def _salvage(log_dir: Path, from_offset: int, emit: Emit) -> int:
    """Emit, frame by frame, the whole and decodable batches before the first damage; return where it is.

    Only used when FileLog refuses to open a log (damage that is not a torn tail): the batches before the
    damage are still worth seeing, as kafka-dump-log prints the records before an error.
    """
    expected = 0
    try:
        found = DurableEnd(log_dir).read()  # never show a batch whose fsync had not returned
    except LogError:
        return 0
    durable_end = None if found is None else found[0]
    for number, (base, path) in enumerate(list_segments(log_dir)):
        if number and base != expected:
            return expected
        expected = base
        try:
            with path.open("rb") as f:
                schema_json, start = read_segment_header(f)
                schema = BatchSchema.from_json(schema_json)
                for frame in iter_frames(f, start, os.fstat(f.fileno()).st_size, base):
                    if durable_end is not None and frame.next_offset > durable_end:
                        return expected
                    batch = decode_frame(DEFAULT_CODEC, frame, schema, path)
                    if batch.next_offset > from_offset:
                        emit(batch)
                    expected = batch.next_offset
        except BrokenPipeError:
            raise
        except (FrameError, LogError, ValueError, OSError):
            return expected
    return expected
