"""Running a sweep: in this process for small sweeps, else on Spark through `fan_out`.

Each run is one input item, so Spark's tasks take runs, not files: on a local master one
task per core takes runs from a work queue, heaviest first (work_queue.py); elsewhere tasks
are bins of runs by estimated cost (guided bins, heaviest first: sweep/tasks.py). Rows
stream back from the tasks in small Arrow batches (`mapInArrow`) and reach the driver as
one Arrow table (`toArrow`), with the rows the driver made itself (sweep/driver_share.py):
one row per run, or an error. The driver writes the table as Parquet partitioned by
scenario, the reproducer files of runs that did not pass (from the table's `reproducer`
column) and the summary: workers need no disk shared with the driver.
Collecting the rows costs little (a few KB per run), where Spark writing Parquet itself
took a shuffle and a second job, about 3 s of a 1,000-run sweep on 2 cores.

Output folder: `table/` (Parquet, `scenario=NAME/part-*.parquet`, plus the schema sidecar),
`reproducers/SCENARIO/seed-N.toml`, `summary.txt`, and `plots/` when matplotlib is there."""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, TextIO

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kraftsim import jsoninput
from kraftsim.errors import KraftsimError
from kraftsim.textsafe import own
from kraftsim.storage.safepath import safe_file_name
from kraftsim.pipeline.defaults import job_defaults
from kraftsim.pipeline.jobs import normalize
from kraftsim.pipeline.fanout import fan_out, fan_out_queued, pack, partition_count, run_local
from kraftsim.pipeline.schemas import field_specs, schema, schema_version
from kraftsim.pipeline.sweep.driver_share import RESERVE_SHARE, Background, DriverRuns, reserve, run_beside, take_while
from kraftsim.pipeline.work_queue import WorkQueue
from kraftsim.pipeline.sweep.runs import SCHEMA, sweep_row
from kraftsim.pipeline.sweep.tasks import guided_bins, heaviest_first

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The driver JVM's options on local masters (jobs.toml, [sweep]).
LOCAL_DRIVER_JAVA_OPTIONS: str = job_defaults()["sweep"]["local_driver_java_options"]
#: The Spark settings a sweep's session starts with, under the user's --conf (jobs.toml, [sweep.spark_conf]).
SPARK_CONF: dict[str, str] = dict(job_defaults()["sweep"]["spark_conf"])
#: Fewer runs than this are not worth Spark's start-up: they run in this process.
SPARK_MIN_RUNS = 50
TABLE = "table"
REPRODUCERS = "reproducers"
SIDECAR = "_kraftsim_schema.json"
SORT_KEY = ("scenario", "seed")


@dataclass
class SweepRun:
    table: pa.Table  # rows sorted by scenario, seed
    engine: str  # "local" or the Spark master
    elapsed_s: float
    tasks: int | None = None
    driver: DriverRuns | None = None  # runs the driver made itself (sweep/driver_share.py)
    start_s: float | None = None  # until the Spark session was ready (sweep_on_spark)


#: Rows a task sends back per Arrow batch: a few, so that results stream out as runs end.
BATCH_ROWS = 8


def run_bins(items: Sequence[dict[str, Any]], cores: int) -> list[list[int]]:
    """The sweep's Spark tasks: guided bins by estimated run cost (sweep/tasks.py)."""
    return guided_bins([float(it["cost"]) for it in items], cores)


