"""The writer process of `test_kill.py`: open a `FileLog`, append batches forever, acknowledge each one.

Usage: python -m tests.metadata_log.kill_writer DIRECTORY SEGMENT_BYTES. Prints `ready HWM` once
the log is open (recovered), then `BASE LAST` for every batch, flushed only after `append` returned,
i.e. after the batch is durable. The content of a batch is a function of its base offset
(`factories.records_for`, `factories.batch_size_at`), so the test can check it independently.
"""

from __future__ import annotations

import sys

from kraftacl.metadata_log.backends.file.log import FileLog
from tests.metadata_log.factories import batch_size_at, records_for


def main(directory: str, segment_bytes: int) -> None:
    out = sys.stdout
    with FileLog(directory, segment_bytes=segment_bytes) as log:
        out.write(f"ready {log.high_watermark()}\n")
        out.flush()
        base = log.high_watermark()
        while True:
            size = batch_size_at(base, 60)
            result = log.append(records_for(base, size), timestamp_ms=base)
            out.write(f"{result.base_offset} {result.last_offset}\n")
            out.flush()
            base = result.last_offset + 1


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
