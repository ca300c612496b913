"""Files made of whole record batches: snapshots and bootstrap.checkpoint.

Writing follows Kafka's raft BatchAccumulator exactly, because batch boundaries and
timestamps are part of the bytes: every `append` (a list of records) lands in one batch;
appends are merged into the open batch while the batch stays within the size limit
(8 MiB); a control batch first closes the open data batch. Each batch takes its
timestamp from the clock when it is started, as Kafka's BatchBuilder does. Readers
check every batch and name the file, batch offset and file position of any problem.
"""

from __future__ import annotations

from collections import Counter
from typing import BinaryIO, Callable, Iterator, NamedTuple, Sequence, TypeVar

from kraftsim.errors import CorruptRecordException, KraftsimError, LogFileError
from kraftsim.protocol.batch import (
    RECORD_BATCH_OVERHEAD, BatchSlice, CorruptBatchLength, RecordBatch, TornTail, parse_batch, read_batches, split_batches,
)
from kraftsim.protocol.entries import (
    LogEntry, Payload, PrebuiltPartition, decode_batch, decode_batch_prebuilt, encode_control_batch,
)
from kraftsim.protocol.batch_io import encode_value_batch, encode_values
from kraftsim.protocol.fastpath import try_values_records_size
from kraftsim.protocol.primitives import uvarint_size
from kraftsim.protocol.registry import Registry, default_registry

# KafkaRaftClient.MAX_BATCH_SIZE_BYTES: the cap on one batch of the metadata log and of snapshots.
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024

Clock = Callable[[], int]
"""Milliseconds since the epoch, asked once per batch as it is started."""


def as_clock(time_ms: int | Clock) -> Clock:
    """A clock from a fixed timestamp (every batch gets it) or from a callable."""
    if callable(time_ms):
        return time_ms
    fixed = int(time_ms)
    return lambda: fixed


def replay_clock(timestamps: Sequence[int]) -> Clock:
    """A clock that returns the given timestamps in order (to rewrite a file exactly)."""
    it = iter(timestamps)

    def clock() -> int:
        try:
            return next(it)
        except StopIteration:
            raise KraftsimError(f"replay clock ran out after {len(timestamps)} timestamp(s)") from None

    return clock


class RecordBatchTooLarge(KraftsimError):
    """One append does not fit in a batch (Kafka's RecordBatchTooLargeException)."""


def _delta_size_runs(start: int, stop: int) -> Iterator[tuple[int, int, int]]:
    """(from, to, bytes) runs of offset deltas in [start, stop) whose zig-zag varint has that many bytes."""
    lo, size, bound = start, 1, 64
    while lo < stop:
        while lo >= bound:
            size, bound = size + 1, bound * 128
        hi = min(stop, bound)
        yield lo, hi, size
        lo = hi


def records_size(lengths: Sequence[int], first_delta: int) -> int:
    """Bytes of v2 records as raft writes them (attributes 0, timestamp delta 0, key null, no
    headers) with these value lengths at offset deltas first_delta, first_delta + 1, ...

    One record's body is 4 bytes (attributes, timestamp delta, key length, header count) +
    its offset delta's zig-zag varint + its value's length varint + the value, behind its
    own length varint. Summed by distinct value length within each run of deltas whose
    varint has one size (a snapshot's records have few lengths)."""
    total = 0
    for lo, hi, delta_bytes in _delta_size_runs(first_delta, first_delta + len(lengths)):
        for length, count in Counter(lengths[lo - first_delta:hi - first_delta]).items():
            body = 4 + delta_bytes + uvarint_size(length << 1) + length
            total += count * (uvarint_size(body << 1) + body)
    return total


def values_size(values: Sequence[bytes], first_delta: int) -> int:
    """`records_size` of these framed values' lengths (in C when it is built)."""
    size = try_values_records_size(values, first_delta)
    return size if size is not None else records_size(list(map(len, values)), first_delta)


