"""A fresh checkout of this repository, as `git clone` gives it (the files git tracks, plus new files not ignored,
so uncommitted work is measured and tested too), and `make run` in it: for the first-hour benchmark and its test.

Stateless functions, plus `MakeRun`: one `make run` child process (its own process group) whose stdout lines are
collected, each with the time it arrived, by a daemon thread; one owner starts and stops it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
READY = "kraft-acl serve: ready: "


def fresh_checkout(dest: Path, repo: Path = REPO_ROOT) -> Path:
    """Copy the files `git ls-files --cached --others --exclude-standard` lists (symlinks kept as symlinks)."""
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = repo / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree, not yet committed
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    return dest


def clean_path_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment without any virtualenv (as a new terminal has it), plus `extra`."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and "/.venv/" not in p]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "KRAFT_ACL_TOKEN")}
    return {**env, "PATH": os.pathsep.join(path), **(extra or {})}


class MakeRun:
    """`make run` in a checkout; `lines` are (seconds since start, line) of its stdout."""

    def __init__(self, root: Path, env: Mapping[str, str], stderr: Path) -> None:
        self.root = root
        self.started = time.monotonic()
        self.lines: list[tuple[float, str]] = []
        with open(stderr, "wb") as err:
            self.proc = subprocess.Popen(
                ["make", "--no-print-directory", "run"],
                cwd=root,
                env=dict(env),
                stdout=subprocess.PIPE,
                stderr=err,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic() - self.started, line.rstrip("\n")))

    def wait_ready(self, timeout: float) -> float:
        """Seconds from start to serve's ready line; RuntimeError with the output when it exits or times out."""
        deadline = self.started + timeout
        while True:
            for at, line in list(self.lines):
                if line.startswith(READY):
                    return at
            if self.proc.poll() is not None or time.monotonic() > deadline:
                said = "\n".join(line for _, line in self.lines)
                raise RuntimeError(f"make run: no ready line (exit {self.proc.poll()}):\n{said}")
            time.sleep(0.05)

    def first(self, prefix: str) -> float | None:
        """When the first line starting with `prefix` arrived."""
        return next((at for at, line in self.lines if line.startswith(prefix)), None)

    def stop(self) -> int:
        """Ctrl-C (SIGINT to the process group, as a terminal sends it); the exit code of make."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGINT)
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(10)
