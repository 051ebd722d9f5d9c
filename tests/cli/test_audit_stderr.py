"""`kraft-acl audit` copies the Spark driver's stderr as it comes, without the JVM's incubator warning: once,
wherever it falls (first, or after the job's own first progress line) and however the pipe cuts it."""

from __future__ import annotations

import io

import pytest

from kraftacl.cli.audit import JVM_NOISE, _forward


class Chunks(io.BufferedReader):
    """A driver's stderr that hands out these chunks, in order."""

    def __init__(self, chunks: list[bytes]) -> None:
        super().__init__(io.BytesIO())
        self.chunks = list(chunks)

    def read1(self, size: int = -1) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""


def forwarded(chunks: list[bytes]) -> bytes:
    out = io.BytesIO()
    _forward(Chunks(chunks), out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([JVM_NOISE + b"job: starting\n"], b"job: starting\n"),
        ([b"job: starting Spark\n", JVM_NOISE, b"[Stage 0:>\r"], b"job: starting Spark\n[Stage 0:>\r"),
        ([b"job: starting\n" + JVM_NOISE[:9], JVM_NOISE[9:] + b"done\n"], b"job: starting\ndone\n"),
        ([b"a\nWARN", b"ING: something else\n"], b"a\nWARNING: something else\n"),
        ([b"cut short: WARNING: Using"], b"cut short: WARNING: Using"),
        ([JVM_NOISE, JVM_NOISE], JVM_NOISE),
    ],
    ids=["first", "after-progress", "split", "other-warning", "ends-in-a-prefix", "only-once"],
)
def test_the_warning_goes_and_everything_else_stays(chunks: list[bytes], expected: bytes) -> None:
    assert forwarded(chunks) == expected
