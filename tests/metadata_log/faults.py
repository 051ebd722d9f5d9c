"""Fault injection for the log and snapshot tests: a writer that died before publishing its batch, a full disk.

Helpers over a test's own temporary directories; not thread-safe, not collected.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftacl.metadata_log.backends.file.meta import DurableEnd, read_meta


def rewind_durable_end(directory: Path, end: int) -> None:
    """As if the writer died after writing the batches from `end` on, before their fsync returned."""
    meta = read_meta(directory)
    assert meta is not None, f"{directory} has no log-meta"
    marker = DurableEnd(directory)
    try:
        marker.publish(end, meta.log_id_bytes)
    finally:
        marker.close()


@contextlib.contextmanager
def small_tmpfs(mount_point: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (e.g. "64k") mounted at `mount_point`: a disk that fills up. Needs root; CI runs as
    root, so there a failed mount fails the test, elsewhere it skips."""
    mount_point.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if done.returncode != 0:
        message = f"cannot mount a small tmpfs (root needed): {done.stderr.strip()}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)
