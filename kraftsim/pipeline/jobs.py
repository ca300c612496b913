"""The pipeline's jobs — corpus, downgrade-matrix, snapshot-cost — on Spark or in one process.

A `Job` names its input rows, its row function, its output schema, how its Parquet is
partitioned and how its summary table reads. `run_spark` fans the row function out over
Spark and writes partitioned Parquet; `run_local` does the same work in this process (the
reference the Spark results are checked against) and writes the same layout with pyarrow.
Both print nothing themselves: they return a `JobRun` whose `summary_text` the CLI prints.

Output folders: Parquet partitioned Hive-style (`set=.../part-*.parquet`), plus
`_kraftsim_schema.json` naming the schema and version (readers skip files starting with
`_`). An existing folder is replaced only when it is empty, holds an earlier output of the
same schema, or `overwrite` is given.
"""

from __future__ import annotations

import functools
import json
import shutil
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kraftsim import jsoninput
from kraftsim.errors import KraftsimError
from kraftsim.pipeline.corpus import CORPUS, corpus_inputs, corpus_row
from kraftsim.pipeline.downgrade import DOWNGRADE, downgrade_inputs, downgrade_rows
from kraftsim.pipeline.fanout import fan_out, partition_count, run_local as run_rows_local
from kraftsim.pipeline.report import text_table
from kraftsim.pipeline.schemas import field_specs, schema, schema_version
from kraftsim.pipeline.snapshot_cost import SNAPSHOT_COST, default_grid, grid_points, snapshot_cost_row

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SIDECAR = "_kraftsim_schema.json"


#: A job's summary: its table's rows, and (key, heading) of each column shown.
Summary = tuple[list[dict[str, object]], list[tuple[str, str]]]


@dataclass(frozen=True)
class Job:
    name: str  # as on the command line
    schema: str
    row_function: Callable[..., list[dict[str, object]]]
    partition_by: tuple[str, ...]
    sort_by: tuple[str, ...]  # a total order of the output rows
    weight: Callable[[dict[str, Any]], float]
    summarize: Callable[[list[dict[str, object]]], Summary]


@dataclass
class JobRun:
    """What one run of a job did."""

    job: str
    output: str | None
    rows: int
    summary: list[dict[str, object]]
    summary_text: str
    elapsed_s: float
    engine: str  # "local" or the Spark master
    partitions: int | None = None  # Spark tasks the work was spread over


# ----------------------------------------------------------------------------- summaries


def _corpus_summary(rows: list[dict[str, Any]]) -> Summary:
    groups: dict[str, list[dict[str, object]]] = defaultdict(list)
    for r in rows:
        groups[r["set"]].append(r)

    def line(name: str, rs: list[dict[str, Any]]) -> dict[str, Any]:
        mvs = sorted({r["metadata_version_name"] for r in rs if r["metadata_version_name"]})
        if len(mvs) > 3:
            mvs = [f"{len(mvs)} versions ({mvs[0]} .. {mvs[-1]})"]
        kinds: defaultdict[str, int] = defaultdict(int)
        for r in rs:
            kinds[r["kind"]] += 1
        bad = sum(r["verdict"] != "ok" for r in rs)
        return {"set": name, "files": len(rs), "segments": kinds["segment"], "snapshots": kinds["snapshot"],
                "bootstrap": kinds["bootstrap"], "records": sum(r["records"] for r in rs),
                "mib": sum(r["bytes"] for r in rs) / 2**20, "mv": ", ".join(mvs) or "-",
                "verified": "ok" if not bad else f"{bad} with problems"}

    out = [line(name, groups[name]) for name in sorted(groups)]
    if len(out) > 1:
        out.append(line("(all)", rows))
    cols = [("set", "set"), ("files", "files"), ("segments", "segments"), ("snapshots", "snapshots"),
            ("bootstrap", "bootstrap"), ("records", "records"), ("mib", "MiB"), ("mv", "metadata.version"),
            ("verified", "verified")]
    return out, cols


def _downgrade_summary(rows: list[dict[str, Any]]) -> Summary:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r["state"]].append(r)
    out = []
    for state in sorted(groups):
        rs = sorted((r for r in groups[state] if r["target_mv"] is not None), key=lambda r: -r["target_mv"])
        first = groups[state][0]
        errors = [r for r in groups[state] if r["verdict"] == "error"]
        floor = None
        for r in rs:  # highest target first: the lowest target reachable without losing anything
            if r["verdict"] != "lossless":
                break
            floor = r["target_mv_name"]
        lowest = rs[-1] if rs else None
        kinds = sorted({x["kind"] for x in lowest["losses"]}) if lowest else []
        out.append({"state": state, "kind": first["state_kind"], "mv": first["source_mv_name"],
                    "targets": len(rs), "lossless": sum(r["verdict"] == "lossless" for r in rs),
                    "lossy": sum(r["verdict"] == "lossy" for r in rs),
                    "floor": floor or "-",
                    "lowest": (f"{lowest['target_mv_name']}: " + (", ".join(kinds) if kinds else "nothing lost"))
                    if lowest else "-",
                    "note": "; ".join(r["error"] for r in errors)[:80] if errors else ""})
    cols = [("state", "state"), ("kind", "kind"), ("mv", "MV"), ("targets", "lower MVs"),
            ("lossless", "lossless"), ("lossy", "lossy"), ("floor", "lossless down to"),
            ("lowest", "at the lowest MV, lost"), ("note", "error")]
    if not any(o["note"] for o in out):
        cols = cols[:-1]
    return out, cols


