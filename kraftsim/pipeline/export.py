"""`kraftsim export`: metadata files to one Parquet file, streaming.

Records leave each file in Arrow batches and go straight into a Parquet row group, so
memory holds one batch of a file and one batch of rows, whatever the number of files. The
output is written to `OUT.part` and renamed at the end: an interrupted export leaves no
half-written file under the final name.

A damaged input is never exported as if it were whole (storage/damage.py): a torn last
batch of a log is left out as Kafka's recovery cuts it, and said so; any other problem
stops the export with an error, or with `up_to_damage` that file's records stop below the
damage and the result says it is partial and where.
"""

from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from kraftsim.errors import KraftsimError, UsageError
from kraftsim.image import load_path
from kraftsim.pipeline.discover import find_files, find_states
from kraftsim.pipeline.entities import IMAGE_ENTITIES, entity_rows
from kraftsim.pipeline.records import DEFAULT_BATCH_ROWS, RECORDS, FileRecords, record_batches
from kraftsim.pipeline.schemas import schema
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.protocol.scan import Problem
from kraftsim.storage.checks import file_problems
from kraftsim.storage.damage import UP_TO_DAMAGE_HINT
from kraftsim.storage.recovery import Damage
from kraftsim.storage.names import PathKind, parse_segment_name
from kraftsim.versions import Catalog

_KINDS = {"segment": PathKind.SEGMENT, "snapshot": PathKind.SNAPSHOT, "bootstrap": PathKind.BOOTSTRAP}

TABLES = (RECORDS, IMAGE_ENTITIES)


@dataclass
class ExportResult:
    """What an export wrote and what it found wrong in its inputs."""

    output: Path
    table: str
    files: int = 0
    rows: int = 0
    problems: list[str] = field(default_factory=list)  # "PATH: where: cause", as `log dump` prints them
    recovery: list[str] = field(default_factory=list)  # torn tails left out, one line each
    partial: list[str] = field(default_factory=list)  # with up_to_damage: where each damaged file's rows stop


def _writer(out: Path, table: str, compression: str) -> tuple[Path, pq.ParquetWriter]:
    part = out.with_name(out.name + ".part")
    try:
        # (created here first: Arrow's own error wraps the system's text in its own words)
        os.close(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666))
        return part, pq.ParquetWriter(part, schema(table), compression=compression)
    except OSError as e:
        with suppress(OSError):
            part.unlink(missing_ok=True)
        raise KraftsimError(f"cannot write {out}: {e.strerror or e}") from None


def _finish(part: Path, out: Path, writer: pq.ParquetWriter, ok: bool) -> None:
    """Close the writer and move the finished file into place; on any failure no `.part` stays."""
    try:
        writer.close()
        if ok:
            os.replace(part, out)
    except OSError as e:
        part.unlink(missing_ok=True)
        raise KraftsimError(f"cannot write {out}: {e.strerror or e}") from None
    finally:
        if not ok:
            part.unlink(missing_ok=True)


def export_parquet(paths: Iterable[str | Path], out: str | Path, *, table: str = RECORDS,
                   registry: Registry | None = None, catalog: Catalog | None = None,
                   batch_rows: int = DEFAULT_BATCH_ROWS, compression: str = "zstd", overwrite: bool = False,
                   progress: Callable[[str], None] | None = None, up_to_damage: bool = False) -> ExportResult:
    """Write `table` (records or image_entities) for every file or state below `paths` to `out`.
    A damaged input raises KraftsimError (nothing is written) unless `up_to_damage`."""
    if table not in TABLES:
        raise UsageError(f"unknown table {table!r}: choose one of {', '.join(TABLES)}")
    out = Path(out)
    if out.is_dir():
        raise UsageError(f"{out} is a directory: name the Parquet file to write")
    if out.exists() and not out.is_file():  # (a FIFO or device: replacing it is never what was meant)
        raise UsageError(f"{out}: not a regular file: name a Parquet file to write (--overwrite replaces only files)")
    if out.exists() and not overwrite:
        raise KraftsimError(f"{out} already exists (pass --overwrite to replace it)")
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent}: no such directory")
    items = find_files(paths) if table == RECORDS else find_states(paths)
    result = ExportResult(out, table)
    part, writer = _writer(out, table, compression)
    ok = False
    try:
        if table == RECORDS:
            reg = registry or default_registry()
            for item in items:
                found = FileRecords(item.path)
                for batch in record_batches(item.path, item.kind, reg, batch_rows=batch_rows, result=found,
                                            stop_at_damage=up_to_damage):
                    writer.write_batch(batch)
                result.rows += found.records
                _judge(item.path, item.kind, found, result, up_to_damage)
                result.files += 1
                if progress:
                    progress(f"{item.path}: {found.records} records")
        else:
            sch = schema(IMAGE_ENTITIES)
            for item in items:
                loaded = load_path(item.path, catalog=catalog, up_to_damage=up_to_damage)  # refuses a damaged log
                if loaded.recovered is not None:
                    result.recovery.append(f"{item.path}: {loaded.recovered}")
                if loaded.partial is not None:
                    result.partial.append(f"{item.path}: {loaded.partial}")
                rows = list(entity_rows(loaded.image, item.path, loaded.end_offset))
                for start in range(0, len(rows), batch_rows):
                    writer.write_batch(pa.RecordBatch.from_pylist(rows[start:start + batch_rows], schema=sch))
                result.rows += len(rows)
                result.files += 1
                if progress:
                    progress(f"{item.path}: {len(rows)} entities")
        ok = True
    except OSError as e:  # the disk, not the input: say so in one line, leave no `.part`
        raise KraftsimError(f"cannot write {part}: {e.strerror or e}") from None
    finally:
        _finish(part, out, writer, ok)
    return result



def _judge(path: str, kind: str, found: FileRecords, result: ExportResult, up_to_damage: bool) -> None:
    """Sort one file's problems into recovery (a torn last batch of a log) and damage, which
    stops the export or, with up_to_damage, is recorded as where the file's rows stop."""
    p = Path(path)
    problems = found.problems + (file_problems(_KINDS[kind], p, found.report) if found.report is not None else [])
    torn = [x for x in problems if x.torn and kind == "segment" and _last_segment(p)]
    damage = sorted((x for x in problems if x not in torn), key=lambda x: x.position)
    for x in torn:
        result.recovery.append(f"{path}: the torn last batch at position {x.position} is left out, as Kafka's "
                               f"recovery cuts it: {x.cause}")
    if not damage:
        return
    first = damage[0]
    stop = _stop_offset(first, found)
    said = Damage(stop, f"{path} position {first.position}", first.cause).describe()
    more = f" (and {len(damage) - 1} more problem(s))" if len(damage) > 1 else ""
    if not up_to_damage:
        raise KraftsimError(f"{said}{more}: {UP_TO_DAMAGE_HINT}")
    result.problems += [f"{path}: {x.describe()}" for x in damage]
    result.partial.append(f"exported the records of {path} below offset {stop} only (--up-to-damage); damage from "
                          f"there on: {said}")


def _stop_offset(first: Problem, found: FileRecords) -> int:
    report = found.report
    if first.base_offset is not None and first.base_offset >= 0:
        return first.base_offset
    return report.next_offset if report is not None and report.next_offset is not None else 0


def _last_segment(path: Path) -> bool:
    """Whether no segment with a higher base offset sits beside this one (a torn tail is
    recovery only at the end of the log)."""
    base = parse_segment_name(path.name)
    if base is None:
        return True
    return not any((b := parse_segment_name(q.name)) is not None and b > base for q in path.parent.iterdir())
