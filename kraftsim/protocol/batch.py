"""Record batches, magic v2 (kafka-facts §4.3-4.4): parse, validate, build.

Reading is split in two steps so that a verifier can report every problem in a file:
`split_batches` cuts a file into batch-sized slices using only the base offset and length
fields (and reports a torn tail), and `parse_batch` checks one slice (size, magic, CRC-32C)
and exposes its header and records. Building writes exactly what Kafka's raft layer
writes: CREATE_TIME, producer id -1, timestamp delta 0, no headers.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator, NamedTuple, Sequence

import google_crc32c

from kraftsim.errors import CorruptRecordException
from kraftsim.protocol import compression
from kraftsim.protocol import fastpath as _fastpath
from kraftsim.protocol.primitives import VarintError, read_varint, read_varlong, varint_bytes

LOG_OVERHEAD = 12  # base offset + length
RECORD_BATCH_OVERHEAD = 61
MAGIC_V2 = 2
CONTROL_FLAG = 0x20
TRANSACTIONAL_FLAG = 0x10
COMPRESSION_MASK = 0x07

# base offset, length, partition leader epoch, magic, crc, attributes, last offset delta,
# base timestamp, max timestamp, producer id, producer epoch, base sequence, record count
_HEADER = struct.Struct(">qiibIhiqqqhii")
#: Where a batch's magic byte sits (after base offset, length and leader epoch).
MAGIC_AT = 16
#: Where a batch's CRC-32C field starts (after base offset, length, leader epoch and magic), and
#: where the bytes it covers start.
CRC_AT = 17
_CRC_START = CRC_AT + 4
#: Where a batch's base and max timestamps start (two int64s, covered by the CRC).
TIMESTAMPS_AT = 27
_CRC_FIELD = struct.Struct(">I")


#: CRC-32C of `data`: google_crc32c's own function (no wrapper call: every batch checked asks it).
crc32c: Callable[[bytes], int] = google_crc32c.value


def crc32c_slicer(data: bytes | bytearray | memoryview) -> Callable[[int, int], int]:
    """CRC-32C of `data[start:end]` as a function of (start, end): without copying the slice
    where the C module is there (a scan of a segment checks gigabytes of batches), with a
    copy otherwise (google_crc32c takes bytes only)."""
    whole = _fastpath.crc32c_buffer
    if whole is not None:
        view = memoryview(data)
        return lambda start, end: whole(view[start:end])
    return lambda start, end: crc32c(bytes(data[start:end]))


#: From this size on, a batch's CRC is taken over a view of its bytes rather than a copy (a
#: snapshot's batches are up to 8 MiB; below it the copy is the cheaper call).
_VIEW_FROM = 1 << 14


def _covered_crc(raw: bytes) -> int:
    """CRC-32C of what a batch's CRC covers (from its attributes on)."""
    whole = _fastpath.crc32c_buffer
    if whole is not None and len(raw) >= _VIEW_FROM:
        return whole(memoryview(raw)[_CRC_START:])
    return crc32c(raw[_CRC_START:])


def stored_crc(raw: bytes | bytearray | memoryview) -> int:
    """The CRC-32C a batch's header states (not checked): with its offsets and epoch, the
    cheap key that tells one written batch from another without reading its records."""
    crc: int = _CRC_FIELD.unpack_from(raw, CRC_AT)[0]
    return crc


class BatchSlice(NamedTuple):
    """The bytes of one batch as found in a file, before any check beyond its length."""

    position: int
    base_offset: int
    data: bytes


class TornTail(NamedTuple):
    """Bytes at the end of a file that do not make a whole batch."""

    position: int
    base_offset: int | None  # None when not even the 8-byte base offset is there
    available: int
    needed: int | None  # None when the length field itself is missing
    magic: int | None = None  # the magic byte, when the bytes reach it

    def describe(self) -> str:
        if self.needed is None:
            return f"torn batch: only {self.available} byte(s) left, fewer than the {LOG_OVERHEAD}-byte batch prefix"
        return f"torn batch: its length says {self.needed} bytes but only {self.available} remain"

    def not_a_batch_start(self, expected: int | None) -> str | None:
        """Why these bytes cannot be the start of the batch that follows a batch ending at
        offset `expected` - 1 (None: unknown), so are damage, not a torn write; None when they
        can be. A crash mid-write leaves the next batch's first bytes: its base offset is the
        next offset and its magic byte 2."""
        if self.base_offset is not None and expected is not None and self.base_offset != expected:
            return f"its base offset {self.base_offset} is not the next offset {expected}: not the start of a batch"
        if self.magic is not None and self.magic != MAGIC_V2:
            return f"its magic byte is {self.magic}: not the start of a batch"
        return None