class Progress:
    """`sweep: 120/400 runs (30%), 3.1 runs/s, ETA 90 s` on stderr: rewritten in place on a
    terminal, one line every `every` seconds otherwise."""

    def __init__(self, total: int, *, out: TextIO | None = None, every: float | None = None, label: str = "sweep"):
        self.total = total
        self.out = out if out is not None else sys.stderr
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self.every = every if every is not None else (0.5 if self.tty else 10.0)
        self.label = label
        self.start = time.monotonic()
        self._last = 0.0

    def line(self, done: float, approx: bool = False) -> str:
        elapsed = max(1e-9, time.monotonic() - self.start)
        rate = done / elapsed
        eta = f"ETA {(self.total - done) / rate:.0f} s" if rate > 0 and done < self.total else "ETA -"
        mark = "~" if approx else ""
        return (f"{self.label}: {mark}{done:.0f}/{self.total} runs ({100 * done / max(1, self.total):.0f}%), "
                f"{rate:.2f} runs/s, {eta}")

    def update(self, done: float, approx: bool = False, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.every and done < self.total:
            return
        self._last = now
        text = self.line(done, approx)
        self.out.write((own("\r", self.out) + text + own("\x1b[K", self.out)) if self.tty else text + "\n")
        self.out.flush()

    def finish(self) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()


def sort_table(table: pa.Table) -> pa.Table:
    return table.sort_by([(k, "ascending") for k in SORT_KEY])


def run_in_process(items: Sequence[dict[str, Any]], progress: Progress | None = None) -> SweepRun:
    started = time.perf_counter()
    table = run_local(items, sweep_row, SCHEMA,
                      progress=(lambda done, total: progress.update(done)) if progress else None)
    return SweepRun(sort_table(table), "local", time.perf_counter() - started)


def _watch_tasks(spark: SparkSession, progress: Progress, bins: list[list[int]], stop: threading.Event,
                 driver: DriverRuns) -> None:
    """Runs done (bins): the driver's own, plus an estimate from the finished tasks of the fan-out
    stage (Spark starts tasks in bin order, so k finished tasks are about the first k bins'
    runs). Never goes back when the write's later stage starts."""
    tracker = spark.sparkContext.statusTracker()
    done_after = [0]
    for b in bins:
        done_after.append(done_after[-1] + len(b))
    best = 0
    while not stop.wait(progress.every):
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is not None and info.numTasks == len(bins):
                best = max(best, info.numCompletedTasks)
        progress.update(min(progress.total, len(driver) + done_after[min(best, len(bins))]), approx=True, force=True)


@dataclass
class Queued:
    """A sweep's runs in a WorkQueue (work_queue.py): `order` lists the input indices
    heaviest first, the queue's positions index it. On a local master Spark's tasks take
    from its front; the driver takes from its back while Spark starts and, with `beside`,
    until a task has taken its first run."""

    queue: WorkQueue
    order: list[int]
    beside: bool = True


def takes_from_queue(spark: SparkSession) -> bool:
    """Whether the session's tasks can take runs from a work queue: on a local master that
    runs each task once. A task attempt that Spark kills or runs again (speculation, the
    retries of `local[N,F]`) would lose the runs it took; such sessions get bins."""
    sc = spark.sparkContext
    once = sc.master == "local" or re.fullmatch(r"local\[(\*|\d+)\]", sc.master or "") is not None
    return once and sc.getConf().get("spark.speculation", "false").lower() != "true"


def _watch_queue(progress: Progress, queue: WorkQueue, stop: threading.Event) -> None:
    """Runs done: those counted as ended in the queue (the tasks' and the driver's)."""
    while not stop.wait(progress.every):
        progress.update(min(progress.total, queue.counters()[2]), force=True)


def _collect(frame: DataFrame, watch: Callable[[threading.Event], None] | None) -> pa.Table:
    """The frame's rows as one Arrow table, `watch` running in a thread meanwhile."""
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(stop,), daemon=True) if watch is not None else None
    if watcher is not None:
        watcher.start()
    try:
        return normalize(frame.toArrow(), SCHEMA)
    finally:
        stop.set()
        if watcher is not None:
            watcher.join()


def run_on_spark(spark: SparkSession, items: Sequence[dict[str, Any]], table_dir: str, *, partitions: int | None = None,
                 progress: Progress | None = None, driver: DriverRuns | None = None,
                 reserve_share: float = 0.0, queued: Queued | None = None) -> SweepRun:
    """The sweep as Spark tasks, their rows collected as Arrow; the driver writes `table_dir`
    (Parquet by scenario). Runs already in `driver` are not run again.

    With `queued` and a local master, `partitions` tasks (default: one per core) take the runs
    from the queue (the driver beside them, see Queued). Otherwise the tasks are guided bins
    of runs, or `partitions` bins of nearly equal estimated cost; with `reserve_share`, the
    driver runs that share of the rest (the lightest runs) beside Spark's job
    (sweep/driver_share.py)."""
    started = time.perf_counter()
    driver = driver if driver is not None else DriverRuns()
    parts = []
    tasks = 0
    if queued is not None and takes_from_queue(spark):
        tasks = partitions or spark.sparkContext.defaultParallelism
        queue, order = queued.queue, queued.order
        failed = threading.Event()  # the job failed: the driver stops taking before the queue is closed

        def until_a_task_takes() -> bool:
            return not failed.is_set() and queue.counters()[0] == 0

        beside = (Background(lambda: take_while(until_a_task_takes, queue, order, items, sweep_row, driver,
                                                starting=False)) if queued.beside else None)
        try:
            frame = fan_out_queued(spark, [items[i] for i in order], sweep_row, SCHEMA, queue.path, tasks=tasks,
                                   batch_rows=BATCH_ROWS)
            parts.append(_collect(frame, (lambda stop: _watch_queue(progress, queue, stop)) if progress else None))
        except BaseException:
            failed.set()
            if beside is not None:
                beside.wait()
            raise
    else:
        kept = reserve(items, driver, reserve_share) if reserve_share > 0 else []
        by_driver = set(driver.rows) | set(kept)
        on_spark = [it for i, it in enumerate(items) if i not in by_driver]
        beside = run_beside(kept, items, sweep_row, driver) if kept else None
        if on_spark:
            if partitions is None:
                bins = run_bins(on_spark, spark.sparkContext.defaultParallelism)
            else:
                bins = pack(on_spark, partition_count(spark, len(on_spark), partitions=partitions),
                            lambda it: float(it["cost"]))
            tasks = len(bins)
            frame = fan_out(spark, on_spark, sweep_row, SCHEMA, bins=bins, batch_rows=BATCH_ROWS)
            parts.append(_collect(frame, (lambda stop: _watch_tasks(spark, progress, bins, stop, driver))
                                  if progress else None))
    if beside is not None:
        beside.result()
    if driver.rows:
        parts.append(pa.Table.from_pylist([r for i in sorted(driver.rows) for r in driver.rows[i]], schema=schema(SCHEMA)))
    table = sort_table(pa.concat_tables(parts)) if parts else schema(SCHEMA).empty_table()
    if table.num_rows != len(items):  # every run makes one row, an error included: never a lost or doubled run
        raise KraftsimError(f"the sweep's table has {table.num_rows} rows for {len(items)} runs")
    write_local_table(table, Path(table_dir))
    if progress is not None:
        progress.update(len(items), force=True)
    return SweepRun(table, spark.sparkContext.master or "", time.perf_counter() - started, tasks, driver)


