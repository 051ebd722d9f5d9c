"""Fault injection for the log and snapshot tests: a writer that died before publishing, failing syscalls.

Helpers over a test's own temporary directories; not thread-safe, not collected.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from metadata_log.backends.file_meta import DurableEnd, read_meta


def rewind_durable_end(directory: Path, end: int) -> None:
    """As if the writer died after writing the batches from `end` on, before their fsync returned."""
    meta = read_meta(directory)
    assert meta is not None, f"{directory} has no log-meta"
    marker = DurableEnd(directory)
    try:
        marker.publish(end, meta.log_id_bytes)
    finally:
        marker.close()


def failing(code: int, real: Callable[..., Any] | None = None, after: int = 0) -> Callable[..., Any]:
    """A stand-in for an os function that raises OSError(`code`) from its `after`+1-th call on."""
    calls = 0

    def fake(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls > after or real is None:
            raise OSError(code, os.strerror(code))
        return real(*args, **kwargs)

    return fake


EIO, ENOSPC, EMFILE = errno.EIO, errno.ENOSPC, errno.EMFILE