class BatchAccumulator:
    """Forms the batches of one file the way Kafka's BatchAccumulator does.

    Completed batches are handed out by `drain()` so a writer can stream them to disk.
    """

    def __init__(self, *, epoch: int, clock: Clock, base_offset: int = 0,
                 max_batch_bytes: int = MAX_BATCH_SIZE_BYTES):
        self.epoch = epoch
        self.clock = clock
        self.next_offset = base_offset
        self.max_batch_bytes = max_batch_bytes
        self._completed: list[bytes] = []
        self._values: list[bytes] = []  # framed values of the open data batch's records
        self._base = base_offset
        self._size = 0
        self._timestamp = 0

    def append(self, payloads: Sequence[Payload]) -> None:
        """Append metadata records that must share one batch (one Kafka `append` call)."""
        if not payloads:
            return
        for p in payloads:
            if p.record_type.schema.kind != "metadata":
                raise KraftsimError(f"{p.record_type.name} is a control record: only metadata records go in data batches")
        self.append_values(encode_values(payloads))

    def append_values(self, values: Sequence[bytes]) -> None:
        """`append` of metadata records already encoded: their framed values, as
        `encode_values` gives them. The values decide the batch boundaries (by their sizes)
        and are what the batch is built from when it is complete, so no record is encoded
        twice, and a writer that kept the values of an earlier write encodes nothing."""
        if not values:
            return
        if self._values:
            needed = values_size(values, len(self._values))
            if self.max_batch_bytes - self._size >= needed:  # joins the open batch
                self._size += needed
                self._values.extend(values)
                self.next_offset += len(values)
                return
        fresh = RECORD_BATCH_OVERHEAD + values_size(values, 0)
        if fresh > self.max_batch_bytes:
            raise RecordBatchTooLarge(
                f"The total record(s) size of {fresh} exceeds the maximum allowed batch size of {self.max_batch_bytes}"
            )
        self._complete_open()
        self._base = self.next_offset
        self._size = fresh
        self._timestamp = self.clock()
        self._values.extend(values)
        self.next_offset += len(values)

    def _complete_open(self) -> None:
        if self._values:
            self._completed.append(encode_value_batch(self._base, self._values, epoch=self.epoch,
                                                      timestamp=self._timestamp))
            self._values = []
            self._size = 0

    def append_control(self, payloads: Sequence[Payload], timestamp: int | None = None) -> None:
        """Close the open data batch, then add one control batch (header, footer, ...)."""
        if not payloads:
            raise ValueError("a control batch needs at least one record")
        ts = self.clock() if timestamp is None else timestamp
        self._complete_open()
        self._completed.append(encode_control_batch(self.next_offset, payloads, epoch=self.epoch, timestamp=ts))
        self.next_offset += len(payloads)

    def drain(self, *, force: bool = False) -> list[bytes]:
        """Completed batches since the last drain; with `force`, the open batch too."""
        if force:
            self._complete_open()
        out, self._completed = self._completed, []
        return out


# ------------------------------------------------------------------------------ reading


class FileBatch(NamedTuple):
    """One checked batch of a file, with where it sits."""

    path: str
    position: int
    batch: RecordBatch


def iter_file_batches(path: str, data: bytes, *, check_crc: bool = True) -> Iterator[FileBatch]:
    """Every batch of `data` (the bytes of `path`), checked; the first problem raises LogFileError.

    A torn tail is a problem too: a reader must never take a cut file for a whole one.
    """
    return _checked_batches(path, split_batches(data), check_crc)


def stream_file_batches(path: str, f: BinaryIO, *, check_crc: bool = True) -> Iterator[FileBatch]:
    """`iter_file_batches` over an open file, from its start, one batch in memory at a time
    (protocol.batch.read_batches: a large file is never held whole, a length field is never
    trusted beyond the file's size). The same checks and errors, with the same positions."""
    return _checked_batches(path, read_batches(f), check_crc)


def _checked_batches(path: str, pieces: Iterator[BatchSlice | TornTail], check_crc: bool) -> Iterator[FileBatch]:
    """Each piece of a file parsed and checked as a batch; a torn tail, a corrupt length
    field or a batch that fails its checks raises LogFileError naming the file, the batch's
    base offset and its position."""
    try:
        for piece in pieces:
            if not isinstance(piece, BatchSlice):
                raise LogFileError(path, piece.base_offset, piece.describe(), piece.position)
            try:
                batch = parse_batch(piece.data, check_crc=check_crc)
            except CorruptRecordException as e:
                raise LogFileError(path, piece.base_offset, str(e), piece.position) from None
            yield FileBatch(path, piece.position, batch)
    except CorruptBatchLength as e:
        raise LogFileError(path, e.base_offset, str(e), e.position) from None


def decode_file_batch(fb: FileBatch, registry: Registry | None = None) -> list[LogEntry]:
    """The entries of one batch; a record that cannot be decoded raises LogFileError."""
    return _decoded(decode_batch, fb, registry)


def decode_file_batch_prebuilt(fb: FileBatch, registry: Registry | None = None) -> list[LogEntry | PrebuiltPartition]:
    """decode_file_batch for a loader replaying a snapshot (entries.decode_batch_prebuilt)."""
    return _decoded(decode_batch_prebuilt, fb, registry)


_Decoded = TypeVar("_Decoded")


def _decoded(decode: Callable[[RecordBatch, Registry], _Decoded], fb: FileBatch, registry: Registry | None) -> _Decoded:
    try:
        return decode(fb.batch, registry or default_registry())
    except KraftsimError as e:
        raise LogFileError(fb.path, fb.batch.base_offset, str(e), fb.position) from None
