"""Request bodies decoded with msgspec into the API's Structs, with every failure a 400 naming the field: invalid
UTF-8 included (msgspec raises a bare UnicodeDecodeError for it), and large bodies decoded in slices.

A body of tens of megabytes (100k actions, an import of 200k ACLs) would hold the event loop for one long msgspec
call (40-160 ms on this machine). `decode_sliced` instead walks the top-level object itself and decodes its one
large array piece by piece (about 32 KiB each, cut at an object's closing brace), pausing between pieces. A cut
can land inside a string that holds `},`: that piece then fails as truncated JSON and is retried with the
next candidate cut; a piece that decodes is exactly a run of whole elements (its bytes parse exactly as they do
inside the whole body). Everything else of the body is decoded by msgspec once the array is cut out.

Pure functions apart from the slicer they pause with; the decoders are shared, immutable.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import msgspec

from kraftacl.server.errors import BadRequest
from kraftacl.server.slices import Slicer

T = TypeVar("T")
Body = bytes | bytearray  # a request body: a bytearray when gathered as it arrived (`server.http`)
SLICED_ABOVE = 64 * 1024  # bodies larger than this are decoded in slices (a smaller one costs < 0.5 ms)
PIECE = 32 * 1024
_WS = re.compile(rb"[ \t\r\n]*")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_CUT = re.compile(rb"\}[ \t\r\n]*([,\]])")
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\],:]', re.DOTALL)
_AT = re.compile(r" - at `\$((?:\[[0-9]+\])?)(.*)`$")


def decode(decoder: msgspec.json.Decoder[T], body: Body) -> T:
    """One msgspec call; invalid UTF-8 becomes a BadRequest naming the field (msgspec's own errors pass through
    to `api.validation_failure`)."""
    try:
        return decoder.decode(body)
    except UnicodeDecodeError:
        raise _utf8_failure(body, "$") from None


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
        name_token = _STRING.match(body, pos)
        if name_token is None:
            raise _malformed(pos)
        name = _key(name_token.group(), pos)
        pos = _ws(body, name_token.end())
        if body[pos : pos + 1] != b":":
            raise _malformed(pos)
        pos = _ws(body, pos + 1)
        first = body[pos : pos + 1]
        if name == key and first == b"[":
            found, end = await _array(body, pos, items, slicer, f"$.{key}")
            spans.append((pos, end))
            pos = end
        elif first == b'"':
            token = _STRING.match(body, pos)
            if token is None:
                raise _malformed(pos)
            pos = token.end()
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
        decoded, cut = await _piece(body, i, items, slicer, where, len(out))
        out += decoded
        i = cut.end()
        if cut.group(1) == b"]":
            return out, i
        i = _ws(body, i)


async def _piece(
    body: Body, i: int, items: msgspec.json.Decoder[list[Any]], slicer: Slicer, where: str, base: int
) -> tuple[list[Any], re.Match[bytes]]:
    """The whole elements from `i` up to a cut about PIECE bytes on, and that cut. A cut inside a string (the
    piece fails as truncated) moves on; a piece that fails otherwise may have gone past the array's end (a
    later string holding `},`): then the cuts from `i` are tried in order, and the first that decodes wins."""
    cut = _CUT.search(body, i + PIECE) or _last_cut(body, i)
    first_error: msgspec.DecodeError | None = None
    while cut is not None:
        try:
            return _decode_piece(body, i, cut, items, where, base), cut
        except msgspec.DecodeError as exc:
            if not _truncated(exc, cut.start() + 3 - i):
                first_error = exc
                break
        cut = _CUT.search(body, cut.start() + 1 + PIECE) or _CUT.search(body, cut.start() + 1)
    for count, earlier in enumerate(_CUT.finditer(body, i)):
        if count % 16 == 15:
            await slicer.pause()
        try:
            return _decode_piece(body, i, earlier, items, where, base), earlier
        except msgspec.DecodeError as exc:
            first_error = first_error or exc
    if first_error is None:  # no element ends with `}`: msgspec names the first element that is no object
        try:
            items.decode(b"[" + body[i:])
        except msgspec.ValidationError as exc:
            raise _shifted(exc, where, base) from None
        except UnicodeDecodeError:
            raise _utf8_failure(b"[" + body[i:], where, base) from None
        except msgspec.DecodeError as exc:
            first_error = exc
        else:
            raise _malformed(len(body))
    raise _malformed_piece(first_error, i) from None


def _decode_piece(
    body: Body, i: int, cut: re.Match[bytes], items: msgspec.json.Decoder[list[Any]], where: str, base: int
) -> list[Any]:
    piece = b"[" + body[i : cut.start() + 1] + b"]"
    try:
        decoded: list[Any] = items.decode(piece)
        return decoded
    except msgspec.ValidationError as exc:
        raise _shifted(exc, where, base) from None
    except UnicodeDecodeError:
        raise _utf8_failure(piece, where, base) from None


def _last_cut(body: Body, start: int) -> re.Match[bytes] | None:
    last = None
    for last in _CUT.finditer(body, start):  # noqa: B007 - the last one is wanted
        pass
    return last


def _truncated(exc: msgspec.DecodeError, length: int) -> bool:
    """A piece cut inside a string fails at (or next to) its end."""
    text = str(exc)
    at = re.search(r"\(byte ([0-9]+)\)", text)
    return "truncated" in text or (at is not None and int(at.group(1)) >= length - 3)


def _ws(body: Body, pos: int) -> int:
    match = _WS.match(body, pos)
    return match.end() if match else pos


def _key(token: bytes, pos: int) -> str:
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


def _utf8_failure(body: Body, where: str, base: int = 0) -> BadRequest:
    """Invalid UTF-8: the field whose string holds the first bad byte."""
    try:
        body.decode("utf-8")
        offset = len(body)
    except UnicodeDecodeError as exc:
        offset = exc.start
    path = json_path_at(body, offset)
    if where != "$":  # `body` is a piece `[...]` of the array at `where`
        match = re.match(r"\$\[([0-9]+)\](.*)", path)
        path = f"{where}[{base + int(match.group(1))}]{match.group(2)}" if match else where
    return BadRequest("invalid UTF-8 in the value of this field (JSON text must be UTF-8)", path)


def json_path_at(body: Body, offset: int) -> str:
    """The JSON path (`$.actions[3].resource_name`) of the value that byte `offset` of `body` belongs to."""
    stack: list[list[Any]] = []  # ["o", key, expecting a key] or ["a", index]
    for token in _TOKEN.finditer(body, 0, offset):
        t = token.group()
        if t == b"{":
            stack.append(["o", None, True])
        elif t == b"[":
            stack.append(["a", 0])
        elif t in (b"}", b"]"):
            if stack:
                stack.pop()
        elif t == b",":
            if stack and stack[-1][0] == "a":
                stack[-1][1] += 1
            elif stack:
                stack[-1][2] = True
        elif t == b":":
            if stack:
                stack[-1][2] = False
        elif stack and stack[-1][0] == "o" and stack[-1][2]:
            stack[-1][1] = json.loads(t.decode("utf-8", "replace"))
    parts = ["$"]
    for entry in stack:
        if entry[0] == "a":
            parts.append(f"[{entry[1]}]")
        elif entry[1] is not None:
            parts.append(f".{entry[1]}")
    return "".join(parts)