class Record(NamedTuple):
    """One v2 record inside a batch."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    attributes: int = 0


_fastpath.provide_types(record=Record)


def _too_small_text(size: int) -> str:
    return f"Record batch is corrupt (the size {size} is smaller than the minimum allowed overhead {RECORD_BATCH_OVERHEAD})"


class CorruptBatchLength(CorruptRecordException):
    """A length field below the v2 minimum while cutting batches, and where it was read: no
    boundary after it can be trusted, so a walk of the file ends here."""

    def __init__(self, message: str, position: int = -1, base_offset: int = -1):
        super().__init__(message)  # (one argument, so that the error pickles like any other)
        self.position = position
        self.base_offset = base_offset


def _batch_size(pos: int, base_offset: int, length: int, remaining: int) -> int | TornTail:
    """A batch's whole size from its length field, or the torn tail it makes when the bytes
    left are fewer; a length below the v2 minimum is a CorruptRecordException."""
    size = length + LOG_OVERHEAD
    if size < RECORD_BATCH_OVERHEAD:
        raise CorruptBatchLength(_too_small_text(size), pos, base_offset)
    if size > remaining:
        return TornTail(pos, base_offset, remaining, size)
    return size


def split_batches(data: bytes, start: int = 0) -> Iterator[BatchSlice | TornTail]:
    """Cut `data` into batch slices by their length fields; a torn tail comes last.

    A length below the v2 minimum ends the walk with a CorruptBatchLength (a
    CorruptRecordException), since no later boundary can be trusted after it.
    """
    pos = start
    end = len(data)
    while pos < end:
        remaining = end - pos
        if remaining < LOG_OVERHEAD:
            base = struct.unpack_from(">q", data, pos)[0] if remaining >= 8 else None
            yield TornTail(pos, base, remaining, None)
            return
        base_offset, length = struct.unpack_from(">qi", data, pos)
        size = _batch_size(pos, base_offset, length, remaining)
        if isinstance(size, TornTail):
            yield size._replace(magic=data[pos + MAGIC_AT] if remaining > MAGIC_AT else None)
            return
        yield BatchSlice(pos, base_offset, data[pos : pos + size])
        pos += size


def read_batches(f: BinaryIO) -> Iterator[BatchSlice | TornTail]:
    """`split_batches` over an open file, reading one batch at a time: the same slices, torn
    tail and CorruptBatchLength, positions counted from the file's start. The walk ends
    at the size the file had when it began (a batch appended meanwhile is not seen, one cut
    short is a torn tail), and a length field is never trusted beyond it."""
    end = f.seek(0, os.SEEK_END)
    f.seek(0)
    pos = 0
    while pos < end:
        remaining = end - pos
        head = f.read(min(remaining, LOG_OVERHEAD))
        if len(head) < LOG_OVERHEAD:  # (also a file cut while it is read)
            yield TornTail(pos, struct.unpack_from(">q", head)[0] if len(head) >= 8 else None, len(head), None)
            return
        base_offset, length = struct.unpack(">qi", head)
        size = _batch_size(pos, base_offset, length, remaining)
        if isinstance(size, TornTail):
            magic = f.read(MAGIC_AT + 1 - LOG_OVERHEAD)[MAGIC_AT - LOG_OVERHEAD:]
            yield size._replace(magic=magic[0] if magic else None)
            return
        f.seek(pos)  # (the batch read whole, its header again: one copy of its bytes, not two)
        raw = f.read(size)
        if len(raw) < size:
            yield TornTail(pos, base_offset, len(raw), size, raw[MAGIC_AT] if len(raw) > MAGIC_AT else None)
            return
        yield BatchSlice(pos, base_offset, raw)
        pos += size


@dataclass(slots=True)
class RecordBatch:
    """A parsed v2 batch: its header fields and its raw bytes."""

    base_offset: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    raw: bytes

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def records(self) -> list[Record]:
        """Decode the records (decompressing first when needed)."""
        body = self.raw[RECORD_BATCH_OVERHEAD:]
        codec = self.compression
        if codec:
            body = compression.decompress(codec, body)
        return parse_records(body, self.records_count)

    def reencode(self, records: Sequence[Record] | None = None) -> bytes:
        """Write this batch again from its fields and records (to check a round trip)."""
        return build_batch_from_records(
            self.base_offset,
            self.records() if records is None else records,
            epoch=self.partition_leader_epoch,
            base_timestamp=self.base_timestamp,
            max_timestamp=self.max_timestamp,
            attributes=self.attributes,
            last_offset_delta=self.last_offset_delta,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
        )


def parse_batch(raw: bytes, check_crc: bool = True) -> RecordBatch:
    """Parse and check one batch slice (size, magic and CRC-32C)."""
    if len(raw) < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordException(_too_small_text(len(raw)))
    (base_offset, _length, partition_leader_epoch, magic, crc, attributes, last_offset_delta, base_timestamp,
     max_timestamp, producer_id, producer_epoch, base_sequence, records_count) = _HEADER.unpack_from(raw, 0)
    batch = RecordBatch(  # the length field is implied by raw
        base_offset, partition_leader_epoch, magic, crc, attributes, last_offset_delta, base_timestamp,
        max_timestamp, producer_id, producer_epoch, base_sequence, records_count, raw=raw,
    )
    if batch.magic != MAGIC_V2:
        raise CorruptRecordException(f"Invalid magic {batch.magic}: only record batches of magic 2 are supported")
    if check_crc:
        computed = _covered_crc(raw)
        if computed != batch.crc:
            raise CorruptRecordException(f"Record is corrupt (stored crc = {batch.crc}, computed crc = {computed})")
    if batch.records_count < 0:
        raise CorruptRecordException(f"Found invalid record count {batch.records_count} in magic v{batch.magic} batch")
    return batch


def check_batch_at(data: bytes | bytearray | memoryview, pos: int, size: int) -> None:
    """`parse_batch`'s checks (size, magic, CRC-32C, record count; the same errors) of the
    batch in data[pos:pos + size], without building it: what a log's recovery scan asks of
    every batch of a segment."""
    if size < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordException(
            f"Record batch is corrupt (the size {size} is smaller than the minimum allowed overhead {RECORD_BATCH_OVERHEAD})"
        )
    fields = _HEADER.unpack_from(data, pos)
    magic, crc, records_count = fields[3], fields[4], fields[12]
    if magic != MAGIC_V2:
        raise CorruptRecordException(f"Invalid magic {magic}: only record batches of magic 2 are supported")
    computed = crc32c_slicer(data)(pos + _CRC_START, pos + size)
    if computed != crc:
        raise CorruptRecordException(f"Record is corrupt (stored crc = {crc}, computed crc = {computed})")
    if records_count < 0:
        raise CorruptRecordException(f"Found invalid record count {records_count} in magic v{magic} batch")


def _read_nullable_bytes(body: bytes, pos: int) -> tuple[bytes | None, int]:
    """A record key, value or header value: a varint length (negative: null), then the bytes."""
    n, pos = read_varint(body, pos)
    if n < 0:
        return None, pos
    return body[pos : pos + n], pos + n


def parse_records(body: bytes, count: int) -> list[Record]:
    """Decode `count` v2 records from a records section; every byte must be used."""
    if _fastpath.ENABLED:  # C parser; None means "not the common case": parse here
        fast = _fastpath.try_parse_records(body, count)
        if fast is not None:
            return fast
    records: list[Record] = []
    pos = 0
    end = len(body)
    try:
        for _ in range(count):
            length, pos = read_varint(body, pos)
            rec_end = pos + length
            if length < 0 or rec_end > end:
                raise CorruptRecordException(f"Record length {length} at position {pos} runs past the end of the batch")
            attributes = body[pos]
            pos += 1
            ts_delta, pos = read_varlong(body, pos)
            offset_delta, pos = read_varint(body, pos)
            key, pos = _read_nullable_bytes(body, pos)
            value, pos = _read_nullable_bytes(body, pos)
            n_headers, pos = read_varint(body, pos)
            headers: tuple[tuple[str, bytes | None], ...] = ()
            if n_headers:
                if n_headers < 0:
                    raise CorruptRecordException(f"Found invalid number of record headers {n_headers}")
                hs = []
                for _ in range(n_headers):
                    hk_len, pos = read_varint(body, pos)
                    if hk_len < 0:
                        raise CorruptRecordException(f"Invalid negative header key size {hk_len}")
                    hk = str(body[pos : pos + hk_len], "utf-8")
                    pos += hk_len
                    hv, pos = _read_nullable_bytes(body, pos)
                    hs.append((hk, hv))
                headers = tuple(hs)
            if pos != rec_end:
                raise CorruptRecordException(
                    f"Invalid record size: expected to read {length} bytes in record payload, but instead read {length + pos - rec_end}"
                )
            records.append(Record(offset_delta, ts_delta, key, value, headers, attributes))
    except (IndexError, VarintError, UnicodeDecodeError):
        raise CorruptRecordException(f"Record {len(records)} of the batch runs past the end of its data") from None
    if pos != end:
        raise CorruptRecordException(f"Found {end - pos} unexpected byte(s) after the {count} record(s) of the batch")
    return records


# ------------------------------------------------------------------------------ building


def encode_record(offset_delta: int, key: bytes | None, value: bytes | None, timestamp_delta: int = 0,
                  headers: Sequence[tuple[str, bytes | None]] = (), attributes: int = 0) -> bytes:
    body = bytearray()
    body.append(attributes)
    body += varint_bytes(timestamp_delta)
    body += varint_bytes(offset_delta)
    if key is None:
        body += b"\x01"
    else:
        body += varint_bytes(len(key))
        body += key
    if value is None:
        body += b"\x01"
    else:
        body += varint_bytes(len(value))
        body += value
    body += varint_bytes(len(headers))
    for hk, hv in headers:
        kb = hk.encode("utf-8")
        body += varint_bytes(len(kb)) + kb
        body += b"\x01" if hv is None else varint_bytes(len(hv)) + hv
    return varint_bytes(len(body)) + bytes(body)


def build_batch_from_records(base_offset: int, records: Sequence[Record], *, epoch: int, base_timestamp: int,
                             max_timestamp: int | None = None, attributes: int = 0, last_offset_delta: int | None = None,
                             producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """Assemble a batch from records; the CRC and length are computed."""
    body = b"".join(
        encode_record(r.offset_delta, r.key, r.value, r.timestamp_delta, r.headers, r.attributes) for r in records
    )
    codec = attributes & COMPRESSION_MASK
    if codec:
        body = compression.compress(codec, body)
    if last_offset_delta is None:
        last_offset_delta = len(records) - 1
    if max_timestamp is None:
        max_timestamp = base_timestamp + max((r.timestamp_delta for r in records), default=0)
    after_crc = struct.pack(
        ">hiqqqhii", attributes, last_offset_delta, base_timestamp, max_timestamp,
        producer_id, producer_epoch, base_sequence, len(records),
    ) + body
    crc = crc32c(after_crc)
    head = struct.pack(">qiibI", base_offset, len(after_crc) + 9, epoch, MAGIC_V2, crc)
    return head + after_crc


def build_batch(base_offset: int, values: Sequence[tuple[bytes | None, bytes | None]], *, epoch: int, timestamp: int,
                control: bool = False, compression_codec: int = 0) -> bytes:
    """A batch as KRaft writes it: one record per (key, value), timestamps all equal."""
    records = [Record(i, 0, k, v, ()) for i, (k, v) in enumerate(values)]
    attributes = (CONTROL_FLAG if control else 0) | compression_codec
    return build_batch_from_records(base_offset, records, epoch=epoch, base_timestamp=timestamp,
                                    max_timestamp=timestamp, attributes=attributes)
