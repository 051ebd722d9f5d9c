"""`kraft-acl audit` on an install without the spark extra (what `make run` installs): every job's `--help` prints the
help (exit 0), and running a job is one line saying how to add the extra (exit 2). PySpark, py4j, pyarrow and pandas
are made unimportable in the command's processes by a `sitecustomize` on PYTHONPATH (tests/test_make_run.py checks the
same on a real runtime-only install). And the jobs' `-o`, which needs no Spark either: table (text the same) or
json, as every command's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kraftacl.cli.audit import SPARK_MODULES
from kraftacl.pipeline.cli_args import Args, parser


@pytest.fixture
def without_spark(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python processes cannot import the spark extra."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in SPARK_MODULES), encoding="utf-8"
    )
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


@pytest.mark.parametrize("job", ["fold", "permissions", "changes", "usage"])
def test_help_works_without_the_spark_extra(kraft_acl: list[str], without_spark: dict[str, str], job: str) -> None:
    helped = subprocess.run(
        [*kraft_acl, "audit", job, "--help"], capture_output=True, text=True, env=without_spark, check=False
    )
    assert (helped.returncode, helped.stderr) == (0, ""), helped.stderr
    assert helped.stdout.startswith(f"usage: kraft-acl audit {job} ") and "--log-dir" in helped.stdout


def test_a_job_without_the_spark_extra_is_one_line(
    kraft_acl: list[str], without_spark: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "x.checkpoint"
    ran = subprocess.run(
        [*kraft_acl, "audit", "fold", "--log-dir", str(tmp_path), "--out", str(out)],
        capture_output=True,
        text=True,
        env=without_spark,
        check=False,
    )
    assert (ran.returncode, ran.stdout) == (2, ""), ran.stderr
    lines = ran.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kraft-acl: error: kraft-acl audit runs on Spark"), lines
    assert not out.exists()


def test_the_driver_alone_answers_help_and_refuses_a_job_in_one_line(
    without_spark: dict[str, str], tmp_path: Path
) -> None:
    """`python -m kraftacl.pipeline` (what spark-submit runs) parses before it imports Spark."""
    driver = [sys.executable, "-m", "kraftacl.pipeline"]
    helped = subprocess.run([*driver, "changes", "--help"], capture_output=True, text=True, env=without_spark)
    assert helped.returncode == 0 and "--from-offset" in helped.stdout, helped.stderr
    ran = subprocess.run(
        [*driver, "changes", "--log-dir", str(tmp_path), "--from-offset", "0"],
        capture_output=True,
        text=True,
        env=without_spark,
    )
    assert ran.returncode == 2 and len(ran.stderr.splitlines()) == 1, ran.stderr
    assert ran.stderr.startswith("kraft-acl: error: kraft-acl audit runs on Spark"), ran.stderr


@pytest.mark.parametrize(
    ("given", "output"), [("table", "table"), ("text", "table"), ("TABLE", "table"), ("json", "json")]
)
def test_the_jobs_take_table_text_or_json_like_every_command(given: str, output: str) -> None:
    args = Args.parse(parser().parse_args(["changes", "--log-dir", "meta", "--from-offset", "0", "-o", given]))
    assert args.output == output


def test_a_bad_output_of_a_job_is_one_line(kraft_acl: list[str], tmp_path: Path) -> None:
    ran = subprocess.run(
        [*kraft_acl, "audit", "changes", "--log-dir", str(tmp_path), "--from-offset", "0", "-o", "xml"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (ran.returncode, ran.stdout) == (2, "")
    assert ran.stderr.splitlines() == [
        "kraft-acl: error: kraft-acl audit changes: argument -o/--output: invalid choice: 'xml' (choose from "
        "'table', 'text', 'json')"
    ]
