"""One rule for `--server` in every command (kraftacl/cli/options.py): an unreachable serve is exit 1, a missing or
empty token file exit 2 (before anything is sent), a URL without a scheme is http, each one line naming the URL or
the file (each of several comma-separated URLs by the same rule); the token is the first line of the file that is
not blank or a `#` comment, as the plugin reads it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kraftacl.harness.serve_process import kraft_acl_command
from tests.server.serve_process import ADMIN_TOKEN, ServeProcess, free_port

#: Every command that takes the connection options, with arguments that make it talk to serve.
COMMANDS = {
    "acls": ["acls", "--list"],
    "authorize": ["authorize", "--principal", "User:a", "--host", "10.0.0.1", "--operation", "Read", "--topic", "t"],
    "import": ["import", "--from-json", "ACLS", "--dry-run"],
    "export": ["export"],
    "shell": ["shell"],  # its COMMAND comes after the options
    "snapshot create": ["snapshot", "create"],
}


def _run(command: str, *options: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    acls = tmp_path / "acls.json"
    acls.write_text("[]")
    args = [str(acls) if a == "ACLS" else a for a in COMMANDS[command]]
    tail = ["ls", "/"] if command == "shell" else []
    argv = [*kraft_acl_command(), *args, *options, *tail]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kraft-acl: error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_same_situation_is_the_same_exit_code_in_every_command(
    command: str, serve: ServeProcess, tmp_path: Path
) -> None:
    token = tmp_path / "admin.token"
    token.write_text(f"# the admin's token\n\n{ADMIN_TOKEN}\n")
    url = serve.url("CLIENT")
    down = f"http://127.0.0.1:{free_port()}"

    unreachable = _run(command, "--server", down, "--token-file", str(token), tmp_path=tmp_path)
    assert unreachable.returncode == 1 and f"{down}: cannot reach serve" in _one_line(unreachable)

    missing = _run(command, "--server", url, "--token-file", str(tmp_path / "nope"), tmp_path=tmp_path)
    assert missing.returncode == 2
    assert _one_line(missing) == f"kraft-acl: error: --token-file {tmp_path / 'nope'}: No such file or directory"

    empty = tmp_path / "empty.token"
    empty.write_text("# nothing but a comment\n\n")
    blank = _run(command, "--server", url, "--token-file", str(empty), tmp_path=tmp_path)
    assert blank.returncode == 2
    assert _one_line(blank) == (
        f"kraft-acl: error: --token-file {empty}: holds no token (every line is blank or a # comment)"
    )

    bad_scheme = _run(command, "--server", "ftp://127.0.0.1:1", "--token-file", str(token), tmp_path=tmp_path)
    assert bad_scheme.returncode == 2 and "the scheme must be http or https, not ftp" in _one_line(bad_scheme)

    no_scheme = _run(command, "--server", url.removeprefix("http://"), "--token-file", str(token), tmp_path=tmp_path)
    assert no_scheme.returncode == 0, no_scheme.stderr  # taken as http://, and the token after the comment is used

    # several serves, comma-separated: each URL by the same rule; the unreachable one is passed over
    both = _run(
        command, "--server", f"{down},{url.removeprefix('http://')}", "--token-file", str(token), tmp_path=tmp_path
    )
    assert both.returncode == 0, both.stderr
    bad_second = _run(command, "--server", f"{url},ftp://127.0.0.1:1", "--token-file", str(token), tmp_path=tmp_path)
    assert bad_second.returncode == 2 and "--server ftp://127.0.0.1:1: the scheme must be" in _one_line(bad_second)

    wrong = _run(command, "--server", url, "--token", "not-a-token", tmp_path=tmp_path)
    assert wrong.returncode == 1 and "HTTP 401" in _one_line(wrong)
