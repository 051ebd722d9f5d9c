"""README.md's commands (and the docs' runnable ones), run as written after the set-up the README describes.

Each file gets a fresh checkout (tests/readme_blocks.py: the repository's files, its own examples/ and data/, and
free ports in place of 9190, 9191 and 9092), where `make run` runs as the README tells a user to (its serve in the
background instead of in a terminal), then every runnable block in order, each in a new bash like a new command
line in a terminal where `source .venv/bin/activate` was typed. The Kafka walkthrough (`make broker`, produce,
be denied, kafka-acls, `kraft-acl log dump`, serve's audit log, `make broker-stop`) is a kafka-marked test.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kraftacl.harness.checkout import MakeRun, clean_path_env
from kraftacl.harness.serve_process import free_port
from tests.integration.conftest import _unavailable
from tests.kafka_broker import java_problem, maven_problem
from tests.readme_blocks import PORTS, REPO, Block, blocks, checkout, with_ports

README = REPO / "README.md"
DOCS = [README, *(REPO / "docs" / name for name in ("serve.md", "cli.md", "shell.md"))]


@dataclass
class Demo:
    """`make run` in a checkout (harness.checkout.MakeRun), its serve's log, and this run's ports."""

    root: Path
    ports: dict[str, int]
    make: MakeRun
    stderr: Path

    def env(self) -> dict[str, str]:
        """A user's environment before `source .venv/bin/activate` (no virtualenv on PATH, so the README's
        activation is what makes `kraft-acl` a command), the demo broker's port, a watchdog for its JVM."""
        return clean_path_env({"BROKER_PORT": str(self.ports["broker"]), "KAFKA_WATCH_PID": str(os.getpid())})

    def run(self, block: Block, prelude: str) -> subprocess.CompletedProcess[str]:
        """Run one block as the README writes it (on this run's ports); fail with its output unless it did what
        its marker says."""
        script = "set -e -o pipefail\n" + prelude + with_ports(block.text, self.ports)
        proc = subprocess.run(
            ["bash", "-c", script], cwd=self.root, env=self.env(), capture_output=True, text=True, timeout=600
        )
        said = proc.stdout + proc.stderr
        assert proc.returncode == block.exit_code, (
            f"{block.where} exited {proc.returncode}, the README says {block.exit_code}:\n{block.text}\n{said}"
        )
        for text in (with_ports(expected, self.ports) for expected in block.expect):
            assert text in said, f"{block.where}: {text!r} is not in its output:\n{block.text}\n{said}"
        return proc

    def serve_log(self) -> str:
        """What serve wrote on stderr (its log: warnings, and the audit logger's lines)."""
        return self.stderr.read_text(encoding="utf-8", errors="replace")


@contextlib.contextmanager
def make_run(tmp: Path) -> Iterator[Demo]:
    """`make run` in a fresh checkout until serve's ready line; stopped with Ctrl-C's SIGINT, as a user stops it."""
    ports = {name: free_port() for name in PORTS}
    root = checkout(tmp / "checkout", ports)
    demo = Demo(root, ports, MakeRun(root, clean_path_env(), tmp / "make-run.err"), tmp / "make-run.err")
    try:
        try:
            demo.make.wait_ready(300)
        except RuntimeError as exc:
            pytest.fail(f"{exc}\n{demo.serve_log()}", pytrace=False)
        yield demo
    finally:
        demo.make.stop()


def _keep(path: Path) -> str:
    """The README's blocks that set up the reader's terminal (`keep`), run before each later block."""
    return "".join(block.text for block in blocks(path, strict=True) if block.keep)


def test_every_bash_block_of_the_readme_is_run_or_set_aside() -> None:
    """A command added to the README without a marker fails here; the README runs some of each kind."""
    found = blocks(README, strict=True)
    assert any(b.runnable and not b.kafka for b in found)
    assert any(b.kafka for b in found)
    for doc in DOCS[1:]:
        assert any(b.runnable for b in blocks(doc, strict=False)), f"{doc}: no runnable block left"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_readme_examples_run_as_written(doc: Path, tmp_path: Path) -> None:
    """Every runnable block but the Kafka walkthrough, in order, against a fresh `make run`."""
    found = [b for b in blocks(doc, strict=doc == README) if b.runnable and not b.kafka]
    prelude = "" if doc == README else _keep(README)
    with make_run(tmp_path) as demo:
        for block in found:
            demo.run(block, prelude)
            if block.keep and doc == README:
                prelude += block.text


@pytest.mark.kafka
def test_readme_broker_walkthrough(tmp_path: Path) -> None:
    """`make broker` against `make run`'s serve after section 2's blocks, then the walkthrough's blocks in order:
    produce allowed, produce denied, an ACL added with kafka-acls through the broker, in the log (its offsets as the
    README shows them), the denial in serve's audit log; then `make broker-stop` stops the broker (nothing of it is
    left running)."""
    for problem in (java_problem(), maven_problem()):
        if problem is not None:
            _unavailable(problem)
    found = blocks(README, strict=True)
    first = next(n for n, b in enumerate(found) if b.kafka)
    # as a reader follows the README: section 2's commands first (carol's ACL takes offset 6), then the walkthrough
    walkthrough = [b for b in found[:first] if b.runnable and not b.keep] + [b for b in found if b.kafka]
    with make_run(tmp_path) as demo:
        try:
            for block in walkthrough:
                demo.run(block, _keep(README))
        finally:
            subprocess.run(
                ["make", "--no-print-directory", "broker-stop"], cwd=demo.root, env=demo.env(), timeout=120, check=False
            )
        log = demo.serve_log()
        denied = "INFO kafka.authorizer.logger: Principal = User:alice is Denied operation = DESCRIBE from host = "
        assert denied in log and "on resource = Topic:LITERAL:payments for request = Metadata" in log, log
    status = subprocess.run(
        ["bash", "scripts/kafka-broker.sh", "status", "data/broker"], cwd=demo.root, capture_output=True, text=True
    )
    assert status.returncode == 3 and "STOPPED" in status.stdout, status.stdout + status.stderr


def test_the_sections_make_run_points_to_are_the_readmes() -> None:
    """`make run`'s hints cite README sections by their titles: each must be a heading of the README."""
    headings = {line.lstrip("#").strip() for line in README.read_text(encoding="utf-8").splitlines() if line[:1] == "#"}
    cited = re.findall(r"README: '([^']+)'", (REPO / "Makefile").read_text(encoding="utf-8"))
    assert cited, "the Makefile's hints cite no README section"
    for title in cited:
        assert any(heading.startswith(title) for heading in headings), f"no README heading starts with {title!r}"
