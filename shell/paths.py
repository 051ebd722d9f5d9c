"""Paths of the metadata shell as Kafka's shell reads them (CommandUtils, GlobComponent), and the escaping that
lets any resource name or principal be one path component.

Pure functions and immutable values; thread-safe.

Kafka's rules: `/` separates components, repeated and trailing slashes are ignored, `.` is dropped
and `..` removes the previous component (never above `/`); a relative path starts at the working
directory. A component is a glob when it has `*`, `?` or a `{a,b}` group; `\\` escapes the next
character. One deliberate difference: a component that is literal once escapes are read
(`\\*`) names the child with the unescaped text, where Kafka looks the backslash up as well.

Names in the tree: ACL resource names and principals may hold any character, including `/`, so
`%`, `/` and control characters are written `%XX` (hex), a name that is exactly `.` or `..` is
written `%2E` / `%2E%2E`, and the empty name (a GROUP "" ACL) is written `%`.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from kraftacl.metadata_log.uuids import UUID_TEXT, uuid_to_text

_REGEX_SPECIAL = set("$()+.[]^{|")
_GLOB_SPECIAL = set("*?\\{}")
_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")
EMPTY_NAME = "%"


def split_path(path: str) -> list[str]:
    """Kafka's `splitPath`: the non-empty components between slashes."""
    return [part for part in path.split("/") if part]


def strip_dots(components: list[str]) -> list[str]:
    """Kafka's `stripDotPathComponents`: drop `.`, let `..` remove the previous component."""
    out: list[str] = []
    for part in components:
        if part == "..":
            if out:
                out.pop()
        elif part != ".":
            out.append(part)
    return out


def absolute(path: str, working_directory: str) -> list[str]:
    """The components of `path`, relative paths taken from `working_directory`."""
    full = path if path.startswith("/") else f"{working_directory}/{path}"
    return strip_dots(split_path(full))


@dataclass(frozen=True, slots=True)
class GlobComponent:
    """One path component: a literal name, or a pattern (Kafka's GlobComponent, escapes honoured)."""

    literal: str | None  # the name when the component has no wildcard
    pattern: re.Pattern[str] | None

    @staticmethod
    def of(component: str) -> GlobComponent:
        """Parse Kafka's glob syntax; a malformed glob (a nested or unclosed group) is the literal text, as in Kafka."""
        try:
            regex, literal = _to_regex(component)
        except ValueError:
            return GlobComponent(component, None)
        return GlobComponent(literal, None) if literal is not None else GlobComponent(None, re.compile(regex))

    def matches(self, name: str) -> bool:
        """True when `name` is this literal or matches this pattern."""
        if self.pattern is None:
            return name == self.literal
        return self.pattern.fullmatch(name) is not None


def _to_regex(glob: str) -> tuple[str, str | None]:
    """(regular expression, the unescaped text if the glob is literal)."""
    out, text, literal, group = [], [], True, False
    i = 0
    while i < len(glob):
        c = glob[i]
        i += 1
        if c == "?":
            literal = False
            out.append(".")
        elif c == "*":
            literal = False
            out.append(".*")
        elif c == "\\":
            nxt = glob[i] if i < len(glob) else c
            i += 1 if i < len(glob) else 0
            out.append("\\" + nxt if nxt in _GLOB_SPECIAL or nxt in _REGEX_SPECIAL else re.escape(nxt))
            text.append(nxt)
        elif c == "{":
            if group:
                raise ValueError("Can't nest glob groups.")
            literal, group = False, True
            out.append("(?:(?:")
        elif c == "," and group:
            out.append(")|(?:")
        elif c == "}" and group:
            out.append("))")
            group = False
        else:
            out.append(re.escape(c))
            text.append(c)
    if group:
        raise ValueError("Unterminated glob group.")
    return "".join(out), "".join(text) if literal else None


def encode_name(name: str) -> str:
    """A resource name or principal as one path component (see the module docstring)."""
    if name == "":
        return EMPTY_NAME
    if name in (".", ".."):
        return "%2E" * len(name)
    if not any(c in "%/" or c < " " or c == "\x7f" for c in name):
        return name
    return "".join(f"%{ord(c):02X}" if c in "%/" or c < " " or c == "\x7f" else c for c in name)


def decode_name(component: str) -> str:
    """The name a path component stands for (`encode_name` reversed)."""
    if component == EMPTY_NAME:
        return ""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), component)


def acl_id_of(text: str) -> str | None:
    """An ACL id given as Kafka's 22-character base64 text or as a dashed UUID, in base64 form; None if neither."""
    if UUID_TEXT.fullmatch(text):
        return text
    if len(text) == 36 and text.count("-") == 4:
        try:
            return uuid_to_text(uuid.UUID(text).bytes)
        except ValueError:
            return None
    return None
