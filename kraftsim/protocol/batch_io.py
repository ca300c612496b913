"""Whole-buffer batch reading and writing, on the fast path where it applies.

The readers and writers for files made of many small batches (a metadata log is mostly
one-record batches; snapshots are many records per batch): `read_log_entries`,
`iter_log_entries`, `encode_batches`, plus drop-ins with the signatures of the hooked
pure functions. They sit above batch.py, entries.py and framing.py, which in turn only
use fastpath.py's `try_*` hooks, so the protocol package has no import cycle.
"""

from __future__ import annotations

from typing import Generator, NamedTuple, Sequence, cast

from kraftsim.protocol import batch, entries, framing
from kraftsim.protocol import fastpath as _fp
from kraftsim.protocol.fastpath import _c
from kraftsim.protocol.batch import Record, RecordBatch, TornTail, parse_batch, split_batches
from kraftsim.protocol.entries import LogEntry, Payload
from kraftsim.protocol.framing import MetadataRecord
from kraftsim.protocol.registry import Registry

# ----------------------------------------------------------------------------- drop-ins
# The hooked functions themselves: each tries its fastpath.try_* first, then the pure code.


def parse_records(body: bytes, count: int) -> list[Record]:
    """Drop-in for batch.parse_records."""
    return batch.parse_records(body, count)


def decode_batch(batch: RecordBatch, registry: Registry) -> list[LogEntry]:
    """Drop-in for entries.decode_batch."""
    return entries.decode_batch(batch, registry)


def decode_metadata_record(registry: Registry, value: bytes) -> MetadataRecord:
    """Drop-in for framing.decode_metadata_record."""
    return framing.decode_metadata_record(registry, value)


def encode_values(payloads: Sequence[Payload]) -> list[bytes]:
    """The framed metadata record value of every payload (record_type, version, message)."""
    values = _fp.try_encode_values(payloads)
    if values is None:
        values = [framing.encode_metadata_record(p.record_type, p.message, p.version) for p in payloads]
    return values


def encode_data_batch(base_offset: int, payloads: Sequence[Payload], *, epoch: int, timestamp: int) -> bytes:
    """Drop-in for entries.encode_data_batch."""
    return entries.encode_data_batch(base_offset, payloads, epoch=epoch, timestamp=timestamp)


def encode_value_batch(base_offset: int, values: Sequence[bytes], *, epoch: int, timestamp: int) -> bytes:
    """`encode_data_batch` of payloads whose framed values (`encode_values`) are `values`,
    byte for byte, without encoding any message again: a writer that already holds the
    values (to size its batches, or from an earlier write) frames them only."""
    fast = _fp.try_encode_value_batch(base_offset, values, epoch, timestamp)
    if fast is not None:
        return fast
    return batch.build_batch(base_offset, [(None, v) for v in values], epoch=epoch, timestamp=timestamp)


class BatchToWrite(NamedTuple):
    """One batch for `encode_batches`."""

    base_offset: int
    epoch: int
    timestamp: int
    control: bool
    payloads: Sequence[Payload]


def encode_batches(batches: Sequence[BatchToWrite]) -> list[bytes]:
    """The bytes of many batches (e.g. every batch of a segment or snapshot) in one call.

    Item for item the same as `encode_control_batch(...)` for control batches and
    `encode_data_batch(...)` for data batches (entries.py): data batches are written in C
    without returning to Python between them; control batches, and any batch the C encoder
    gives up on, are written by entries.py.
    """
    if not isinstance(batches, list):
        batches = list(batches)
    out: list[bytes | None]
    todo: Sequence[int]
    if _fp.ENABLED:
        out, todo = _c.encode_batches(batches, _fp._resolve)
    else:
        out, todo = [None] * len(batches), range(len(batches))
    for i in todo:
        base_offset, epoch, timestamp, control, payloads = batches[i]
        encode = entries.encode_control_batch if control else entries.encode_data_batch
        out[i] = encode(base_offset, payloads, epoch=epoch, timestamp=timestamp)
    return cast("list[bytes]", out)  # every None was filled in above


def _decode_from(data: bytes, registry: Registry, pos: int, out: list[LogEntry], min_records: int | None) -> tuple[int, TornTail | None]:
    """Append the entries of whole batches from `pos` to `out`, to the end of the data or,
    with `min_records`, until at least that many were appended.

    Returns (the position after the last batch read, the TornTail that ended the data or
    None). Uncompressed data batches are decoded in C without leaving it; every other
    batch (control, compressed, invalid) goes through the pure-Python functions, one
    batch at a time.
    """
    end = len(data)
    first = len(out)
    table = None
    while pos < end:
        if _fp.ENABLED:
            if table is None:
                table = _fp.decode_table(registry)
            wanted = -1 if min_records is None else min_records - (len(out) - first)
            pos = _c.decode_log(data, pos, table, out, wanted)
            if pos >= end or (min_records is not None and len(out) - first >= min_records):
                break
        piece = next(split_batches(data, pos))
        if isinstance(piece, TornTail):
            return pos, piece
        out += entries.decode_batch(parse_batch(piece.data), registry)
        pos += len(piece.data)
        if min_records is not None and len(out) - first >= min_records:
            break
    return pos, None


def read_log_entries(data: bytes, registry: Registry, start: int = 0) -> tuple[list[LogEntry], TornTail | None]:
    """Decode every batch of a segment or snapshot's bytes from `start`.

    Same entries, in the same order, and the same exceptions as::

        for piece in split_batches(data, start):
            if isinstance(piece, TornTail): return entries, piece
            entries += entries.decode_batch(parse_batch(piece.data), registry)

    Returns (entries, the TornTail that ended the data or None). Uncompressed data batches
    are decoded in C without leaving it; every other batch (control, compressed, invalid)
    goes through those pure-Python functions, one batch at a time.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    out: list[LogEntry] = []
    _, tail = _decode_from(data, registry, start, out, None)
    return out, tail


def iter_log_entries(
    data: bytes, registry: Registry, start: int = 0, *, chunk: int = 1024
) -> Generator[list[LogEntry], None, TornTail | None]:
    """The entries of `read_log_entries(data, registry, start)`, a list at a time.

    For readers that apply records as they go (a loader replaying a snapshot into an
    image) and need not hold them all: each list holds the entries of whole batches, at
    least `chunk` of them except for the last list, so memory stays bounded by the chunk
    while the per-call overhead stays small. Errors are raised when the batch holding
    them is reached, after the lists before it were yielded. A torn tail ends the
    iteration; the generator's return value (`StopIteration.value`, or the result of
    `yield from`) is that TornTail, or None when the data ended cleanly.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, not {chunk}")
    if not isinstance(data, bytes):
        data = bytes(data)
    pos = start
    while pos < len(data):
        out: list[LogEntry] = []
        pos, tail = _decode_from(data, registry, pos, out, chunk)
        if out:
            yield out
        if tail is not None:
            return tail
    return None
