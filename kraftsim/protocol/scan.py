"""Walk the batches of a byte buffer, decoding what is valid and collecting every problem.

This is what `kraftsim log verify` and `log dump` stand on. Unlike the plain readers, a
scan does not stop at the first bad batch when the file's framing still holds: a bad CRC
or an undecodable record is reported and the walk goes on to the next batch. It stops
only where the framing itself is lost (a length field below the minimum, a torn tail).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

from kraftsim.errors import KraftsimError
from kraftsim.protocol.batch import BatchSlice, RecordBatch, parse_batch, split_batches
from kraftsim.protocol.compression import NAMES as COMPRESSION_NAMES
from kraftsim.protocol.control import encode_control_record
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

    def describe(self) -> str:
        where = f"position {self.position}"
        if self.base_offset is not None:
            where = f"batch at offset {self.base_offset} ({where})"
        if self.offset is not None:
            where += f", record at offset {self.offset}"
        return f"{where}: {self.cause}"


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
    by_type: Counter = field(default_factory=Counter)
    compression: Counter = field(default_factory=Counter)
    first_offset: int | None = None
    next_offset: int | None = None
    valid_bytes: int = 0  # length of the prefix made of whole, valid batches
    problems: list[Problem] = field(default_factory=list)

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
    prefix_ok = True
    try:
        for piece in split_batches(data):
            if not isinstance(piece, BatchSlice):
                report.problems.append(Problem(piece.position, piece.base_offset, piece.describe()))
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
        return None
    try:
        entries = decode_batch(batch, registry)
    except RecordDecodeError as e:
        report.problems.append(Problem(piece.position, batch.base_offset, e.cause, e.offset))
        return None
    except KraftsimError as e:
        report.problems.append(Problem(piece.position, batch.base_offset, str(e)))
        return None
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
    """Scan a whole buffer with re-encoding: what `kraftsim log verify` checks per file."""
    report = ScanReport()
    for _ in scan(data, registry, report, reencode=True):
        pass
    return report
