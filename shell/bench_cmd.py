"""`kraft-acl bench`: run a benchmark suite and print its figures as one JSON object.

Stateless; each suite builds its own data.
"""

from __future__ import annotations

import json
import platform
from enum import StrEnum
from typing import Annotated, Any

import typer


class Suite(StrEnum):
    """Available suites."""

    authorizer = "authorizer"
    log = "log"
    pipeline = "pipeline"
    all = "all"


def _machine() -> dict[str, Any]:
    import os

    model = ""
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "platform": platform.platform(),
    }


def bench_command(
    suite: Annotated[Suite, typer.Option("--suite", help="which suite to run")] = Suite.authorizer,
    output: Annotated[str, typer.Option("--output", "-o", help="json (the only format)")] = "json",
    quick: Annotated[bool, typer.Option("--quick", help="10x smaller sizes, for a smoke run")] = False,
    kafka_bootstrap: Annotated[
        str | None, typer.Option("--kafka-bootstrap", help="log suite: also measure against this Kafka broker")
    ] = None,
) -> None:
    """Measure decision latency, index build, memory and log throughput; print one JSON object."""
    if output != "json":
        from shell.errors import fail

        fail(f"--output {output!r} is not supported by bench; use json")
    result: dict[str, Any] = {"machine": _machine()}
    if suite in (Suite.authorizer, Suite.all):
        from shell.bench import authorizer_suite

        result["authorizer"] = authorizer_suite.run(quick=quick)
    if suite in (Suite.log, Suite.all):
        from shell.bench import log_suite

        result["log"] = log_suite.run(quick=quick, kafka_bootstrap=kafka_bootstrap)
    if suite is Suite.pipeline:  # not in `all`: about half an hour on 2 cores at full size
        from shell.bench import pipeline_suite

        result["pipeline"] = pipeline_suite.run(quick=quick)
    if suite is not Suite.all:
        result = {"machine": result["machine"], **result[suite.value]}
    typer.echo(json.dumps(result))
