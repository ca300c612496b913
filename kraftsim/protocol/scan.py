"""Walk the batches of a byte buffer, decoding what is valid and collecting every problem.

This is what `kraftsim log verify` and `log dump` stand on. Unlike the plain readers, a
scan does not stop at the first bad batch when the file's framing still holds: a bad CRC
or an undecodable record is reported and the walk goes on to the next batch. It stops
only where the framing itself is lost (a length field below the minimum, a torn tail).

Besides each batch on its own, a scan checks what Kafka's log layer checks across the
batches of a buffer: base offsets follow one another without gap or overlap, a batch's
offset range matches its record count and its records' offsets, leader epochs never go
down, and control batches hold control records while data batches hold metadata records.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator, NamedTuple

from kraftsim.errors import KraftsimError
from kraftsim.protocol.batch import BatchSlice, RecordBatch, TornTail, parse_batch, read_batches, split_batches
from kraftsim.protocol.compression import NAMES as COMPRESSION_NAMES
from kraftsim.protocol.control import encode_control_record, parse_control_key
from kraftsim.protocol.entries import LogEntry, RecordDecodeError, decode_batch
from kraftsim.protocol.framing import encode_metadata_record
from kraftsim.protocol.registry import Registry


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong in a file, located as precisely as the bytes allow."""

    position: int
    base_offset: int | None
    cause: str
    offset: int | None = None  # the record's offset, for record-level problems
    torn: bool = False  # bytes at the end that do not make a whole batch (what a crash mid-write leaves)
    #: offsets or epochs out of sequence in sound batches: kafka-dump-log prints such a file
    #: (noting non-consecutive offsets) and exits 0; `log verify` reports it as a problem
    irregular: bool = False

    def describe(self) -> str:
        where = f"position {self.position}"
        if self.base_offset is not None:
            where = f"batch at offset {self.base_offset} ({where})"
        if self.offset is not None:
            where += f", record at offset {self.offset}"
        return f"{where}: {self.cause}"


class BatchSpan(NamedTuple):
    """Where a batch with a trustworthy header sits and what it covers (for checks across files)."""

    position: int
    base_offset: int
    last_offset: int
    epoch: int
    control_types: tuple[str, ...]  # the decoded record types of a control batch; () for data batches


@dataclass(slots=True)
class ScannedBatch:
    """A batch that passed its size, magic and CRC checks, with its decoded entries."""

    position: int
    batch: RecordBatch
    entries: list[LogEntry]


@dataclass(slots=True)
class ScanReport:
    """What a scan of one buffer found."""

    size: int = 0
    batches: int = 0
    records: int = 0
    control_batches: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    compression: Counter[str] = field(default_factory=Counter)
    first_offset: int | None = None
    next_offset: int | None = None
    valid_bytes: int = 0  # length of the prefix made of whole, valid batches
    problems: list[Problem] = field(default_factory=list)
    first_span: BatchSpan | None = None  # the first and last batch whose header passed its CRC
    last_span: BatchSpan | None = None
    spans: list[BatchSpan] | None = None  # every such batch, when a caller asks by setting it to []
    expected_offset: int | None = None  # the base offset the next batch must have; None after a bad batch
    last_epoch: int | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def scan(data: bytes, registry: Registry, report: ScanReport | None = None, *, reencode: bool = False) -> Iterator[ScannedBatch]:
    """Yield every valid batch of `data`; problems go into `report`.

    With `reencode`, every batch and every record is written again from its decoded form
    and compared with the original bytes.
    """
    report = report if report is not None else ScanReport()
    report.size = len(data)
    return _scan_pieces(split_batches(data), registry, report, reencode)


def scan_file(f: BinaryIO, registry: Registry, report: ScanReport | None = None, *,
              reencode: bool = False) -> Iterator[ScannedBatch]:
    """`scan` of an open file, one batch read at a time: a file of any size costs one batch
    of memory (and a file cut while it is read ends in a torn tail, not a crash)."""
    report = report if report is not None else ScanReport()
    report.size = os.fstat(f.fileno()).st_size
    return _scan_pieces(read_batches(f), registry, report, reencode)


def _scan_pieces(pieces: Iterator[BatchSlice | TornTail], registry: Registry, report: ScanReport,
                 reencode: bool) -> Iterator[ScannedBatch]:
    prefix_ok = True
    try:
        for piece in pieces:
            if not isinstance(piece, BatchSlice):  # (a torn write only where it can start the next batch)
                why = piece.not_a_batch_start(report.expected_offset)
                report.problems.append(Problem(piece.position, piece.base_offset, piece.describe(), torn=True)
                                       if why is None else
                                       Problem(piece.position, piece.base_offset, f"{piece.describe()}, and {why}"))
                return
            problems_before = len(report.problems)
            scanned = _scan_one(piece, registry, report, reencode)
            if scanned is not None:
                yield scanned
            if len(report.problems) != problems_before:
                prefix_ok = False
            if prefix_ok:
                report.valid_bytes = piece.position + len(piece.data)
    except KraftsimError as e:  # framing lost: nothing after this point can be located
        pos = report.valid_bytes if prefix_ok else None
        report.problems.append(Problem(pos if pos is not None else 0, None, str(e)))


