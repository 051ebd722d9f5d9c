"""The metadata shell's pieces in-process: Kafka's glob and `ls` column vectors (from its shell tests), path
splitting, the escaping of names into path components, id forms, and command-line parsing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.records import AccessControlEntryRecord
from kraftacl.shell.commands import TABLE
from kraftacl.shell.interactive import complete_path
from kraftacl.shell.parse import ParseError, parse
from kraftacl.shell.paths import GlobComponent, absolute, acl_id_of, decode_name, encode_name, strip_dots
from kraftacl.shell.render import column_layout, columns
from kraftacl.shell.session import Shell
from kraftacl.shell.sources.base import AclSource
from kraftacl.shell.sources.open_source import SourceOptions, open_source
from tests.shell.metashell_log import build_log


@pytest.fixture(scope="module")
def fixed_source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclSource]:
    directory = tmp_path_factory.mktemp("units") / "log"
    build_log(directory)
    source = open_source(SourceOptions(log_dir=directory))
    yield source
    source.close()


def test_glob_components_as_kafka_reads_them() -> None:
    for literal in ("abc", "", "foobar_123", "$blah+", "does not need a regex, actually"):
        glob = GlobComponent.of(literal)
        assert glob.literal == literal and glob.matches(literal) and not glob.matches(literal + "foo")
    star, question, group = GlobComponent.of("*"), GlobComponent.of("b?b"), GlobComponent.of("foo{bar,baz}")
    assert star.literal is None and star.matches("") and star.matches("anything")
    assert question.matches("bob") and question.matches("bib") and not question.matches("bic")
    assert not question.matches("")
    assert group.matches("foobar") and group.matches("foobaz")
    assert not any(group.matches(name) for name in ("foobah", "foo", "baz"))
    assert GlobComponent.of("$blah*").matches("$blahblah") and not GlobComponent.of("$blah*").matches("blah")
    assert GlobComponent.of(r"\*").literal == "*"  # escaped: the literal name `*` (Kafka would look up `\*`)
    assert GlobComponent.of("{a,{b}}").literal == "{a,{b}}"  # a nested group is malformed: literal, as in Kafka


def test_ls_columns_as_kafka_lays_them_out() -> None:
    assert column_layout(["abc", "def", "ghi"], None) == (3, [0])
    assert column_layout(["abc", "def"], 0) == (2, [0])
    assert column_layout(["a", "abcdef", "beta"], 80) == (1, [3, 8, 6])
    assert column_layout(["alphabet", "beta", "gamma", "theta", "zeta"], 18) == (3, [10, 7])
    # Every column but the last is padded, even on a line where nothing follows (Kafka's test trims its output).
    assert columns(["alphabet", "beta", "gamma", "theta", "zeta"], 18) == [
        "alphabet  theta",
        "beta      zeta",
        "gamma     ",
    ]
    assert columns(["foo", "foobarbaz", "quux"], 18) == ["foo        quux", "foobarbaz  "]


def test_paths() -> None:
    assert absolute("..", "/acl/id") == ["acl"]
    assert absolute("../../../x/./y//", "/acl/id") == ["x", "y"]
    assert absolute("/image", "/acl") == ["image"]
    assert strip_dots([".", "..", "a", "..", "b"]) == ["b"]


@given(st.text())
def test_any_name_is_one_path_component(name: str) -> None:
    component = encode_name(name)
    assert decode_name(component) == name
    assert "/" not in component and component not in ("", ".", "..")
    assert not any(c < " " for c in component)


def test_escaped_names() -> None:
    assert [encode_name(n) for n in ("", ".", "..", "tx/1", "50%", "a\nb", "orders")] == [
        "%",
        "%2E",
        "%2E%2E",
        "tx%2F1",
        "50%25",
        "a%0Ab",
        "orders",
    ]


def test_ids_in_both_forms() -> None:
    assert acl_id_of("EREREREREREREREREREREQ") == "EREREREREREREREREREREQ"
    assert acl_id_of("11111111-1111-1111-1111-111111111111") == "EREREREREREREREREREREQ"
    assert acl_id_of("EREREREREREREREREREREE") is None  # not canonical: padding bits set
    assert acl_id_of("orders") is None and acl_id_of("1111111x-1111-1111-1111-111111111111") is None


def test_parsing() -> None:
    assert parse(["", ""], TABLE) is None  # an empty line does nothing
    parsed = parse(["authorize", "User:a", "READ", "TOPIC:x"], TABLE)
    assert parsed is not None and parsed.values == {
        "principal": ["User:a"],
        "host": [],
        "operation": ["READ"],
        "resource": ["TOPIC:x"],
    }
    parsed = parse(["authorize", "User:a", "10.0.0.1", "READ", "TOPIC:x", ""], TABLE)  # trailing empties dropped
    assert parsed is not None and parsed.one("host") == "10.0.0.1"
    parsed = parse(["at", "-1"], TABLE)  # a negative number is an argument, not an option
    assert parsed is not None and parsed.one("offset") == "-1"
    parsed = parse(["ls", "--", "-x"], TABLE)
    assert parsed is not None and parsed.values["targets"] == ["-x"]
    with pytest.raises(ParseError, match=r"^unrecognized arguments: 'a b'$"):
        parse(["man", "x", "a", "b"], TABLE)


def test_path_completion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_log(tmp_path / "log")
    source = open_source(SourceOptions(log_dir=tmp_path / "log"))
    try:
        shell = Shell(source, lambda text: None, lambda text: None)

        def complete(prefix: str) -> list[str]:
            return [c.text for c in complete_path(shell, prefix)]

        assert complete("/acl/by-p") == ["/acl/by-principal/"]  # a directory: its slash, and no space after
        assert complete("/acl/id/Z") == ["/acl/id/ZmZmZmZmZmZmZmZmZmZmZg"]  # a file
        assert complete("/image/") == ["/image/acls/", "/image/provenance"]
        assert complete("/nope/x") == []
        shell.cwd = "/acl"
        assert complete("") == ["by-principal/", "by-resource/", "id/"]  # relative to the working directory
        assert complete("../im") == ["../image/"]
        monkeypatch.setattr("kraftacl.shell.interactive.MAX_LISTED", 2)  # too many: only their common prefix
        assert complete("/acl/by-principal/U") == ["/acl/by-principal/User:"]
        assert complete("/acl/by-principal/User:") == []  # nothing in common beyond what is typed
        assert complete("/acl/by-r") == ["/acl/by-resource/"]  # one candidate is still completed
    finally:
        source.close()


WORDS = [
    *TABLE,
    "/",
    ".",
    "..",
    "/acl",
    "/acl/id/*",
    "/acl/by-principal/User:*/*",
    "/image/acls/{I,Z}*",
    "%",
    "%2",
    "\\",
    "{",
    "{a,{b}}",
    "*",
    "-x",
    "--",
    "3",
    "-1",
    "99",
    "latest",
    "READ",
    "read",
    "User:alice",
    "alice",
    "TOPIC:orders",
    "GROUP:",
    "CLUSTER",
    "10.0.0.1",
    "::1",
    "not-an-ip",
    "EREREREREREREREREREREQ",
    "11111111-1111-1111-1111-111111111111",
    "",
    "\x00",
    "é",
    "/provenance/*",
]


@given(lines=st.lists(st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=6)), max_size=6), max_size=8))
@settings(max_examples=150, deadline=None)
def test_any_command_line_is_answered_without_an_exception(fixed_source: AclSource, lines: list[list[str]]) -> None:
    out: list[str] = []
    shell = Shell(fixed_source, out.append, out.append)
    for words in lines:
        shell.run_line(" ".join(words), words)  # every problem is a message and an exit status, never a raise
    assert shell.status in (0, 1, 2)


def test_a_followed_log_that_diverges_is_no_longer_followed(tmp_path: Path) -> None:
    """The shell over a live log: the log cut back below what it applied (an old copy put back) is a
    divergence; the state stays, nothing more is applied, the status says so and following does not resume."""
    directory, backup = tmp_path / "log", tmp_path / "backup"
    build_log(directory)
    shutil.copytree(directory, backup)
    record = AccessControlEntryRecord("d2d2d2d2d2d2d2d2d2d2dw", 2, "late", 3, "User:late", "*", 3, 3)
    with FileLog(directory) as writer:
        writer.append([record])
    source = open_source(SourceOptions(log_dir=directory))
    try:
        assert source.view().offset == 8 and source.status().error is None
        for name in ("durable-end", f"{0:020d}.log"):  # the durable end first, as a restore might do it
            shutil.copy2(backup / name, directory / f"{name}.new")
            os.replace(directory / f"{name}.new", directory / name)
        source.poll()
        status = source.status()
        assert status.error is not None and status.error.startswith("diverged, not following: "), status
        assert "moved back to 7, below offset 8" in status.error
        source.follow()  # refused quietly: the log no longer holds what the state applied
        assert not source.status().following and source.view().offset == 8
        assert "d2d2d2d2d2d2d2d2d2d2dw" in source.view().image.acls
    finally:
        source.close()
