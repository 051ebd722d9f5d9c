"""Request bodies decoded with msgspec into the API's Structs, with every failure a 400 naming the field: invalid
UTF-8 included (msgspec raises a bare UnicodeDecodeError for it), and large bodies decoded in slices.

A body of tens of megabytes (100k actions, an import of 200k ACLs) would hold the event loop for one long msgspec
call (40-160 ms on this machine). `decode_sliced` instead walks the top-level object itself and decodes its one
large array piece by piece (about 32 KiB each, cut at an object's closing brace), pausing between pieces.

Every input costs time linear in its size, in steps of about a slice, apart from msgspec's calls on one whole
element and on the rest of the body (and, for invalid UTF-8, `json_path_at` over the text before the bad byte:
one regex pass, one Python step per string or bracket). A piece is first cut at the first `},` about PIECE bytes
on, found by a regex that knows nothing of strings: when that piece decodes it is exactly a run of whole elements
(a valid prefix keeps the lexer in step with the body), the common case. When it does not (the cut fell inside a
string or a nested object, the array ended before it, or an element is malformed), `_element_end` walks from the
piece's start with a scanner that skips whole strings, to the first element end PIECE bytes on (or the array's
end), SCAN bytes a step with pauses; that piece is decoded once, and its error, if any, is the body's. The failed
attempt ended at or before the end of the piece then taken (every element end is a `},`), except once at the
array's end, so no part of the body is decoded again and again. Everything else of the body is decoded by msgspec
once the array is cut out.

Pure functions apart from the slicer they pause with; the decoders are shared, immutable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from typing import Any, TypeVar

import msgspec

from kraftacl.server.errors import BadRequest
from kraftacl.server.slices import Slicer

T = TypeVar("T")
Body = bytes | bytearray  # a request body: a bytearray when gathered as it arrived (`server.http`)
SLICED_ABOVE = 64 * 1024  # bodies larger than this are decoded in slices (a smaller one costs < 0.5 ms)
PIECE = 32 * 1024
_WS = re.compile(rb"[ \t\r\n]*")
_SCALAR = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_CUT = re.compile(rb"\}[ \t\r\n]*([,\]])")
_LAST = re.compile(rb"\}[ \t\r\n]*(\])")  # the first `}]` on: where the array likely ends
# Strings as the unrolled, possessive `"[^"\\]*(\\.[^"\\]*)*"`: matched or refused in one pass, never rescanned from a
# later quote (a run of `\"` cost O(n²) with `"(?:[^"\\]|\\.)*"`, tried again from each quote up to the end).
_SKIP = re.compile(rb'(?:[^"{}\[\]]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+', re.DOTALL)  # to a bracket or an open string
_IN_STRING = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)  # a string's contents, up to its closing quote
# A whole string (group 1 is its closing quote) or one still open where the search ends; or a bracket.
_TOKEN = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:(")|\\?\Z)|[{}\[\]]', re.DOTALL)
SCAN = 64 * 1024  # the scanners read at most this many bytes per regex call (about 0.2 ms)
_AT = re.compile(r" - at `\$((?:\[[0-9]+\])?)(.*)`$")


UTF8_AT_ONCE = 16 * 1024  # invalid UTF-8 in a larger body is located in slices (`Utf8Pending`), not at once


class Utf8Pending(Exception):
    """Invalid UTF-8 in a body too large to locate at once (1 MiB of `"principal":"a",` then a bad byte: 60,000
    keys, 70-150 ms of `json_path_at`): the dispatcher names the field in slices (`utf8_failure_sliced`)."""

    def __init__(self, body: Body) -> None:
        super().__init__("invalid UTF-8 in a large body")
        self.body = body


def decode(decoder: msgspec.json.Decoder[T], body: Body) -> T:
    """One msgspec call; invalid UTF-8 becomes a BadRequest naming the field (Utf8Pending for a body above
    UTF8_AT_ONCE, whose field the dispatcher finds in slices); msgspec's own errors pass through to
    `api.validation_failure`."""
    try:
        return decoder.decode(body)
    except UnicodeDecodeError:
        if len(body) > UTF8_AT_ONCE:
            raise Utf8Pending(body) from None
        raise _utf8_failure(body, "$") from None


async def utf8_failure_sliced(body: Body, slicer: Slicer) -> BadRequest:
    """`_utf8_failure` of a whole body, its path found with a pause every PATH_STEP tokens."""
    offset = _first_bad_byte(body)
    walk = _path_walk(body, offset)
    while True:
        try:
            next(walk)
        except StopIteration as done:
            return BadRequest(_UTF8_MESSAGE, done.value)
        await slicer.pause()


async def decode_sliced(
    body: Body, top: msgspec.json.Decoder[T], key: str, items: msgspec.json.Decoder[list[Any]], slicer: Slicer
) -> T:
    """`top.decode(body)` for a body whose `key` holds a large array of objects, decoded in slices by `items`."""
    if len(body) <= SLICED_ABOVE:
        return decode(top, body)
    pos = _ws(body, 0)
    if body[pos : pos + 1] != b"{":
        return decode(top, body)  # not an object: msgspec says so at once
    pos = _ws(body, pos + 1)
    spans: list[tuple[int, int]] = []
    found: list[Any] | None = None
    while body[pos : pos + 1] != b"}":
        name_end = await _string_end(body, pos, slicer) if body[pos : pos + 1] == b'"' else None
        if name_end is None:
            raise _malformed(pos)
        name = _key(body[pos:name_end], pos)
        pos = _ws(body, name_end)
        if body[pos : pos + 1] != b":":
            raise _malformed(pos)
        pos = _ws(body, pos + 1)
        first = body[pos : pos + 1]
        if name == key and first == b"[":
            found, end = await _array(body, pos, items, slicer, f"$.{key}")
            spans.append((pos, end))
            pos = end
        elif first == b'"':
            after = await _string_end(body, pos, slicer)
            if after is None:
                raise _malformed(pos)
            pos = after
        elif first in (b"{", b"["):
            raise BadRequest(f"unexpected {'an object' if first == b'{' else 'an array'}", f"$.{name}")
        else:
            token = _SCALAR.match(body, pos)
            if token is None:
                raise _malformed(pos)
            pos = token.end()
        pos = _ws(body, pos)
        if body[pos : pos + 1] == b",":
            pos = _ws(body, pos + 1)
        elif body[pos : pos + 1] != b"}":
            raise _malformed(pos)
    if _ws(body, pos + 1) != len(body):
        raise _malformed(_ws(body, pos + 1))
    rest = b"".join(_spliced(body, spans))
    head = decode(top, rest)
    return head if found is None else msgspec.structs.replace(head, **{key: found})  # type: ignore[type-var]


def _spliced(body: Body, spans: list[tuple[int, int]]) -> list[Body]:
    out, last = [], 0
    for start, end in spans:
        out += [body[last:start], b"[]"]
        last = end
    out.append(body[last:])
    return out


async def _array(
    body: Body, start: int, items: msgspec.json.Decoder[list[Any]], slicer: Slicer, where: str
) -> tuple[list[Any], int]:
    """The elements of the array at `start` and the position after it."""
    i = _ws(body, start + 1)
    if body[i : i + 1] == b"]":
        return [], i + 1
    out: list[Any] = []
    while True:
        await slicer.pause()
        decoded, i, closed = await _piece(body, i, items, slicer, where, len(out))
        out += decoded
        if closed:
            return out, i
        i = _ws(body, i)


async def _piece(
    body: Body, i: int, items: msgspec.json.Decoder[list[Any]], slicer: Slicer, where: str, base: int
) -> tuple[list[Any], int, bool]:
    """The whole elements from `i` up to an element end about PIECE bytes on (or the array's end), the position
    after the `,` or `]` that follows them, and whether that was the `]`."""
    cut = _CUT.search(body, i + PIECE) or _LAST.search(body, i)
    if cut is not None:
        try:
            return _decode_piece(body, i, cut.start() + 1, items, where, base), cut.end(), cut.group(1) == b"]"
        except msgspec.DecodeError:
            pass  # not an element end after all (or a malformed element): find the real one
    found = await _element_end(body, i, slicer)
    if found is None:  # no element end before the body does (or a stray `}`): msgspec names the first error
        rest = b"[" + body[i:]
        try:
            items.decode(rest)
        except msgspec.ValidationError as exc:
            raise _shifted(exc, where, base) from None
        except UnicodeDecodeError:
            raise _utf8_failure(rest, where, base) from None
        except msgspec.DecodeError as exc:
            raise _malformed_piece(exc, i) from None
        raise _malformed(len(body))
    end, after, closed = found
    try:
        return _decode_piece(body, i, end, items, where, base), after, closed
    except msgspec.DecodeError as exc:
        raise _malformed_piece(exc, i) from None


async def _element_end(body: Body, i: int, slicer: Slicer) -> tuple[int, int, bool] | None:
    """From element `i` of an array, with strings skipped whole: the end of the first element that ends (with
    `}`) at least PIECE bytes on, or the array's end if that comes first; as the position after the last element,
    the position after the `,` or `]` that follows it, and whether that was the `]`. None when the body ends
    first (or a `}` closes nothing). Reads at most SCAN bytes per regex call, pausing between calls."""
    depth, pos = 0, i
    while True:
        await slicer.pause()
        pos = _end(_SKIP, body, pos)
        char = body[pos : pos + 1]
        if char == b'"':  # a string that does not close within this call
            end = await _string_end(body, pos, slicer)
            if end is None:
                return None
            pos = end
        elif char in (b"{", b"["):
            depth += 1
            pos += 1
        elif char in (b"}", b"]"):
            depth -= 1
            pos += 1
            if depth < 0:
                return (pos - 1, pos, True) if char == b"]" else None
            if depth == 0 and char == b"}" and pos - i > PIECE:  # as `_CUT.search(body, i + PIECE)` would
                after = _ws(body, pos)
                if body[after : after + 1] in (b",", b"]"):
                    return pos, after + 1, body[after : after + 1] == b"]"
        elif pos >= len(body):
            return None


async def _string_end(body: Body, pos: int, slicer: Slicer) -> int | None:
    """The position after the string that opens at `pos`, read SCAN bytes a step; None if it never closes."""
    pos += 1
    while True:
        stop = _end(_IN_STRING, body, pos)
        if body[stop : stop + 1] == b'"':
            return stop + 1
        if stop == pos:  # the body ends inside the string (or with a lone `\`)
            return None
        pos = stop
        await slicer.pause()


def _end(pattern: re.Pattern[bytes], body: Body, pos: int) -> int:
    """Where `pattern` (which matches the empty string too) stops from `pos`, reading at most SCAN bytes."""
    match = pattern.match(body, pos, pos + SCAN)
    return match.end() if match else pos


def _decode_piece(
    body: Body, i: int, end: int, items: msgspec.json.Decoder[list[Any]], where: str, base: int
) -> list[Any]:
    piece = b"[" + body[i:end] + b"]"
    try:
        decoded: list[Any] = items.decode(piece)
        return decoded
    except msgspec.ValidationError as exc:
        raise _shifted(exc, where, base) from None
    except UnicodeDecodeError:
        raise _utf8_failure(piece, where, base) from None


def _ws(body: Body, pos: int) -> int:
    match = _WS.match(body, pos)
    return match.end() if match else pos


def _key(token: Body, pos: int) -> str:
    try:
        name: str = msgspec.json.decode(token)
    except UnicodeDecodeError:
        raise BadRequest("invalid UTF-8 in a key", "$") from None
    except msgspec.DecodeError:
        raise _malformed(pos) from None
    return name


def _malformed(pos: int) -> BadRequest:
    return BadRequest(f"malformed JSON: invalid character (byte {pos})")


def _malformed_piece(exc: msgspec.DecodeError, offset: int) -> BadRequest:
    """msgspec's message with the piece's byte position turned into the body's."""
    text = re.sub(r"\(byte ([0-9]+)\)", lambda m: f"(byte {int(m.group(1)) - 1 + offset})", str(exc))
    return BadRequest(f"malformed JSON: {text.removeprefix('JSON is malformed: ')}")


def _shifted(exc: msgspec.ValidationError, where: str, base: int) -> BadRequest:
    """A piece's `$[3].operation` as the body's `$.actions[base + 3].operation`."""
    text = str(exc)
    match = _AT.search(text)
    if match is None:
        return BadRequest(text, where)
    index, rest = match.group(1), match.group(2)
    element = f"[{base + int(index[1:-1])}]" if index else ""
    return BadRequest(text[: match.start()], f"{where}{element}{rest}")


_UTF8_MESSAGE = "invalid UTF-8 in the value of this field (JSON text must be UTF-8)"
PATH_STEP = 256  # tokens `json_path_at` reads between two pauses when sliced


def _first_bad_byte(body: Body) -> int:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return int(exc.start)
    return len(body)


def _utf8_failure(body: Body, where: str, base: int = 0) -> BadRequest:
    """Invalid UTF-8: the field whose string holds the first bad byte."""
    path = json_path_at(body, _first_bad_byte(body))
    if where != "$":  # `body` is a piece `[...]` of the array at `where`
        match = re.match(r"\$\[([0-9]+)\](.*)", path)
        path = f"{where}[{base + int(match.group(1))}]{match.group(2)}" if match else where
    return BadRequest(_UTF8_MESSAGE, path)


def json_path_at(body: Body, offset: int) -> str:
    """The JSON path (`$.actions[3].resource_name`) of the value that byte `offset` of `body` belongs to.

    One pass of `_TOKEN` (whole strings, each matched once, and brackets); the commas and colons between two
    tokens are counted by `bytes.count`/`rfind`, so a run of scalars costs no Python step each."""
    walk = _path_walk(body, offset)
    while True:
        try:
            next(walk)
        except StopIteration as done:
            path: str = done.value
            return path


def _path_walk(body: Body, offset: int) -> Generator[None, None, str]:
    """`json_path_at` as a generator that yields every PATH_STEP tokens and returns the path."""
    stack: list[list[Any]] = []  # ["o", key, expecting a key] or ["a", index]
    last = 0
    for count, token in enumerate(_TOKEN.finditer(body, 0, offset), 1):
        if count % PATH_STEP == 0:
            yield
        start = token.start()
        if stack and start > last:
            _between(stack[-1], body, last, start)
        last = token.end()
        first = body[start]
        if first == 0x7B:  # {
            stack.append(["o", None, True])
        elif first == 0x5B:  # [
            stack.append(["a", 0])
        elif first in (0x7D, 0x5D):  # } ]
            if stack:
                stack.pop()
        elif stack and stack[-1][0] == "o" and stack[-1][2] and token.group(1) is not None:  # a whole key
            stack[-1][1] = _key_text(token.group())
    if stack and offset > last:
        _between(stack[-1], body, last, offset)
    parts = ["$"]
    for entry in stack:
        if entry[0] == "a":
            parts.append(f"[{entry[1]}]")
        elif entry[1] is not None:
            parts.append(f".{entry[1]}")
    return "".join(parts)


def _between(entry: list[Any], body: Body, start: int, end: int) -> None:
    """The commas and colons of `body[start:end]` (no string, no bracket) applied to the innermost container."""
    if entry[0] == "a":
        entry[1] += body.count(b",", start, end)
    else:
        comma, colon = body.rfind(b",", start, end), body.rfind(b":", start, end)
        if comma != colon:  # either is there: the later one says whether a key comes next
            entry[2] = comma > colon


def _key_text(token: Body) -> str:
    """A key's text (as the JSON string says it, or as written when its escapes are invalid)."""
    text = bytes(token).decode("utf-8", "replace")
    try:
        key: str = json.loads(text)
    except ValueError:
        key = text[1:-1]
    return key
