"""`kraft-acl bench`: run a benchmark suite and print its figures as one JSON object.

Stateless; each suite builds its own data.
"""

from __future__ import annotations

import json
import platform
from enum import StrEnum
from typing import Annotated, Any

import typer

from kraftacl.cli.errors import EXIT_FAILED, fail
from kraftacl.cli.output import Output, output_option


class Suite(StrEnum):
    """Available suites."""

    authorizer = "authorizer"
    log = "log"
    serve = "serve"
    import_ = "import"
    plugin = "plugin"  # the Kafka broker plugin on real brokers (not part of `all`: needs Java, takes minutes)
    cluster = "cluster"  # chaos on a real three-node cluster with a serve beside each broker (not in `all`)
    shell = "shell"
    pipeline = "pipeline"
    first_hour = "first-hour"  # make run from a fresh checkout with empty caches, a small audit job (not in `all`)
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
    suite: Annotated[
        Suite,
        typer.Option(
            "--suite",
            metavar="authorizer|log|serve|import|plugin|cluster|shell|pipeline|first-hour|all",
            help="which suite to run",
        ),
    ] = Suite.authorizer,
    output: Annotated[Output, output_option("json (the only format: one object)")] = Output.json,
    quick: Annotated[bool, typer.Option("--quick", help="10x smaller sizes, for a smoke run")] = False,
    kafka_bootstrap: Annotated[
        str | None,
        typer.Option(
            "--kafka-bootstrap", metavar="HOST:PORT", help="log suite: also measure against this Kafka broker"
        ),
    ] = None,
) -> None:
    """Measure decision latency, index build, memory and log throughput; print one JSON object on stdout
    (progress goes to stderr).

    \b
    Example:
      kraft-acl bench --suite authorizer --quick
      kraft-acl bench --suite log --kafka-bootstrap 127.0.0.1:9092 > log-figures.json
    """
    if not output.is_json:
        fail("bench prints JSON only; use -o json or leave -o out")
    from kraftacl.bench.timing import progress

    result: dict[str, Any] = {"machine": _machine()}
    try:
        if suite in (Suite.authorizer, Suite.all):
            from kraftacl.bench import authorizer_suite

            result["authorizer"] = authorizer_suite.run(quick=quick)
        if suite in (Suite.log, Suite.all):
            from kraftacl.bench import log_suite

            result["log"] = log_suite.run(quick=quick, kafka_bootstrap=kafka_bootstrap)
        if suite in (Suite.serve, Suite.all):
            from kraftacl.bench import serve_suite

            result["serve"] = serve_suite.run(quick=quick)
        if suite is Suite.import_:  # not in `all`: it writes a million-ACL log to a temporary directory
            from kraftacl.bench import import_suite

            result["import"] = import_suite.run(quick=quick)
        if suite is Suite.plugin:
            from kraftacl.bench import plugin_suite

            result["plugin"] = plugin_suite.run(quick=quick)
        if suite is Suite.cluster:  # not in `all`: three Kafka JVMs and minutes of faults
            from kraftacl.bench import cluster_suite

            result["cluster"] = cluster_suite.run(quick=quick)
        if suite in (Suite.shell, Suite.all):
            from kraftacl.bench import shell_suite

            result["shell"] = shell_suite.run(quick=quick)
        if suite is Suite.pipeline:  # not in `all`: a full-size run takes an hour or more on 2 cores
            from kraftacl.bench import pipeline_suite

            result["pipeline"] = pipeline_suite.run(quick=quick)
        if suite is Suite.first_hour:  # not in `all`: it installs from PyPI into a temporary checkout
            from kraftacl.bench import first_hour_suite

            result["first-hour"] = first_hour_suite.run(quick=quick)
    except RuntimeError as exc:  # a child process failed: timing.in_child names it and its last error line
        fail(str(exc), EXIT_FAILED)
    progress("done")
    if suite is not Suite.all:
        result = {"machine": result["machine"], **result[suite.value]}
    typer.echo(json.dumps(result))