def _snapshot_cost_summary(rows: list[dict[str, Any]]) -> Summary:
    out = []
    for r in rows:
        out.append({"topics": r["topics"], "ppt": r["partitions_per_topic"], "rf": r["replication_factor"],
                    "brokers": r["brokers"], "mv": r["metadata_version_name"], "records": r["records"],
                    "kib": None if r["bytes"] is None else r["bytes"] / 1024,
                    "bpp": r["bytes_per_partition"],
                    "write_ms": None if r["write_s"] is None else r["write_s"] * 1000,
                    "load_ms": None if r["load_s"] is None else r["load_s"] * 1000,
                    "peak_mib": None if r["peak_memory_bytes"] is None else r["peak_memory_bytes"] / 2**20,
                    "kafka_load_ms": None if r.get("kafka_load_warm_s") is None else r["kafka_load_warm_s"] * 1000,
                    "verdict": r["verdict"] if r["verdict"] != "error" else f"error: {r['error']}"})
    cols = [("topics", "topics"), ("ppt", "partitions/topic"), ("rf", "RF"), ("brokers", "brokers"), ("mv", "MV"),
            ("records", "records"), ("kib", "KiB"), ("bpp", "bytes/partition"), ("write_ms", "write ms"),
            ("load_ms", "load ms"), ("peak_mib", "peak MiB"), ("verdict", "verdict")]
    if any(o["kafka_load_ms"] is not None for o in out):  # --with-kafka: Kafka's warm load beside kraftsim's
        cols.insert(-1, ("kafka_load_ms", "Kafka load ms (warm)"))
    return out, cols


# ---------------------------------------------------------------------------------- jobs

JOBS: dict[str, Job] = {
    "corpus": Job("corpus", CORPUS, corpus_row, ("set",), ("path",),
                  weight=lambda it: it["bytes"], summarize=_corpus_summary),
    "downgrade-matrix": Job("downgrade-matrix", DOWNGRADE, downgrade_rows, ("set",), ("state", "target_mv"),
                            weight=lambda it: it["bytes"], summarize=_downgrade_summary),
    "snapshot-cost": Job("snapshot-cost", SNAPSHOT_COST, snapshot_cost_row, ("metadata_version_name",),
                         ("metadata_version_name", "topics", "partitions_per_topic", "replication_factor", "brokers"),
                         weight=lambda it: 1 + it["topics"] * it["partitions"] * it["rf"],
                         summarize=_snapshot_cost_summary),
}


def job(name: str) -> Job:
    if name not in JOBS:
        raise KraftsimError(f"no job named {name!r} (jobs: {', '.join(JOBS)})")
    return JOBS[name]


def job_inputs(name: str, paths: Sequence[str] = (), grid: dict[str, list[object]] | None = None) -> list[dict[str, object]]:
    """The input rows of a job: files or states below `paths`, or the grid's points."""
    if name == "corpus":
        return corpus_inputs(paths)
    if name == "downgrade-matrix":
        return downgrade_inputs(paths)
    if name == "snapshot-cost":
        return grid_points(grid if grid is not None else default_grid())
    raise KraftsimError(f"no job named {name!r}")


# ------------------------------------------------------------------------------ tables