def sweep_on_spark(start: Callable[[], tuple[SparkSession, bool]], items: Sequence[dict[str, Any]], table_dir: str, *,
                   partitions: int | None = None, progress: Progress | None = None,
                   driver_runs: bool = True) -> tuple[SweepRun, SparkSession, bool]:
    """Start Spark (`start()` returns the session and whether it was started here) and run
    the sweep on it; with `driver_runs`, the driver runs the lightest runs while Spark starts
    and beside its job (sweep/driver_share.py). Returns the run (its time counted from the
    start), the session and whether the caller should stop it."""
    started = time.perf_counter()
    driver = DriverRuns()
    order = heaviest_first([float(it["cost"]) for it in items])
    with tempfile.TemporaryDirectory(prefix="kraftsim-sweep-") as scratch, \
            WorkQueue.create(Path(scratch) / "queue", len(items)) as queue:
        starting = Background(start)
        if driver_runs:
            take_while(lambda: not starting.done(), queue, order, items, sweep_row, driver, starting=True)
        spark, owner = starting.result()
        start_s = time.perf_counter() - started
        try:
            run = run_on_spark(spark, items, table_dir, partitions=partitions, progress=progress, driver=driver,
                               reserve_share=RESERVE_SHARE if driver_runs else 0.0,
                               queued=Queued(queue, order, beside=driver_runs))
        except BaseException:
            if owner:
                spark.stop()
            raise
    run.elapsed_s, run.start_s = time.perf_counter() - started, start_s
    return run, spark, owner


def read_table(table_dir: str | Path, *, check: bool = True) -> pa.Table:
    """A sweep's table (the `table/` folder) in the schema's columns, sorted by scenario and seed."""
    p = Path(table_dir)
    if check:
        try:
            side = jsoninput.loads((p / SIDECAR).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            side = None
        if not isinstance(side, dict):  # (valid JSON of another shape is no sidecar either)
            raise KraftsimError(f"{p}: not a sweep table (no readable {SIDECAR})")
        if (side.get("schema"), side.get("version")) != (SCHEMA, schema_version(SCHEMA)):
            raise KraftsimError(f"{p}: holds schema {side.get('schema')} version {side.get('version')}, "
                                f"not {SCHEMA} version {schema_version(SCHEMA)}")
    if not any(p.rglob("*.parquet")):
        return schema(SCHEMA).empty_table()
    return sort_table(normalize(ds.dataset(str(p), format="parquet", partitioning="hive").to_table(), SCHEMA))


def prepare_out(out: Path, overwrite: bool) -> None:
    """Refuse to replace a folder that is not an earlier sweep output, unless told to."""
    if not out.exists():
        return
    if not out.is_dir():
        raise KraftsimError(f"{out} exists and is not a folder")
    earlier = (out / TABLE / SIDECAR).is_file()
    if any(out.iterdir()) and not earlier and not overwrite:
        raise KraftsimError(f"{out} exists and is not an earlier sweep output; choose another folder or pass "
                            "--overwrite to replace it")
    for name in (TABLE, REPRODUCERS, "plots", "summary.txt"):
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()


def write_local_table(table: pa.Table, table_dir: Path) -> None:
    pq.write_to_dataset(table, str(table_dir), partition_cols=["scenario"], basename_template="part-{i}.parquet")


def write_sidecar(table_dir: Path) -> None:
    side = {"schema": SCHEMA, "version": schema_version(SCHEMA), "partition_by": ["scenario"],
            "fields": field_specs(SCHEMA)}
    table_dir.mkdir(parents=True, exist_ok=True)
    (table_dir / SIDECAR).write_text(json.dumps(side, indent=1) + "\n", encoding="utf-8")


def write_reproducers(table: pa.Table, out: Path) -> list[Path]:
    """One file per run that did not pass: reproducers/SCENARIO/seed-N.toml."""
    paths = []
    for row in table.select(["scenario", "seed", "reproducer"]).to_pylist():
        if row["reproducer"] is None:
            continue
        p = out / REPRODUCERS / safe_file_name(row["scenario"]) / f"seed-{row['seed']}.toml"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(row["reproducer"], encoding="utf-8")
        paths.append(p)
    return paths


def reproducer_path(out: Path, scenario: str, seed: int) -> Path:
    return out / REPRODUCERS / safe_file_name(scenario) / f"seed-{seed}.toml"


def announce(text: str, err: TextIO | None = None) -> None:
    (err or sys.stderr).write(text + "\n")
    (err or sys.stderr).flush()
