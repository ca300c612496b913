"""`kraftsim export`: metadata files to one Parquet file, streaming.

Records leave each file in Arrow batches and go straight into a Parquet row group, so
memory holds one mapped file and one batch of rows, whatever the number of files. The
output is written to `OUT.part` and renamed at the end: an interrupted export leaves no
half-written file under the final name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from kraftsim.errors import KraftsimError
from kraftsim.image import load_path
from kraftsim.pipeline.discover import find_files, find_states
from kraftsim.pipeline.entities import IMAGE_ENTITIES, entity_rows
from kraftsim.pipeline.records import DEFAULT_BATCH_ROWS, RECORDS, FileRecords, record_batches
from kraftsim.pipeline.schemas import schema
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.versions import Catalog

TABLES = (RECORDS, IMAGE_ENTITIES)


@dataclass
class ExportResult:
    """What an export wrote and what it found wrong in its inputs."""

    output: Path
    table: str
    files: int = 0
    rows: int = 0
    problems: list[str] = field(default_factory=list)  # "PATH: where: cause", as `log dump` prints them


def _writer(out: Path, table: str, compression: str) -> tuple[Path, pq.ParquetWriter]:
    part = out.with_name(out.name + ".part")
    return part, pq.ParquetWriter(part, schema(table), compression=compression)


def _finish(part: Path, out: Path, writer: pq.ParquetWriter, ok: bool) -> None:
    writer.close()
    if ok:
        os.replace(part, out)
    else:
        part.unlink(missing_ok=True)


def export_parquet(paths: Iterable[str | Path], out: str | Path, *, table: str = RECORDS,
                   registry: Registry | None = None, catalog: Catalog | None = None,
                   batch_rows: int = DEFAULT_BATCH_ROWS, compression: str = "zstd", overwrite: bool = False,
                   progress: Callable[[str], None] | None = None) -> ExportResult:
    """Write `table` (records or image_entities) for every file or state below `paths` to `out`."""
    if table not in TABLES:
        raise KraftsimError(f"unknown table {table!r}: choose one of {', '.join(TABLES)}")
    out = Path(out)
    if out.exists() and not overwrite:
        raise KraftsimError(f"{out} already exists (pass --overwrite to replace it)")
    if not out.parent.is_dir():
        raise KraftsimError(f"{out.parent}: no such directory")
    items = find_files(paths) if table == RECORDS else find_states(paths)
    result = ExportResult(out, table)
    part, writer = _writer(out, table, compression)
    ok = False
    try:
        if table == RECORDS:
            reg = registry or default_registry()
            for item in items:
                found = FileRecords(item.path)
                for batch in record_batches(item.path, item.kind, reg, batch_rows=batch_rows, result=found):
                    writer.write_batch(batch)
                result.rows += found.records
                result.problems += [f"{item.path}: {p.describe()}" for p in found.problems]
                result.files += 1
                if progress:
                    progress(f"{item.path}: {found.records} records")
        else:
            sch = schema(IMAGE_ENTITIES)
            for item in items:
                loaded = load_path(item.path, catalog=catalog)
                rows = list(entity_rows(loaded.image, item.path, loaded.end_offset))
                for start in range(0, len(rows), batch_rows):
                    writer.write_batch(pa.RecordBatch.from_pylist(rows[start:start + batch_rows], schema=sch))
                result.rows += len(rows)
                result.files += 1
                if progress:
                    progress(f"{item.path}: {len(rows)} entities")
        ok = True
    finally:
        _finish(part, out, writer, ok)
    return result

