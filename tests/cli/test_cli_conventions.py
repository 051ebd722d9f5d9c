"""The conventions every `kraft-acl` command shares: one-line usage errors, help, --version, completion,
the one output option, tables at the terminal's width and Kafka's limit on every argument."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kraftacl.cli.app import app
from tests.cli.test_log_cmds import IDS, assert_one_line_error, build_log, run


def invoke(*args: str | Path, env: dict[str, Any] | None = None, stdin: str | None = None) -> tuple[int, str, str]:
    """Run the CLI in this process: (exit code, stdout, stderr); an escaped exception fails the test."""
    result = CliRunner().invoke(app, [str(a) for a in args], env=env, input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("log")
    build_log(directory)
    return directory


def command_paths(command: Any = None, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command of the app (groups included) with its path of names."""
    command = command or typer.main.get_command(app)
    yield prefix, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from command_paths(sub, (*prefix, name))


COMMANDS = [path for path, _ in command_paths()]


# ---- usage errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("replay",), ["Missing option '--log-dir'", "'kraft-acl replay --help'"]),
        (("replay", "--log-dir", "LOG", "-o", "xml"), ["Invalid value for '--output' / '-o'", "'xml' is not one of"]),
        (("log", "dump", "--log-dir", "LOG", "-o", "yaml"), ["'yaml' is not one of table, json"]),
        (("snapshot", "list", "--log-dir", "LOG", "--output=csv"), ["'csv' is not one of"]),
        (("acls", "--log-dir", "LOG", "--list", "-o", "xml"), ["'xml' is not one of"]),
        (("authorize", "--acls", "A", "-o", "xml"), ["'xml' is not one of"]),
        (("bench", "-o", "table"), ["bench prints JSON only"]),
        (("nope",), ["No such command 'nope'", "'kraft-acl --help'"]),
        ((), ["missing command: give one of authorize, ", "(see 'kraft-acl --help')"]),
        (("log",), ["missing command: give one of dump, check, recover (see 'kraft-acl log --help')"]),
        (("audit",), ["missing command: give one of fold, permissions, changes, usage", "'kraft-acl audit --help'"]),
        (("snapshot",), ["missing command: give one of create, list, inspect, verify"]),
        (("replay", "--log-dir", "LOG", "--bogus"), ["No such option: --bogus"]),
        (("diff", "--log-dir", "LOG", "--from-offset", "x", "--to-offset", "1"), ["'--from-offset'", "integer"]),
        (("snapshot", "inspect"), ["Missing argument 'FILE'"]),
        (("replay", "--log-dir", "LOG", "extra"), ["unexpected extra argument(s) (extra)"]),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(log_dir: Path, args: tuple[str, ...], fragments: list[str]) -> None:
    code, out, err = invoke(*(str(log_dir) if a == "LOG" else a for a in args))
    assert_one_line_error(code, err, *fragments)
    assert out == "" and "Usage:" not in err and "╭" not in err


def test_the_installed_command_prints_the_same_line(kraft_acl: list[str]) -> None:
    proc = run(kraft_acl, "replay", "-o", "xml")
    assert_one_line_error(proc.returncode, proc.stderr, "'xml' is not one of table, json")
    assert proc.stdout == ""


def test_an_unexpected_exception_is_one_line_unless_debugging(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def boom(*_: Any, **__: Any) -> Any:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("kraftacl.cli.authorize.evaluate", boom)
    acls = tmp_path / "acls.json"
    acls.write_text("[]")
    args = (
        "authorize",
        "--acls",
        acls,
        "--principal",
        "User:a",
        "--host",
        "10.0.0.1",
        "--operation",
        "Read",
        "--topic",
        "t",
    )
    code, _, err = invoke(*args)
    assert code == 1 and err == "kraft-acl: error: internal error: RuntimeError: boom second line " + (
        "(KRAFT_ACL_DEBUG=1 shows the traceback)\n"
    )
    result = CliRunner().invoke(app, [str(a) for a in args], env={"KRAFT_ACL_DEBUG": "1"})
    assert isinstance(result.exception, RuntimeError)


# ---- Kafka's limits on every argument -------------------------------------------------------------------------


def test_an_argument_over_kafkas_string_limit_is_refused_naming_the_option(tmp_path: Path) -> None:
    code, _, err = invoke(
        "acls", "--log-dir", tmp_path / "new", "--add", "--allow-principal", "User:a", "--topic", "t" * 32768
    )
    assert_one_line_error(code, err, "the value of --topic: 32768 UTF-8 bytes, over Kafka's limit of 32767")
    code, _, err = invoke("acls", f"--log-dir={'d' * 40000}", "--list")  # the value after '=' is measured
    assert_one_line_error(code, err, "the value of --log-dir: 40000 UTF-8 bytes")
    assert not (tmp_path / "new").exists()  # nothing was written
    code, out, err = invoke(
        "acls", "--log-dir", tmp_path / "new", "--add", "--allow-principal", "User:a", "--topic", "t" * 32767
    )
    assert code == 0 and "Adding ACLs for resource" in out, err


def test_an_argument_that_is_not_utf8_is_refused(kraft_acl: list[str], tmp_path: Path) -> None:
    proc = subprocess.run(
        [*map(os.fsencode, kraft_acl), b"acls", b"--log-dir", os.fsencode(tmp_path), b"--list", b"--topic", b"\xff"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    stderr = proc.stderr.decode()
    assert_one_line_error(proc.returncode, stderr, "the value of --topic: not valid Unicode: a lone surrogate")


# ---- help, version, completion ----------------------------------------------------------------------------------

TYPE_NAMES = re.compile(r"<(path|str|int|bool|float|list\[[a-z]+\])>|\b(TEXT|INTEGER|BOOLEAN|FLOAT)\b|list\[")


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) or "kraft-acl" for p in COMMANDS])
def test_help_describes_every_option_shows_no_python_type_and_gives_an_example(path: tuple[str, ...]) -> None:
    code, out, err = invoke(*path, "--help")
    assert code == 0 and err == "", err
    assert TYPE_NAMES.search(out) is None, out
    assert "╭" not in out
    command = dict(command_paths())[path]
    for param in command.params:
        assert param.help, f"{' '.join(path)}: {param.opts} has no description"
    if not hasattr(command, "commands") or not path:  # a command (and the root) ends with an example
        assert re.search(r"Example:\n +kraft-acl ", out), out
        assert out.rstrip().rsplit("\n\n", 1)[-1].lstrip().startswith("Example:"), out  # after the options


