"""`authorizer.state.memory.release_free_memory`: freed C-heap memory really leaves the process (on glibc)."""

from __future__ import annotations

import ctypes.util
import gc
import platform

import pytest

from kraftacl.authorizer.state import memory
from kraftacl.authorizer.state.memory import release_free_memory
from kraftacl.harness.rss import rss_bytes

glibc = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc" or ctypes.util.find_library("c") is None, reason="malloc_trim is glibc's"
)


@glibc
def test_freed_heap_memory_goes_back_to_the_os() -> None:
    # 64 KiB blocks come from the heap (below glibc's mmap threshold); the last one pins the heap's top,
    # so only a trim can give back the pages of the 800 freed below it.
    blocks = [bytearray(64 * 1024) for _ in range(800)]
    pin = bytearray(64 * 1024)
    for block in blocks:
        block[::4096] = b"x" * len(block[::4096])  # touch every page
    del blocks
    gc.collect()
    before = rss_bytes()
    assert release_free_memory() is True
    assert before - rss_bytes() > 30 * 1024 * 1024
    assert len(pin) == 64 * 1024


def test_without_malloc_trim_nothing_is_released(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_malloc_trim", lambda: None)  # a C library without it (musl, macOS)
    assert release_free_memory() is False
