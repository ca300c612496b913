"""Primitive encodings shared by the message codec and the record batch layer.

Kafka uses two varint flavours: unsigned varints in the compact message encoding and
zig-zag varints inside v2 records. Both are small and hot, so they are plain functions.
"""

from __future__ import annotations

import base64
import struct

from kraftsim.errors import KraftsimError


class Uuid(bytes):
    """A 16-byte Kafka Uuid; prints as Kafka does (url-safe base64, no padding)."""

    __slots__ = ()

    ZERO: "Uuid"

    def __new__(cls, value: bytes = b"\x00" * 16) -> "Uuid":
        if len(value) != 16:
            raise ValueError(f"a Uuid has 16 bytes, not {len(value)}")
        return super().__new__(cls, value)

    @classmethod
    def from_string(cls, text: str) -> "Uuid":
        """Parse Kafka's 22-character text form."""
        if len(text) != 22:
            raise ValueError(f"not a Kafka uuid (22 base64 characters): {text!r}")
        return cls(base64.urlsafe_b64decode(text + "=="))

    @classmethod
    def from_longs(cls, msb: int, lsb: int) -> "Uuid":
        return cls(struct.pack(">qq", msb, lsb))

    @property
    def msb(self) -> int:
        value: int = struct.unpack_from(">q", self, 0)[0]
        return value

    @property
    def lsb(self) -> int:
        value: int = struct.unpack_from(">q", self, 8)[0]
        return value

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self).decode("ascii").rstrip("=")

    def __repr__(self) -> str:
        return f"Uuid({str(self)!r})"


Uuid.ZERO = Uuid()


class VarintError(KraftsimError):
    """A varint runs past the end of its buffer or is longer than its type allows."""


def _read_unsigned(buf: bytes, pos: int, max_shift: int, what: str) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        try:
            b = buf[pos]
        except IndexError:
            raise VarintError(f"{what} runs past the end of the data") from None
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > max_shift:
            raise VarintError(f"{what} is longer than {max_shift // 7 + 1} bytes")


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned varint (up to 32 bits); return (value, next position)."""
    return _read_unsigned(buf, pos, 28, "varint")


def read_uvarlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of up to 64 bits."""
    return _read_unsigned(buf, pos, 63, "varlong")


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zig-zag varint (int32) as used inside v2 records."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zig-zag varlong (int64) as used inside v2 records."""
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def uvarint_bytes(value: int) -> bytes:
    """Encode an unsigned varint."""
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint_bytes(value: int) -> bytes:
    """Encode a zig-zag varint / varlong."""
    return uvarint_bytes((value << 1) ^ (value >> 63))


def uvarint_size(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


_SMALL = [bytes((i,)) for i in range(128)]
