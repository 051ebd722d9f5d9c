"""Decode a v1 batch payload straight into the caller's ACL rows, skipping the record objects (the replay fast path).

Functions over immutable bytes and tables. The per-row-type caches they keep (`_COMPILED`, `_TEXTS`)
only ever gain an entry or are cleared whole, each step atomic under the GIL, and every entry is
right for any caller: safe to call from any thread.

Replay never needs the records themselves, only what they become: an ACL row per
AccessControlEntryRecord (`None` per RemoveAccessControlEntryRecord) and the ids. The caller
describes its row type in `RowTables` (this package knows nothing of the authorizer's types):
each code field goes through a function (e.g. `ResourceType.from_code`), precomputed here for the
128 one-byte zigzag varints so that the common case costs one list index; principals and hosts
are looked up by their raw bytes, and only one not seen yet is decoded and goes through `intern`.
`codec_fast.decode_v1` reuses this walk with identity tables; a malformed payload raises
ValueError/IndexError (the caller turns it into a DecodeError with `codec_fast.diagnose_v1`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from kraftacl.metadata_log.uuids import ids_to_text

CodeMap = Callable[[int], Any]


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode one zigzag varint at `pos`; return (value, next position)."""
    shift = 0
    acc = 0
    while True:
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if b < 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError(f"varint longer than 10 bytes at byte {pos}")


MAX_STRING_BYTES = 32767  # Kafka's limit on every string field (spec §2); lengths of 64+ take this path


def string_end(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode a string length at `pos`; return (end of the string, start of the string)."""
    start = pos
    length, pos = varint(buf, pos)
    if length < 0:
        raise ValueError(f"negative string length {length} at byte {start}")
    if length > MAX_STRING_BYTES:
        raise ValueError(f"a string of {length} bytes at byte {start}, over Kafka's limit of {MAX_STRING_BYTES}")
    return pos + length, pos


class RowTables(NamedTuple):
    """How one AccessControlEntryRecord becomes a row: `row_type` built from the mapped fields in this order.

    Each code mapper must accept every int (map unknown codes, never raise): the 128 one-byte codes
    are mapped up front. Keep one instance per row type (a module constant): its compiled tables
    are cached by value.
    """

    row_type: type[tuple[Any, ...]]  # rows are row_type((resource_type, name, pattern, principal, host, op, perm))
    resource_type: CodeMap
    pattern_type: CodeMap
    operation: CodeMap
    permission_type: CodeMap
    intern: Callable[[str], str]

    def one_byte(self) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        """Per code field, the mapped value of each one-byte varint 0..127 (zigzag-decoded)."""
        codes = [(b >> 1) ^ -(b & 1) for b in range(128)]
        return (
            [self.resource_type(c) for c in codes],
            [self.pattern_type(c) for c in codes],
            [self.operation(c) for c in codes],
            [self.permission_type(c) for c in codes],
        )


_COMPILED: dict[RowTables, tuple[list[Any], list[Any], list[Any], list[Any]]] = {}
# Per row type: the raw bytes of a principal or host -> its interned text. Thousands of ACLs share
# each principal, so most fields are found here without decoding; cleared when it reaches the limit.
_TEXTS: dict[RowTables, dict[bytes, str]] = {}
TEXTS_LIMIT = 1 << 16


def _intern_text(raw: bytes, texts: dict[bytes, str], intern: Callable[[str], str]) -> str:
    """Decode and intern a principal or host not yet in `texts`, and remember it."""
    if len(texts) >= TEXTS_LIMIT:
        texts.clear()
    text = texts[raw] = intern(raw.decode())
    return text


def decode_v1_rows(buf: bytes, tables: RowTables) -> tuple[list[str], list[Any]]:
    """(ids, rows) of a v1 `RecordBatch` payload: a row per add, None per remove, in record order."""
    ids, rows, _, _ = decode_v1_rows_part(buf, tables, 0, 0, -1)
    return ids, rows


def decode_v1_rows_part(
    buf: bytes, tables: RowTables, pos: int, left: int, limit: int
) -> tuple[list[str], list[Any], int, int]:
    """Up to `limit` (ids, rows) of a v1 payload from byte `pos`, where `left` rows of the current block remain (0:
    a block's count comes next), and where to go on: (ids, rows, next `pos`, next `left`), `pos` -1 once the
    payload's end was read. A negative `limit` reads to the end. One call is one hold of the GIL (compiled code
    never hands it over), so a large batch read on a serving node is decoded a part at a time."""
    compiled = _COMPILED.get(tables)
    if compiled is None:
        compiled = _COMPILED[tables] = tables.one_byte()
    rt_t, pt_t, op_t, pm_t = compiled
    texts = _TEXTS.setdefault(tables, {})
    row_type, rt_f, pt_f, op_f, pm_f, intern = tables
    new = tuple.__new__
    rows: list[Any] = []
    append = rows.append
    raw_ids: list[bytes] = []  # one base64 call makes every text (uuids.ids_to_text)
    add_id = raw_ids.append
    end = len(buf)
    while len(rows) != limit:
        if left == 0:
            n, pos = varint(buf, pos)
            if n == 0:
                if pos != end:
                    raise ValueError(f"payload has {end - pos} bytes after the end of the batch (at byte {pos})")
                return ids_to_text(raw_ids), rows, -1, 0
            if n < 0:
                n = -n
                _, pos = varint(buf, pos)
            left = n
        while left and len(rows) != limit:
            left -= 1
            tag = buf[pos]
            add_id(buf[pos + 1 : pos + 17])
            pos += 17
            if tag == 2:
                append(None)
                continue
            if tag != 0:
                raise ValueError(f"invalid union branch {tag} at byte {pos - 17}")
            b = buf[pos]
            if b < 0x80:
                rt = rt_t[b]
                pos += 1
            else:
                v, pos = varint(buf, pos)
                rt = rt_f(v)
            b = buf[pos]
            if not b & 0x81:
                pos += 1
                e = pos + (b >> 1)
            else:
                e, pos = string_end(buf, pos)
            name = buf[pos:e].decode()
            pos = e
            b = buf[pos]
            if b < 0x80:
                pt = pt_t[b]
                pos += 1
            else:
                v, pos = varint(buf, pos)
                pt = pt_f(v)
            b = buf[pos]
            if not b & 0x81:
                pos += 1
                e = pos + (b >> 1)
            else:
                e, pos = string_end(buf, pos)
            raw = buf[pos:e]
            principal = texts.get(raw)
            if principal is None:
                principal = _intern_text(raw, texts, intern)
            pos = e
            b = buf[pos]
            if not b & 0x81:
                pos += 1
                e = pos + (b >> 1)
            else:
                e, pos = string_end(buf, pos)
            raw = buf[pos:e]
            host = texts.get(raw)
            if host is None:
                host = _intern_text(raw, texts, intern)
            pos = e
            b = buf[pos]
            if b < 0x80:
                op = op_t[b]
                pos += 1
            else:
                v, pos = varint(buf, pos)
                op = op_f(v)
            b = buf[pos]
            if b < 0x80:
                pm = pm_t[b]
                pos += 1
            else:
                v, pos = varint(buf, pos)
                pm = pm_f(v)
            append(new(row_type, (rt, name, pt, principal, host, op, pm)))
    return ids_to_text(raw_ids), rows, pos, left
