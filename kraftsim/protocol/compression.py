"""Compression codecs of record batches (attribute bits 0-2).

Kafka writes KRaft metadata uncompressed, but a batch may still be compressed by a
producer-side setting, so reading supports every codec Kafka has: gzip from the standard
library, and snappy (in snappy-java's "xerial" stream framing, as Kafka writes it), lz4
(the LZ4 frame format) and zstd through cramjam. Writing them exists for tests.
"""

from __future__ import annotations

import gzip
import struct
from typing import Any

from kraftsim.errors import CorruptRecordException, UnsupportedCompressionError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
BY_NAME = {v: k for k, v in NAMES.items()}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def _cramjam() -> Any:
    try:
        import cramjam
    except ImportError:  # pragma: no cover - cramjam is a dependency, but may be missing
        return None
    return cramjam


def _need(codec: int) -> Any:
    cj = _cramjam()
    if cj is None:
        raise UnsupportedCompressionError(
            f"the batch is compressed with {NAMES[codec]}, which needs the 'cramjam' package (pip install cramjam)"
        )
    return cj


def decompress(codec: int, data: bytes) -> bytes:
    """Decompress a batch's records section."""
    if codec == NONE:
        return data
    try:
        if codec == GZIP:
            return gzip.decompress(data)
        if codec == SNAPPY:
            return _snappy_decompress(_need(codec), data)
        if codec == LZ4:
            return bytes(_need(codec).lz4.decompress(data))
        if codec == ZSTD:
            return bytes(_need(codec).zstd.decompress(data))
    except UnsupportedCompressionError:
        raise
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


def _snappy_decompress(cj: Any, data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cj.snappy.decompress_raw(data))
    pos = len(_XERIAL_MAGIC) + 8  # magic, then int32 version and int32 compatible version
    out = bytearray()
    while pos < len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out += bytes(cj.snappy.decompress_raw(data[pos : pos + size]))
        pos += size
    return bytes(out)


def _snappy_compress(cj: Any, data: bytes, block: int = 32 * 1024) -> bytes:
    out = bytearray(_XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    for start in range(0, len(data), block):
        chunk = bytes(cj.snappy.compress_raw(data[start : start + block]))
        out += struct.pack(">i", len(chunk)) + chunk
    return bytes(out)
