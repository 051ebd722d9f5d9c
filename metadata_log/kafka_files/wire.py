"""Kafka's primitive wire types read from a byte buffer: big-endian ints, varints, UUIDs, compact strings.

A `WireReader` is a cursor owned by one caller (not thread-safe); the bytes it reads never change.

Two varint flavours exist in Kafka's formats and both appear here:
* record fields (length, timestampDelta, offsetDelta, key and value lengths) are zigzag-encoded
  signed varints (`varint`, `varlong`);
* the metadata frame and flexible message bodies use unsigned LEB128 (`uvarint`).
For example the bytes `04 66 6f 6f` read as a compact string are `uvarint` 4 (length + 1), then "foo".
"""

from __future__ import annotations

import mmap
import struct

from kraftacl.metadata_log.uuids import uuid_to_text

MAX_STRING_BYTES = 0x7FFF  # Kafka's generated readers refuse longer compact strings
_I8, _I16, _I32, _I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class WireError(ValueError):
    """Bytes that are not what the reader expected; `position` is relative to the buffer read."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason


class WireReader:
    """Reads Kafka primitives from `data[start:end]`, tracking the position."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes | memoryview | mmap.mmap, start: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = start
        self.end = len(data) if end is None else end

    @property
    def remaining(self) -> int:
        """Bytes left before `end`."""
        return self.end - self.pos

    def take(self, count: int, what: str) -> bytes:
        """The next `count` bytes; WireError if fewer remain."""
        if count < 0 or self.pos + count > self.end:
            raise WireError(self.pos, f"{what}: needs {count} bytes, {self.remaining} left")
        start, self.pos = self.pos, self.pos + count
        return bytes(self.data[start : self.pos])

    def _fixed(self, fmt: struct.Struct, what: str) -> int:
        if self.pos + fmt.size > self.end:
            raise WireError(self.pos, f"{what}: needs {fmt.size} bytes, {self.remaining} left")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return int(value)

    def int8(self, what: str) -> int:
        return self._fixed(_I8, what)

    def int16(self, what: str) -> int:
        return self._fixed(_I16, what)

    def int32(self, what: str) -> int:
        return self._fixed(_I32, what)

    def int64(self, what: str) -> int:
        return self._fixed(_I64, what)

    def uvarint(self, what: str, max_bytes: int = 5) -> int:
        """Unsigned LEB128 (Kafka's `readUnsignedVarint`: at most 5 bytes for 32 bits)."""
        value = shift = 0
        for _ in range(max_bytes):
            if self.pos >= self.end:
                raise WireError(self.pos, f"{what}: the varint runs past the end")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
        raise WireError(self.pos, f"{what}: a varint longer than {max_bytes} bytes")

    def varint(self, what: str) -> int:
        """Zigzag-encoded signed 32-bit varint (record fields)."""
        raw = self.uvarint(what)
        return (raw >> 1) ^ -(raw & 1)

    def varlong(self, what: str) -> int:
        """Zigzag-encoded signed 64-bit varint (record timestamp delta)."""
        raw = self.uvarint(what, max_bytes=10)
        return (raw >> 1) ^ -(raw & 1)

    def uuid(self, what: str) -> str:
        """16 bytes (most significant 64 bits first) as Kafka's 22-character `Uuid.toString`."""
        return uuid_to_text(self.take(16, what))

    def compact_string(self, what: str, nullable: bool = False) -> str | None:
        """uvarint length+1, then UTF-8; 0 is null. Malformed UTF-8 becomes U+FFFD, as Java's decoder does."""
        at = self.pos
        length = self.uvarint(what) - 1
        if length < 0:
            if nullable:
                return None
            raise WireError(at, f"non-nullable field {what} was serialized as null")
        if length > MAX_STRING_BYTES:
            raise WireError(at, f"string field {what} had invalid length {length}")
        return self.take(length, what).decode("utf-8", errors="replace")

    def tagged_fields(self, what: str) -> dict[int, bytes]:
        """A flexible struct's trailing tagged fields (tag -> raw bytes); unknown tags are kept, as Kafka does."""
        fields: dict[int, bytes] = {}
        for _ in range(self.uvarint(f"{what} tagged field count")):
            tag = self.uvarint(f"{what} tag")
            size = self.uvarint(f"{what} tag {tag} size")
            fields[tag] = self.take(size, f"{what} tag {tag}")
        return fields