def _scan_one(piece: BatchSlice, registry: Registry, report: ScanReport, reencode: bool) -> ScannedBatch | None:
    try:
        batch = parse_batch(piece.data)
    except KraftsimError as e:
        report.problems.append(Problem(piece.position, piece.base_offset, str(e)))
        report.expected_offset = None  # the header cannot be trusted: no sequence check across it
        return None
    for cause in _sequence_problems(batch, report):
        report.problems.append(Problem(piece.position, batch.base_offset, cause, irregular=True))
    span = BatchSpan(piece.position, batch.base_offset, batch.last_offset, batch.partition_leader_epoch, ())
    try:
        entries = decode_batch(batch, registry)
    except KraftsimError as e:
        mixed = _mixed_record_problem(batch)
        if mixed is not None:
            cause, offset = mixed
        elif isinstance(e, RecordDecodeError):
            cause, offset = e.cause, e.offset
        else:
            cause, offset = str(e), None
        report.problems.append(Problem(piece.position, batch.base_offset, cause, offset))
        _add_span(report, span)
        return None
    if len(entries) == batch.records_count:
        for i, entry in enumerate(entries):
            if entry.offset != batch.base_offset + i:
                report.problems.append(Problem(
                    piece.position, batch.base_offset,
                    f"record {i} of the batch has offset delta {entry.offset - batch.base_offset}, expected {i}",
                    entry.offset, irregular=True))
                break
    _add_span(report, span._replace(control_types=tuple(e.type_name for e in entries)) if batch.is_control else span)
    report.batches += 1
    report.control_batches += batch.is_control
    report.records += batch.records_count
    report.compression[COMPRESSION_NAMES.get(batch.compression, str(batch.compression))] += 1
    for entry in entries:
        report.by_type[entry.type_name] += 1
    if report.first_offset is None:
        report.first_offset = batch.base_offset
    report.next_offset = batch.next_offset
    if reencode:
        for cause, offset in _reencode_problems(batch, entries):
            report.problems.append(Problem(piece.position, batch.base_offset, cause, offset))
    return ScannedBatch(piece.position, batch, entries)


def _add_span(report: ScanReport, span: BatchSpan) -> None:
    if report.first_span is None:
        report.first_span = span
    report.last_span = span
    if report.spans is not None:
        report.spans.append(span)


def _sequence_problems(batch: RecordBatch, report: ScanReport) -> Iterator[str]:
    """What is wrong with this batch's offsets and epoch given the batches before it."""
    first, last, count = batch.base_offset, batch.last_offset, batch.records_count
    if count <= 0 or last < first or last - first + 1 != count:
        yield f"offset range [{first}, {last}] does not match its count of {count} record(s)"
    expected = report.expected_offset
    if expected is not None and first != expected:
        if first > expected:
            yield (f"base offset {first} leaves a gap after the previous batch (expected {expected}): "
                   f"offsets {expected}..{first - 1} are missing")
        else:
            yield (f"base offset {first} is not after the previous batch (expected {expected}): "
                   f"a duplicated, reordered or overlapping batch")
    if first < 0:
        yield f"negative base offset {first}"
    epoch = batch.partition_leader_epoch
    if report.last_epoch is not None and epoch < report.last_epoch:
        yield f"leader epoch {epoch} is lower than the previous batch's epoch {report.last_epoch}"
    # One damaged batch should cost one or two problems, not one per batch after it.
    report.expected_offset = max(first, last) + 1
    report.last_epoch = epoch


def _mixed_record_problem(batch: RecordBatch) -> tuple[str, int] | None:
    """A data record in a control batch or a control record in a data batch, with its offset,
    to name what a batch that failed to decode really holds.

    KRaft writes metadata records with a null key and control records with a control key;
    a record of the other kind is what a flipped control attribute looks like."""
    try:
        records = batch.records()
    except KraftsimError:
        return None  # decoding reports it
    for rec in records:
        offset = batch.base_offset + rec.offset_delta
        if batch.is_control and rec.key is None:
            return "a record without a control key in a control batch (control batches hold only control records)", offset
        if not batch.is_control and rec.key is not None:
            try:
                parse_control_key(rec.key)
            except KraftsimError:
                return "a record with a key in a data batch (metadata records have none)", offset
            return "a control record in a data batch (data batches hold only metadata records)", offset
    return None


def _reencode_problems(batch: RecordBatch, entries: list[LogEntry]) -> Iterator[tuple[str, int | None]]:
    records = batch.records()
    by_offset = {e.offset: e for e in entries}
    rebuilt = []
    for rec in records:
        entry = by_offset.get(batch.base_offset + rec.offset_delta)
        value = rec.value
        if entry is not None:
            if entry.control:
                key, value = encode_control_record(entry.record_type, entry.message)
                if key != rec.key:
                    yield "the control record key does not re-encode to the same bytes", entry.offset
            else:
                value = encode_metadata_record(entry.record_type, entry.message, entry.version)
            if value != rec.value:
                yield f"{entry.type_name} v{entry.version} does not re-encode to the same bytes", entry.offset
        rebuilt.append(rec._replace(value=value))
    if batch.compression == 0 and batch.reencode(rebuilt) != batch.raw:
        yield "the batch does not re-encode to the same bytes", None


def verify_bytes(data: bytes, registry: Registry) -> ScanReport:
    """Scan a whole buffer with re-encoding: what `kraftsim log verify` checks per file
    (every batch's span kept, for the checks across files)."""
    report = ScanReport(spans=[])
    for _ in scan(data, registry, report, reencode=True):
        pass
    return report


def verify_file(f: BinaryIO, registry: Registry) -> ScanReport:
    """`verify_bytes` of an open file, one batch read at a time."""
    report = ScanReport(spans=[])
    for _ in scan_file(f, registry, report, reencode=True):
        pass
    return report
