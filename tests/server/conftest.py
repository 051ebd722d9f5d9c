"""Fixtures for the serve tests: one real `kraft-acl serve` process per module where the tests share it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.serve_process import ServeProcess, base_properties


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A ready controller+broker serve on an empty embedded log, stopped after the module."""
    work: Path = tmp_path_factory.mktemp("serve")
    process = ServeProcess(work, base_properties(work)).start()
    try:
        yield process
    finally:
        assert process.stop() == 0, process.output()


@pytest.fixture(scope="session")
def large_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded log of 1M records (adds, and removes of earlier adds) in batches of 10,000, written once."""
    from kraftacl.harness.acl_data import record_batches
    from kraftacl.metadata_log.backends.file.log import FileLog

    directory = tmp_path_factory.mktemp("large-log") / "log"
    batches = record_batches(1_000_000, 0.2)
    with FileLog(directory) as log:
        for i in range(0, len(batches), 10):
            log.append([record for batch in batches[i : i + 10] for record in batch])
    return directory
