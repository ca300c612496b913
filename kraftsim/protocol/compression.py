"""Compression codecs of record batches (attribute bits 0-2).

Kafka writes KRaft metadata uncompressed, but a batch may still be compressed by a
producer-side setting, so reading supports every codec Kafka has: gzip from the standard
library, and snappy (in snappy-java's "xerial" stream framing, as Kafka writes it), lz4
(the LZ4 frame format) and zstd through cramjam. Writing them exists for tests.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from types import ModuleType

from kraftsim.errors import CorruptRecordException, UnsupportedCompressionError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
BY_NAME = {v: k for k, v in NAMES.items()}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def _cramjam() -> ModuleType | None:
    try:
        import cramjam
    except ImportError:  # pragma: no cover - cramjam is a dependency, but may be missing
        return None
    return cramjam


def _need(codec: int) -> ModuleType:
    cj = _cramjam()
    if cj is None:
        raise UnsupportedCompressionError(
            f"the batch is compressed with {NAMES[codec]}, which needs the 'cramjam' package (pip install cramjam)"
        )
    return cj


#: The most bytes a batch's records section may expand to. KafkaRaftClient closes a metadata
#: batch at 8 MiB (MAX_BATCH_SIZE_BYTES) and a broker refuses a batch above its
#: message.max.bytes (1 MiB by default); eight times the raft cap leaves room for any batch
#: Kafka wrote while a small file that would expand to gigabytes is refused at once.
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024


class _TooLarge(Exception):
    pass


def decompress(codec: int, data: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress a batch's records section; more than `limit` bytes out is refused
    (CorruptRecordException) before they are all made."""
    if codec == NONE:
        return data
    try:
        if codec == GZIP:
            return _gzip_decompress(data, limit)
        if codec == SNAPPY:
            return _snappy_decompress(_need(codec), data, limit)
        if codec == LZ4:
            return _into(_need(codec).lz4, data, limit)
        if codec == ZSTD:
            return _into(_need(codec).zstd, data, limit)
    except UnsupportedCompressionError:
        raise
    except _TooLarge:
        raise CorruptRecordException(
            f"the {NAMES[codec]} records expand to more than {limit:,} bytes, more than any batch Kafka writes "
            f"(a metadata batch holds at most {8 * 1024 * 1024:,}); not decompressed further") from None
    except Exception as e:  # every codec raises its own error types
        raise CorruptRecordException(f"could not decompress {NAMES[codec]} records: {e}") from None
    raise UnsupportedCompressionError(f"unknown compression codec id {codec} in batch attributes")


def compress(codec: int, data: bytes) -> bytes:
    """Compress a records section (used to build test batches)."""
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data, mtime=0)
    cj = _need(codec)
    if codec == SNAPPY:
        return _snappy_compress(cj, data)
    if codec == LZ4:
        return bytes(cj.lz4.compress(data))
    if codec == ZSTD:
        return bytes(cj.zstd.compress(data))
    raise UnsupportedCompressionError(f"unknown compression codec id {codec}")


def _gzip_decompress(data: bytes, limit: int) -> bytes:
    """gzip.decompress (every member), stopping once more than `limit` bytes come out."""
    out = bytearray()
    rest = data
    while rest:
        d = zlib.decompressobj(wbits=31)
        out += d.decompress(rest, limit + 1 - len(out))
        if len(out) > limit or d.unconsumed_tail:
            raise _TooLarge
        if not d.eof:
            raise ValueError("the gzip stream ends before its end marker")
        rest = d.unused_data.lstrip(b"\x00")
    return bytes(out)


def _into(codec: ModuleType, data: bytes, limit: int) -> bytes:
    """A frame decompressed into a buffer one byte larger than `limit` (untouched pages cost nothing)."""
    buf = bytearray(limit + 1)
    try:
        n = codec.decompress_into(data, buf)
    except Exception as e:
        if "whole buffer" in str(e) or "smaller than required" in str(e):
            raise _TooLarge from None
        raise
    if n > limit:
        raise _TooLarge
    return bytes(memoryview(buf)[:n])


def _snappy_raw(cj: ModuleType, data: bytes, room: int) -> bytes:
    if cj.snappy.decompress_raw_len(data) > room:  # raw snappy states its length first
        raise _TooLarge
    return bytes(cj.snappy.decompress_raw(data))


def _snappy_decompress(cj: ModuleType, data: bytes, limit: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_raw(cj, data, limit)
    pos = len(_XERIAL_MAGIC) + 8  # magic, then int32 version and int32 compatible version
    out = bytearray()
    while pos < len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out += _snappy_raw(cj, data[pos : pos + size], limit - len(out))
        pos += size
    return bytes(out)


def _snappy_compress(cj: ModuleType, data: bytes, block: int = 32 * 1024) -> bytes:
    out = bytearray(_XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    for start in range(0, len(data), block):
        chunk = bytes(cj.snappy.compress_raw(data[start : start + block]))
        out += struct.pack(">i", len(chunk)) + chunk
    return bytes(out)