def test_acls_help_uses_kafka_acls_words() -> None:
    _, out, _ = invoke("acls", "--help")
    for words in (
        "Indicates you are trying to add ACLs.",
        "Assume Yes to all queries and do not prompt.",
        "A value of * indicates ACL should apply to all topics.",
        "Convenience option to add/remove ACLs for producer role.",
    ):
        assert words in " ".join(out.split()), words


def test_version(kraft_acl: list[str]) -> None:
    proc = run(kraft_acl, "--version")
    assert proc.returncode == 0 and re.fullmatch(r"kraft-acl \d+\.\d+\.\d+\S*\n", proc.stdout), proc.stdout


def test_shell_completion_completes_commands_options_and_output_values(kraft_acl: list[str]) -> None:
    def complete(words: str) -> list[str]:
        env = {**os.environ, "_KRAFT_ACL_COMPLETE": "complete_bash", "COMP_WORDS": words}
        env["COMP_CWORD"] = str(len(words.split()) - (0 if words.endswith(" ") else 1))
        proc = subprocess.run(kraft_acl, env=env, capture_output=True, text=True, timeout=60, check=False)
        return proc.stdout.split()

    assert complete("kraft-acl snap") == ["snapshot"]
    assert complete("kraft-acl acls --resource-p") == ["--resource-pattern-type"]
    assert complete("kraft-acl replay -o ") == ["table", "text", "json"]
    script = run(kraft_acl, "--show-completion", "bash")
    assert script.returncode == 0 and "_KRAFT_ACL_COMPLETE=complete_bash" in script.stdout


# ---- one output option; tables at the terminal's width ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [("replay",), ("diff", "--from-offset", "0", "--to-offset", "5"), ("log", "dump"), ("snapshot", "list")],
)
def test_text_is_table_and_json_is_json_on_every_command(log_dir: Path, args: tuple[str, ...]) -> None:
    outputs = {}
    for name in ("table", "text", "TABLE", "json"):
        code, out, err = invoke(*args, "--log-dir", log_dir, "--output", name)
        assert code == 0, err
        outputs[name] = out
    assert outputs["table"] == outputs["text"] == outputs["TABLE"]
    for line in outputs["json"].splitlines():
        json.loads(line)


def test_tables_fold_to_the_terminal_width(log_dir: Path) -> None:
    def table_lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]

    code, out, _ = invoke("replay", "--log-dir", log_dir, env={"COLUMNS": "60"})
    assert code == 0 and max(len(line) for line in table_lines(out)) <= 60
    assert "…" not in out  # long cells are folded onto more lines, never cut short
    folded = "".join(line.split("│")[1].strip() for line in table_lines(out) if line.startswith("│"))
    assert all(IDS[name] in folded for name in "ACD")  # every id of the state, whole, across its folded lines
    code, wide, _ = invoke("replay", "--log-dir", log_dir, env={"COLUMNS": "200"})
    assert max(len(line) for line in table_lines(wide)) > 60
    # into a pipe with no COLUMNS: the table's own width, so no cell is folded for the reading program
    code, piped, _ = invoke("replay", "--log-dir", log_dir, env={"COLUMNS": None})
    row = next(line for line in piped.splitlines() if IDS["C"] in line)  # the DENY, all of it on one line
    assert all(f" {cell} " in row for cell in ("TOPIC", "foo", "LITERAL", "User:alice", "*", "READ", "DENY")), row


def test_a_bad_command_config_is_bad_input_before_any_connection(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_SSL\nsasl.password=\\uZZZZ\n")
    code, out, err = invoke("acls", "--bootstrap-server", "127.0.0.1:1", "--command-config", config, "--list")
    assert_one_line_error(code, err, f"{config}: line 2: not a valid properties file: Invalid \\u escape")
    assert out == ""
