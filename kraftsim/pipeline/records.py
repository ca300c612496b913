"""Metadata files as rows of the `records` schema, a bounded number of rows at a time.

A row is exactly what `kraftsim log dump --json` prints for the record (offset, epoch,
control, type, version and the `data` object, here as JSON text), plus where it sits and
its main key fields flattened so that queries need not parse the JSON. Files are read a
batch at a time, and rows leave in Arrow batches of at most `batch_rows`, so memory stays
bounded however large the input.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa

from kraftsim.protocol.batch import RecordBatch
from kraftsim.protocol.entries import LogEntry
from kraftsim.protocol.registry import Registry
from kraftsim.protocol.scan import Problem, ScanReport, scan_file
from kraftsim.pipeline.schemas import schema
from kraftsim.regular_file import opened_file

RECORDS = "records"
DEFAULT_BATCH_ROWS = 32_768

# Key columns: (column, message field, the record types it is taken from; None: any metadata record with the field).
KEY_COLUMNS: tuple[tuple[str, str, frozenset[str] | None], ...] = (
    ("feature_name", "name", frozenset({"FeatureLevelRecord"})),
    ("feature_level", "feature_level", frozenset({"FeatureLevelRecord"})),
    ("broker_id", "broker_id", None),
    ("topic_id", "topic_id", None),
    ("topic_name", "name", frozenset({"TopicRecord"})),
    ("partition_id", "partition_id", frozenset({"PartitionRecord", "PartitionChangeRecord"})),
    ("config_resource_type", "resource_type", frozenset({"ConfigRecord"})),
    ("config_resource_name", "resource_name", frozenset({"ConfigRecord"})),
)


def key_fields(entry: LogEntry) -> dict[str, object]:
    """The flattened key columns of one record (all None for control records)."""
    out: dict[str, object] = {}
    msg = entry.message
    name = entry.record_type.name
    for column, attr, types in KEY_COLUMNS:
        value = None
        if not entry.control and (types is None or name in types):
            value = getattr(msg, attr, None)
            if column == "topic_id" and value is not None:
                value = str(value)
        out[column] = value
    return out


def encoded_sizes(batch: RecordBatch) -> dict[int, int]:
    """The encoded size of each record's value in a batch, by offset."""
    return {batch.base_offset + r.offset_delta: len(r.value or b"") for r in batch.records()}


def record_row(source: str, file_kind: str, position: int, entry: LogEntry, encoded_size: int) -> dict[str, object]:
    j = entry.to_json()
    row = {"source": source, "file_kind": file_kind, "position": position, "offset": entry.offset,
           "epoch": entry.epoch, "timestamp": entry.timestamp, "control": entry.control, "type": j["type"],
           "version": entry.version, "encoded_size": encoded_size}
    row.update(key_fields(entry))
    row["data"] = json.dumps(j["data"], ensure_ascii=False, separators=(",", ":"))
    return row


@dataclass
class FileRecords:
    """What reading one file's records found besides the rows."""

    path: str
    records: int = 0
    problems: list[Problem] = field(default_factory=list)
    report: ScanReport | None = None  # the file's scan, for the checks that need its first and last batches


def record_batches(path: str | Path, file_kind: str, registry: Registry, *, source: str | None = None,
                   batch_rows: int = DEFAULT_BATCH_ROWS, result: FileRecords | None = None,
                   stop_at_damage: bool = False) -> Iterator[pa.RecordBatch]:
    """The records of one file as `records` batches. Problems (as `log dump` reports them)
    go into `result`; the valid batches around them are still read, or with
    `stop_at_damage` none from the first problem on."""
    p = Path(path)
    result = result if result is not None else FileRecords(str(p))
    sch = schema(RECORDS)
    src = source if source is not None else str(p)
    rows: list[dict[str, object]] = []
    report = ScanReport()
    with opened_file(p) as f:
        for scanned in scan_file(f, registry, report):
            if stop_at_damage and report.problems:
                break
            sizes = encoded_sizes(scanned.batch)
            for entry in scanned.entries:
                rows.append(record_row(src, file_kind, scanned.position, entry, sizes[entry.offset]))
            if len(rows) >= batch_rows:
                result.records += len(rows)
                yield pa.RecordBatch.from_pylist(rows, schema=sch)
                rows = []
    if rows:
        result.records += len(rows)
        yield pa.RecordBatch.from_pylist(rows, schema=sch)
    result.problems.extend(report.problems)
    result.report = report


def dump_object(row: dict[str, Any]) -> dict[str, Any]:
    """A `records` row back as the object `kraftsim log dump --json` prints."""
    return {"offset": row["offset"], "epoch": row["epoch"], "control": row["control"], "type": row["type"],
            "version": row["version"], "data": json.loads(row["data"])}
