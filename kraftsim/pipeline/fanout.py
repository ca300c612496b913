"""Generic fan-out: a function from an input row to result rows, plus a schema, run on Spark.

The pipeline's jobs, and later the scenario sweeps, all have this shape: many independent
pieces of pure-Python work (a file to verify, a state to downgrade, a shape to measure),
each producing a few rows. `fan_out` packs the input rows into a few bins per core —
weighted, heaviest first, so that one big file does not share a bin with many others —
and runs each bin as one Spark task through `mapInArrow`: a task pays Python's start-up
once for its whole bin, not once per item, and rows come back as Arrow batches.

`run_local` does the same work in this process, in input order: the reference the Spark
results are checked against, and the fallback that needs no Java.

Input rows are JSON objects (dicts of str, int, float, bool, None, lists); result rows are
dicts keyed by the schema's columns. `fn` must be importable on the workers (a module-level
function, or a functools.partial of one).
"""

from __future__ import annotations

import heapq
import json
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import pyarrow as pa

from kraftsim.errors import KraftsimError
from kraftsim.pipeline.defaults import partitions_per_core as default_per_core
from kraftsim.pipeline.schemas import schema as named_schema
from kraftsim.pipeline.work_queue import WorkQueue, taken_from_front

if TYPE_CHECKING:
    from pyspark import Broadcast
    from pyspark.sql import DataFrame, SparkSession

RowFunction = Callable[[dict[str, object]], Iterable[dict[str, object]]]
Weight = Callable[[dict[str, Any]], float]
OUTPUT_BATCH_ROWS = 4096


def _schema(schema: pa.Schema | str) -> pa.Schema:
    return named_schema(schema) if isinstance(schema, str) else schema


def pack(items: Sequence[dict[str, Any]], bins: int, weight: Weight | None = None) -> list[list[int]]:
    """Item indices in `bins` bins of nearly equal weight (longest-processing-time first:
    heaviest item to the lightest bin), each bin in input order. Deterministic."""
    if bins < 1:
        raise KraftsimError("the number of partitions must be at least 1")
    weights = [float(weight(it)) if weight else 1.0 for it in items]
    order = sorted(range(len(items)), key=lambda i: (-weights[i], i))
    heap = [(0.0, b) for b in range(bins)]
    out: list[list[int]] = [[] for _ in range(bins)]
    for i in order:
        load, b = heapq.heappop(heap)
        out[b].append(i)
        heapq.heappush(heap, (load + weights[i], b))
    return [sorted(b) for b in out if b]


def partition_count(spark: SparkSession, items: int, *, partitions: int | None = None, per_core: int | None = None) -> int:
    """`partitions` if given, else `per_core` (default: jobs.toml) per core Spark has (its
    default parallelism), never more than there are items."""
    if partitions is None:
        per_core = default_per_core() if per_core is None else per_core
        partitions = max(1, per_core) * max(1, spark.sparkContext.defaultParallelism)
    return max(1, min(partitions, items))


def _batches(items: Iterable[dict[str, Any]], fn: RowFunction, schema: pa.Schema,
             batch_rows: int = OUTPUT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """`fn`'s rows for every item, as Arrow batches of about `batch_rows` rows."""
    rows: list[dict[str, Any]] = []
    for item in items:
        rows.extend(fn(item))
        if len(rows) >= batch_rows:
            yield pa.RecordBatch.from_pylist(rows, schema=schema)
            rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=schema)


def _apply(fn: RowFunction, schema: pa.Schema, payloads: Broadcast[list[str]],
           batch_rows: int = OUTPUT_BATCH_ROWS) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function: each input row is a bin's number; `payloads` (a broadcast
    list) holds each bin's items as JSON."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        bins = payloads.value
        ids = (b for batch in batches for b in batch.column(0).to_pylist())
        items = (item for b in ids for item in json.loads(bins[b]))
        yield from _batches(items, fn, schema, batch_rows)

    return run


