"""The interactive `kraft-acl shell` in a pseudo-terminal (pexpect), asserting on the screen as pyte renders it:
completion, globbing, errors, Ctrl-C and Ctrl-D, history across sessions, the prompt following a live log, the pager.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.harness.acl_data import write_snapshot
from kraftacl.metadata_log.backends.file.log import FileLog
from tests.shell.metashell_log import ACL_B, ACL_C, B, C, D, E, F, build_log
from tests.shell.terminal import Terminal

PROMPT = "[offset 7] >>"
IDS_LINE = "  ".join([B, C, D, E, F])
NEW = StandardAcl(
    ResourceType.TOPIC, "payments", PatternType.LITERAL, "User:dave", "*", AclOperation.WRITE, AclPermissionType.ALLOW
)


class OpenShell(Protocol):
    """The `open_shell` fixture: `kraft-acl shell ARGS` started in a rows x columns terminal with this PAGER."""

    def __call__(self, args: list[str], rows: int = 24, columns: int = 200, pager: str = "") -> Terminal: ...


@pytest.fixture(scope="module")
def fixed_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("pty") / "log"
    build_log(directory)
    return directory


@pytest.fixture
def open_shell(kraft_acl: list[str], tmp_path: Path) -> Iterator[OpenShell]:
    """Start `kraft-acl shell ARGS` in a terminal (history in this test's directory); every one is ended after."""
    started: list[Terminal] = []

    class Shell(Terminal):
        def __init__(self, args: list[str], rows: int = 24, columns: int = 200, pager: str = "") -> None:
            argv = [*kraft_acl, "shell", "--history-file", str(tmp_path / "history"), *args]
            super().__init__(argv, rows, columns, env={"PAGER": pager, "HOME": str(tmp_path)})
            started.append(self)

    yield Shell
    for terminal in started:
        terminal.close()


def test_completion_globs_errors_ctrl_c_and_ctrl_d(open_shell: OpenShell, fixed_log: Path) -> None:
    term = open_shell(["--log-dir", str(fixed_log)])
    screen = term.wait_lines(PROMPT)
    assert screen.split("\n") == [
        "Loading...",
        "Starting...",
        f"[ kraft-acl metadata shell: log directory {fixed_log} ]",
        PROMPT,
    ]
    term.send("ls /ac\t")  # one candidate: completed, with the slash of a directory
    term.wait_lines(f"{PROMPT} ls /acl/")
    term.send("\t")  # several: listed under the line, as readline does
    term.wait_lines(f"{PROMPT} ls /acl/", "by-principal/ by-resource/  id/", f"{PROMPT} ls /acl/")
    term.send("i\t\r")
    term.wait_lines(f"{PROMPT} ls /acl/id/", IDS_LINE, PROMPT)
    term.send("wh\t")  # command names complete too
    term.wait_lines(f"{PROMPT} who-can")
    term.send(" READ TOPIC:orders\r")
    term.wait(lambda text: "DENIED   any other principal  any host  DefaultDeny" in text and text.endswith(PROMPT))
    term.send("cat /image/acls/{I,M}*\r")  # globs: each component a pattern, matches in sorted order
    term.wait_lines(f"{PROMPT} cat /image/acls/{{I,M}}*", ACL_B, ACL_C, PROMPT)
    term.send("cat /nope\r")
    term.wait_lines(f"{PROMPT} cat /nope", "cat: /nope: No such file or directory.", PROMPT)
    term.send("bogus\r")
    term.wait_lines(
        f"{PROMPT} bogus",
        "invalid choice: 'bogus' (choose from 'at', 'authorize', 'cat', 'cd', 'exit', 'find', 'help', 'history', "
        "'ls', 'man', 'pwd', 'tree', 'who-can')",
        PROMPT,
    )
    term.send("ls /acl\x03")  # Ctrl-C drops the line without running it
    term.wait_lines(f"{PROMPT} ls /acl", "^C", PROMPT)
    term.send("\x04")  # Ctrl-D on an empty line leaves
    assert term.exit_status() == 0


def test_history_is_kept_across_sessions(open_shell: OpenShell, fixed_log: Path) -> None:
    first = open_shell(["--log-dir", str(fixed_log)])
    first.wait_lines(PROMPT)
    first.send("pwd\r")
    first.wait_lines(f"{PROMPT} pwd", "/", PROMPT)
    first.send("cd /acl/id\r")
    first.wait_lines(f"{PROMPT} cd /acl/id", PROMPT)
    first.send("exit\r")
    assert first.exit_status() == 0
    second = open_shell(["--log-dir", str(fixed_log)])
    second.wait_lines(PROMPT)
    second.send("\x1b[A")  # Up: the last line of the previous session
    second.wait_lines(f"{PROMPT} exit")
    second.send("\x1b[A\r")  # and the one before
    second.wait_lines(f"{PROMPT} cd /acl/id", PROMPT)
    second.send("pwd\r")
    second.wait_lines(f"{PROMPT} pwd", "/acl/id", PROMPT)
    second.send("history\r")
    second.wait_lines(
        f"{PROMPT} history",
        "    0  pwd",
        "    1  cd /acl/id",
        "    2  exit",
        "    3  cd /acl/id",
        "    4  pwd",
        "    5  history",
        PROMPT,
    )
    second.send("history 2\r")
    second.wait_lines(f"{PROMPT} history 2", "    5  history", "    6  history 2", PROMPT)


def test_the_prompt_follows_a_live_log(open_shell: OpenShell, fixed_log: Path, tmp_path: Path) -> None:
    log_dir = Path(shutil.copytree(fixed_log, tmp_path / "live"))
    term = open_shell(["--log-dir", str(log_dir)])
    term.wait_lines(PROMPT)
    with FileLog(log_dir) as writer:  # another writer appends while the shell waits at its prompt
        writer.append([record_from_acl("d3d3d3d3d3d3d3d3d3d3dw", NEW)])
        term.wait_lines("[offset 8] >>")  # redrawn without a key pressed
        term.send("cat /acl/by-principal/User:dave/*\r")
        term.wait_lines("[offset 8] >> cat /acl/by-principal/User:dave/*", str(NEW), "[offset 8] >>")
        term.send("at 3\r")
        term.wait_lines(
            "offset 3 (high-water mark 8; pinned: `at latest` returns to the newest state)", "[at offset 3] >>"
        )
        writer.append([record_from_acl("eHh4eHh4eHh4eHh4eHh4eA", NEW._replace(resource_name="refunds"))])
        term.send("ls /acl/by-principal\r")  # pinned: the new records are not applied
        term.wait_lines("[at offset 3] >> ls /acl/by-principal", "User:*  User:alice  User:mallory", "[at offset 3] >>")
        term.send("at latest\r")
        term.wait_lines("offset 9 (high-water mark 9; the newest state, following new records)", "[offset 9] >>")
        writer.append([record_from_acl("eXl5eXl5eXl5eXl5eXl5eQ", NEW._replace(resource_name="fees"))])
        term.wait_lines("[offset 10] >>")


def test_long_output_goes_through_the_pager(open_shell: OpenShell, fixed_log: Path) -> None:
    less = shutil.which("less")
    assert less is not None, "the Debian `less` package provides the pager this test drives"
    term = open_shell(["--log-dir", str(fixed_log)], rows=12, pager=f"{less} -FRX")
    term.wait_lines(PROMPT)
    term.send("find /\r")  # 44 lines on a 12-line screen: less shows the first 11 and waits
    term.wait_lines(
        "/",
        "/acl",
        "/acl/by-principal",
        "/acl/by-principal/User:*",
        f"/acl/by-principal/User:*/{B}",
        "/acl/by-principal/User:alice",
        f"/acl/by-principal/User:alice/{F}",
        "/acl/by-principal/User:bob",
        f"/acl/by-principal/User:bob/{D}",
        "/acl/by-principal/User:mallory",
        f"/acl/by-principal/User:mallory/{C}",
        ":",
    )
    term.send("q")
    term.wait(lambda text: text.endswith(PROMPT))
    term.send("pwd\r")  # a short answer is printed straight
    term.wait_lines(f"{PROMPT} pwd", "/", PROMPT)


def test_ctrl_c_stops_a_running_command(open_shell: OpenShell, tmp_path: Path) -> None:
    snapshot = write_snapshot(tmp_path / "big", 300_000)  # `find /` walks every ACL under four views: seconds
    term = open_shell(["--snapshot", str(snapshot)])
    term.wait_lines("[offset 300000] >>")
    term.send("find /\r")
    term.wait_lines("[offset 300000] >> find /")
    time.sleep(0.5)
    term.send("\x03")
    term.wait_lines("[offset 300000] >> find /", "^C", "[offset 300000] >>", timeout=60)  # nothing of its output
    term.send("cat /acl/id/AAAAAAAAAAAAAAAAAAAAAA\r")  # the shell goes on
    term.wait(lambda text: text.endswith('  "permissionType" : 2\n}\n[offset 300000] >>'))  # ACL 0 is a DENY
