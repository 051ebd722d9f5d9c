"""Re-basing a `FileLog` directory that lost acknowledged batches: the log continues at a new start offset.

One function, run by `kraft-acl log recover` while it holds the writer lock; not thread-safe.

The segments are moved (never deleted) into `<dir>/recovered-<new start>/`, then `log-meta`
records the new log start and `durable-end` the new end, both equal to `new_start`: the next batch
gets offset `new_start`, so no offset an acknowledged batch or a snapshot used is ever reused. The
caller writes the snapshot holding the state at `new_start` first, so a crash at any step leaves a
directory that `log recover` finishes on its next run.
"""

from __future__ import annotations

import os
from pathlib import Path

from kraftacl.metadata_log.backends.file import directory as file_dir
from kraftacl.metadata_log.backends.file.meta import DurableEnd, LogMeta, write_meta


def archive_dir(directory: Path, new_start: int) -> Path:
    """A fresh `recovered-<20-digit new start>[-n]` directory name inside `directory`."""
    base = directory / f"recovered-{new_start:020d}"
    candidate, n = base, 1
    while candidate.exists():
        candidate = base.with_name(f"{base.name}-{n}")
        n += 1
    return candidate


def rebase(directory: Path, new_start: int, meta: LogMeta) -> tuple[Path | None, list[str]]:
    """Move every segment aside and make the log start (and end) at `new_start`; returns where they went."""
    segments = [path for _, path in file_dir.list_segments(directory)]
    archive = archive_dir(directory, new_start) if segments else None
    if archive is not None:
        archive.mkdir()
        for path in segments:
            os.replace(path, archive / path.name)
        file_dir.fsync_dir(archive)
        file_dir.fsync_dir(directory)
    write_meta(directory, LogMeta(meta.log_id, new_start, meta.legacy))
    marker = DurableEnd(directory)
    try:
        marker.publish(new_start, meta.log_id_bytes, sync=True)
    finally:
        marker.close()
    return archive, [path.name for path in segments]
