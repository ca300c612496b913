"""A snapshot file copied for another clock: its batches restamped, and its bytes copied
in the kernel.

A KRaft batch's records all carry the batch's timestamp, so a snapshot written at another
time differs only in each batch's base and max timestamp and its CRC
(kraftsim.image.publisher.snapshot_copies places such copies instead of encoding the image
again). The CRC is linear, so the new one follows from the old one and the change, without
reading the records (`restamp_patches`).
"""

from __future__ import annotations

import os
import struct
from typing import Callable

from kraftsim.protocol.batch import CRC_AT, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, TIMESTAMPS_AT, crc32c
from kraftsim.storage.fileio import WRITE_PIECE

#: Where a v2 batch keeps what `restamp_batches` rewrites: the CRC (of everything from the
#: attributes on), the base and the max timestamp.
_CRC_FROM = CRC_AT + 4  # (what the CRC covers starts after it)
_TIMESTAMPS = struct.Struct(">qq")


def restamp_batches(data: bytes, old: int, new: int) -> bytes | None:
    """The batches of `data`, written with every timestamp `old`, as they are written with
    `new`: a KRaft batch's records all carry the batch's timestamp (timestamp delta 0), so
    only each batch's base and max timestamp and its CRC change — the boundaries and
    records do not depend on the clock. None if a batch is not of that form (then the file
    must be encoded again)."""
    out = bytearray(data)
    view = memoryview(out)
    pos, end = 0, len(out)
    while pos < end:
        if end - pos < RECORD_BATCH_OVERHEAD:
            return None
        size = int.from_bytes(out[pos + 8:pos + LOG_OVERHEAD], "big", signed=True) + LOG_OVERHEAD
        if size < RECORD_BATCH_OVERHEAD or pos + size > end:
            return None
        if _TIMESTAMPS.unpack_from(out, pos + TIMESTAMPS_AT) != (old, old):
            return None
        _TIMESTAMPS.pack_into(out, pos + TIMESTAMPS_AT, new, new)
        out[pos + CRC_AT:pos + _CRC_FROM] = crc32c(bytes(view[pos + _CRC_FROM:pos + size])).to_bytes(4, "big")
        pos += size
    view.release()
    return bytes(out)


#: CRC-32C (Castagnoli), reflected: the polynomial, and x^(2^k) modulo it for k = 0..31
#: (zero-extension of a CRC by n bytes multiplies it by x^(8n): a product of these).
_CRC32C_POLY = 0x82F63B78


def _crc_multiply(a: int, b: int) -> int:
    """a * b modulo the CRC-32C polynomial (reflected bit order, as zlib's multmodp)."""
    m, p = 1 << 31, 0
    while True:
        if a & m:
            p ^= b
            if a & (m - 1) == 0:
                return p
        m >>= 1
        b = (b >> 1) ^ _CRC32C_POLY if b & 1 else b >> 1


def _x_powers() -> list[int]:
    out = [1 << 30]  # x^1
    for _ in range(31):
        out.append(_crc_multiply(out[-1], out[-1]))
    return out


_X_2K = _x_powers()


def crc32c_zero_extend(crc: int, n: int) -> int:
    """The raw CRC-32C (no initial value or final xor) of a message followed by `n` zero
    bytes, from the message's raw CRC `crc`: in O(log n), without the zeros."""
    p, k, bits = 1 << 31, 3, n  # x^0; n bytes are x^(8n) = x^(2^3 * n)
    while bits:
        if bits & 1:
            p = _crc_multiply(_X_2K[k & 31], p)
        bits >>= 1
        k += 1
    return _crc_multiply(p, crc)


def restamp_patches(read_at: Callable[[int, int], bytes], size: int, old: int,
                    new: int) -> list[tuple[int, bytes]] | None:
    """What `restamp_batches` changes in a file of `size` bytes, as (position, bytes) to
    write over it, reading only each batch's header (`read_at(position, count)`).

    The CRC covers the attributes to the end of the batch, and only the timestamps near
    its start change; the CRC is linear, so the new one is the old one xor the CRC of the
    change followed by the rest of the batch as zeros — found in O(log size) without
    reading the records. None where `restamp_batches` gives None."""
    stamps = _TIMESTAMPS.pack(old, old)
    change = bytes(a ^ b for a, b in zip(stamps, _TIMESTAMPS.pack(new, new)))
    change_crc = crc32c(change) ^ crc32c(bytes(len(change)))  # (raw: equal lengths cancel the rest)
    after = TIMESTAMPS_AT + _TIMESTAMPS.size
    patches, pos = [], 0
    while pos < size:
        if size - pos < RECORD_BATCH_OVERHEAD:
            return None
        head = read_at(pos, after)
        if len(head) < after:
            return None
        batch_size = int.from_bytes(head[8:LOG_OVERHEAD], "big", signed=True) + LOG_OVERHEAD
        if batch_size < RECORD_BATCH_OVERHEAD or pos + batch_size > size or head[TIMESTAMPS_AT:after] != stamps:
            return None
        crc = int.from_bytes(head[CRC_AT:_CRC_FROM], "big") ^ crc32c_zero_extend(change_crc, batch_size - after)
        patches.append((pos + CRC_AT, crc.to_bytes(4, "big") + head[_CRC_FROM:TIMESTAMPS_AT] +
                        _TIMESTAMPS.pack(new, new)))
        pos += batch_size
    return patches


def copy_file_bytes(src_fd: int, dst_fd: int, size: int) -> None:
    """The first `size` bytes of one open file into another, from position 0: in the kernel
    where it can (copy_file_range, then sendfile), else through a buffer."""
    done = 0
    for kernel_copy in (_copy_file_range, _sendfile):
        try:
            while done < size and (n := kernel_copy(src_fd, dst_fd, done, size - done)) > 0:
                done += n
        except (OSError, AttributeError):
            pass  # (not between these files, or not here: the next way, from where this one stopped)
    while done < size:
        chunk = os.pread(src_fd, min(size - done, WRITE_PIECE), done)
        if not chunk:
            raise OSError(f"{size - done} byte(s) missing at the end of the source")
        written = os.pwrite(dst_fd, chunk, done)
        if written <= 0:
            raise OSError(f"a write took none of {len(chunk)} byte(s) at {done}")
        done += written


def _copy_file_range(src_fd: int, dst_fd: int, at: int, count: int) -> int:
    return os.copy_file_range(src_fd, dst_fd, count, at, at)


def _sendfile(src_fd: int, dst_fd: int, at: int, count: int) -> int:
    os.lseek(dst_fd, at, os.SEEK_SET)
    return os.sendfile(dst_fd, src_fd, at, count)


def pread(fd: int, at: int, count: int) -> bytes:
    """`count` bytes of the open file `fd` from position `at` (as `restamp_patches` reads)."""
    return os.pread(fd, count, at)


__all__ = ["copy_file_bytes", "crc32c_zero_extend", "pread", "restamp_batches", "restamp_patches"]