def sort_rows(name: str, rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Rows in the job's total order (None sorts first)."""
    keys = job(name).sort_by
    return sorted(rows, key=lambda r: tuple((r[k] is not None, r[k]) for k in keys))


def normalize(table: pa.Table, schema_name: str) -> pa.Table:
    """A table read back from Parquet (any writer, partition columns as directories) in the
    schema's column order and types."""
    sch = schema(schema_name)
    columns = []
    for f in sch:
        col = table.column(f.name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        columns.append(col.cast(f.type))
    return pa.Table.from_arrays(columns, schema=sch)


def read_output(path: str | Path, name: str) -> pa.Table:
    """A job's output folder as one table of its schema, rows in the job's order."""
    j = job(name)
    _check_sidecar(Path(path), j)
    dataset = ds.dataset(str(path), format="parquet", partitioning="hive")
    table = normalize(dataset.to_table(), j.schema)
    return pa.Table.from_pylist(sort_rows(name, table.to_pylist()), schema=schema(j.schema))


def _sidecar(j: Job) -> dict[str, object]:
    return {"schema": j.schema, "version": schema_version(j.schema), "partition_by": list(j.partition_by),
            "fields": field_specs(j.schema)}


def _check_sidecar(path: Path, j: Job) -> None:
    try:
        found = jsoninput.loads((path / SIDECAR).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        found = None
    if not isinstance(found, dict):  # (valid JSON of another shape is no sidecar either)
        raise KraftsimError(f"{path}: not an output of kraftsim's {j.name} job (no readable {SIDECAR})")
    if (found.get("schema"), found.get("version")) != (j.schema, schema_version(j.schema)):
        raise KraftsimError(f"{path}: holds schema {found.get('schema')} version {found.get('version')}, "
                            f"not {j.schema} version {schema_version(j.schema)}")


def _is_local_path(out: str) -> bool:
    return "://" not in out or out.startswith("file://")


def _local(out: str) -> Path:
    return Path(out[len("file://"):] if out.startswith("file://") else out)


def prepare_output(out: str, j: Job, overwrite: bool) -> str:
    """The Spark save mode for `out`, after checking that replacing it loses nothing of the user's."""
    if not _is_local_path(out):
        return "overwrite" if overwrite else "errorifexists"
    p = _local(out)
    if not p.exists():
        return "errorifexists"
    if overwrite:
        return "overwrite"
    if p.is_dir():
        if not any(p.iterdir()):
            return "overwrite"
        try:
            _check_sidecar(p, j)
            return "overwrite"
        except KraftsimError:
            pass
    raise KraftsimError(f"{out} exists and is not an earlier output of the {j.name} job; "
                        "choose another folder or pass --overwrite to replace it")


def _write_sidecar(out: str, j: Job) -> None:
    if _is_local_path(out):
        (_local(out) / SIDECAR).write_text(json.dumps(_sidecar(j), indent=1) + "\n", encoding="utf-8")


def _summary(name: str, rows: list[dict[str, object]]) -> tuple[list[dict[str, object]], str]:
    summary, cols = job(name).summarize(sort_rows(name, rows))
    return summary, text_table(summary, cols)


# ------------------------------------------------------------------------------ runners


def _row_function(j: Job, params: dict[str, object]) -> Callable[[dict[str, object]], list[dict[str, object]]]:
    return functools.partial(j.row_function, **params) if params else j.row_function


def run_local(name: str, items: Sequence[dict[str, object]], *, params: dict[str, object] | None = None,
              output: str | None = None, overwrite: bool = False,
              progress: Callable[[int, int], None] | None = None) -> tuple[JobRun, pa.Table]:
    """The job in this process; writes `output` (when given) with pyarrow. Returns the run and
    its rows in the job's order."""
    j = job(name)
    started = time.perf_counter()
    rows = sort_rows(name, run_rows_local(items, _row_function(j, params or {}), j.schema, progress=progress).to_pylist())
    table = pa.Table.from_pylist(rows, schema=schema(j.schema))
    if output is not None:
        mode = prepare_output(output, j, overwrite)
        target = _local(output)
        if mode == "overwrite" and target.exists():
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        pq.write_to_dataset(table, str(target), partition_cols=list(j.partition_by),
                            basename_template="part-{i}.parquet")
        _write_sidecar(output, j)
    elapsed = time.perf_counter() - started
    summary, text = _summary(name, rows)
    return JobRun(name, output, table.num_rows, summary, text, elapsed, "local"), table


def _read_back(spark: SparkSession, output: str, j: Job) -> pa.Table:
    """What a Spark job wrote (an output without rows has no Parquet files to read)."""
    if _is_local_path(output) and not any(_local(output).rglob("*.parquet")):
        return schema(j.schema).empty_table()
    return normalize(spark.read.parquet(output).toArrow(), j.schema)


def run_spark(spark: SparkSession, name: str, items: Sequence[dict[str, Any]], output: str, *,
              params: dict[str, object] | None = None, partitions: int | None = None,
              partitions_per_core: int | None = None,
              overwrite: bool = False, show_progress: bool = True) -> JobRun:
    """The job on `spark`: fan out, write partitioned Parquet to `output`, read it back for the summary."""
    from pyspark.sql.functions import col

    from kraftsim.pipeline.progress import SparkProgress

    j = job(name)
    mode = prepare_output(output, j, overwrite)
    started = time.perf_counter()
    n = partition_count(spark, len(items), partitions=partitions, per_core=partitions_per_core) if items else 0
    frame = fan_out(spark, items, _row_function(j, params or {}), j.schema, partitions=n or None,
                    weight=j.weight)
    writer = frame.repartition(*[col(c) for c in j.partition_by]).write.mode(mode).partitionBy(*j.partition_by)
    if show_progress:
        starting = (f"{j.name}: {len(items)} input{'s' if len(items) != 1 else ''} in {n} Spark "
                    f"task{'s' if n != 1 else ''}, then the Parquet write")
        with SparkProgress(spark, j.name, starting=starting):
            writer.parquet(output)
    else:
        writer.parquet(output)
    _write_sidecar(output, j)
    elapsed = time.perf_counter() - started
    back = _read_back(spark, output, j)
    summary, text = _summary(name, back.to_pylist())
    master = spark.sparkContext.master or ""  # (pyspark types it Optional; a running context has one)
    return JobRun(name, output, back.num_rows, summary, text, elapsed, master, n)