def fan_out(spark: SparkSession, items: Sequence[dict[str, Any]], fn: RowFunction, schema: pa.Schema | str, *,
            partitions: int | None = None, partitions_per_core: int | None = None, weight: Weight | None = None,
            bins: Sequence[Sequence[int]] | None = None, batch_rows: int = OUTPUT_BATCH_ROWS) -> DataFrame:
    """A DataFrame of `fn`'s rows for every item, computed by Spark tasks (lazy: nothing runs
    until it is written or collected). One task per bin; see `pack`, or give the `bins`
    (lists of item indices, run in that order of tasks). Each task sends its rows back in
    Arrow batches of `batch_rows` as they are made."""
    from pyspark.sql.pandas.types import from_arrow_schema

    sch = _schema(schema)
    if not items:
        return spark.createDataFrame([], from_arrow_schema(sch))
    if bins is None:
        n = partition_count(spark, len(items), partitions=partitions, per_core=partitions_per_core)
        bins = pack(items, n, weight)
    # One bin per Spark partition: a range of n numbers in n slices holds one number each,
    # and needs no Python worker to build (a DataFrame made from Python rows did: a second
    # pool of workers, started per job). The bins' items reach the tasks as one broadcast,
    # read once by each Python worker, which Spark reuses from task to task.
    payloads = spark.sparkContext.broadcast([json.dumps([items[i] for i in idx]) for idx in bins])
    numbers = spark.range(0, len(bins), 1, len(bins))
    return numbers.mapInArrow(_apply(fn, sch, payloads, batch_rows), from_arrow_schema(sch))


def _take(fn: RowFunction, schema: pa.Schema, payload: Broadcast[str], queue_path: str,
          batch_rows: int) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function of `fan_out_queued`: each task takes items until none is left."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:  # one number per task, which only names the task
            pass
        items = json.loads(payload.value)
        with WorkQueue(queue_path) as queue:
            yield from _batches(taken_from_front(queue, items), fn, schema, batch_rows)

    return run


def fan_out_queued(spark: SparkSession, items: Sequence[dict[str, Any]], fn: RowFunction, schema: pa.Schema | str,
                   queue_path: str, *, tasks: int, batch_rows: int = OUTPUT_BATCH_ROWS) -> DataFrame:
    """`fan_out` on a local master, where `tasks` tasks take `items` (in the queue's order)
    from the WorkQueue at `queue_path` until none is left (work_queue.py): positions the
    driver took are not run again. Lazy, as fan_out."""
    from pyspark.sql.pandas.types import from_arrow_schema

    sch = _schema(schema)
    payload = spark.sparkContext.broadcast(json.dumps(list(items)))
    numbers = spark.range(0, tasks, 1, tasks)
    return numbers.mapInArrow(_take(fn, sch, payload, queue_path, batch_rows), from_arrow_schema(sch))


def fan_out_frame(frame: DataFrame, fn: RowFunction, schema: pa.Schema | str, *,
                  partitions: int | None = None) -> DataFrame:
    """The same for input rows that already live in a Spark DataFrame (a sweep read from
    Parquet, say): rows are spread round-robin over `partitions` (default: as they are)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    sch = _schema(schema)
    if partitions is not None:
        frame = frame.repartition(partitions)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from _batches((item for batch in batches for item in batch.to_pylist()), fn, sch)

    return frame.mapInArrow(run, from_arrow_schema(sch))


def as_task_input(item: dict[str, object]) -> dict[str, object]:
    """`item` as a Spark task receives it: through JSON (tuples become lists, keys strings),
    so a row function run in this process sees what it sees on Spark."""
    through: dict[str, object] = json.loads(json.dumps(item))
    return through


def run_local(items: Sequence[dict[str, object]], fn: RowFunction, schema: pa.Schema | str, *,
              progress: Callable[[int, int], None] | None = None) -> pa.Table:
    """`fn` over every item in this process, in input order, as one table."""
    sch = _schema(schema)
    rows: list[dict[str, object]] = []
    for done, item in enumerate(items, 1):
        rows.extend(fn(as_task_input(item)))
        if progress:
            progress(done, len(items))
    return pa.Table.from_pylist(rows, schema=sch)
