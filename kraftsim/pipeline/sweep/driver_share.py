"""The driver's own share of a Spark sweep: runs it does while Spark starts, and while the
cores would otherwise wait for Spark's first task.

On a small machine, Spark leaves cores idle at the edges of a sweep: while its JVM and
session start (seconds of a cold JVM's CPU, mostly on one thread), while the first job is
planned and its Python workers start, and while the table's Parquet files are written after
the last run. The driver's Python process only waits there. So the driver runs sweep runs
itself, the lightest first, taken from the back of the sweep's work queue (work_queue.py)
while Spark starts. On a local master Spark's tasks then take from the queue's front, and
the driver goes on taking from its back until the first task has taken a run (beyond that
it would only share the cores with the tasks). On other masters, whose executors cannot
see the queue, the driver keeps a reserve of the lightest remaining runs (RESERVE_SHARE of
their estimated cost) to run beside Spark's tasks, and Spark gets the rest as guided bins.

Who ran a run changes nothing in its row but `wall_s`: the driver's rows join Spark's in
the one table the driver writes. `--no-driver-runs` gives every run to Spark.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Sequence, TypeVar

from kraftsim.pipeline.fanout import as_task_input
from kraftsim.pipeline.work_queue import WorkQueue

T = TypeVar("T")
Row = dict[str, object]
RowFunction = Callable[[dict[str, object]], list[Row]]

#: The estimated cost the driver keeps to run beside Spark's job: about the core-time a
#: cold Spark job leaves idle on 2 cores (planning, then the Parquet write), measured on
#: 1,000 runs of the shipped suite (benchmarks/results/pipeline-sweep.md).
RESERVE_SHARE = 0.04


@dataclass
class DriverRuns:
    """Rows the driver made itself, by input index, and when it made them."""

    rows: dict[int, list[Row]] = field(default_factory=dict)
    while_starting: int = 0
    beside_job: int = 0

    def __len__(self) -> int:
        return len(self.rows)


class Background(Generic[T]):
    """`fn()` in a thread: `done()` says whether it ended, `result()` returns its value or
    raises what it raised."""

    def __init__(self, fn: Callable[[], T]):
        self._value: T | None = None
        self._error: BaseException | None = None

        def target() -> None:
            try:
                self._value = fn()
            except BaseException as e:  # handed to the caller of result()
                self._error = e

        self._thread = threading.Thread(target=target, name="kraftsim-background", daemon=True)
        self._thread.start()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self) -> None:
        """Until `fn()` has ended, whatever its outcome."""
        self._thread.join()

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def lightest_first(items: Sequence[dict[str, Any]]) -> list[int]:
    """Input indices by estimated cost, the cheapest first (ties in input order)."""
    return sorted(range(len(items)), key=lambda i: (float(items[i]["cost"]), i))


def _run_one(items: Sequence[dict[str, object]], i: int, fn: RowFunction) -> list[Row]:
    return fn(as_task_input(items[i]))


def take_while(busy: Callable[[], bool], queue: WorkQueue, order: Sequence[int], items: Sequence[dict[str, object]],
               fn: RowFunction, share: DriverRuns, *, starting: bool) -> None:
    """The lightest runs left, taken one at a time from the back of `queue` (whose positions
    are indices into `order`, heaviest first), while `busy()` holds (checked before each
    run: at most one run outlasts it). Adds to share.while_starting, or with `starting`
    false to share.beside_job."""
    ended = 0
    try:
        while busy():
            pos = queue.take_back(ended)
            ended = 0
            if pos is None:
                return
            i = order[pos]
            share.rows[i] = _run_one(items, i, fn)
            ended = 1
            if starting:
                share.while_starting += 1
            else:
                share.beside_job += 1
    finally:
        queue.count_ended(ended)


def reserve(items: Sequence[dict[str, Any]], share: DriverRuns, fraction: float = RESERVE_SHARE) -> list[int]:
    """The lightest runs not yet done whose estimated cost is at most `fraction` of what is left."""
    left = [i for i in lightest_first(items) if i not in share.rows]
    budget = fraction * sum(float(items[i]["cost"]) for i in left)
    out, spent = [], 0.0
    for i in left:
        cost = float(items[i]["cost"])
        if spent + cost > budget:
            break
        out.append(i)
        spent += cost
    return out


def run_beside(indices: Sequence[int], items: Sequence[dict[str, Any]], fn: RowFunction,
               share: DriverRuns) -> Background[None]:
    """The reserve, in a thread of the driver, while Spark's job runs (the driver's main
    thread only waits on the JVM then)."""

    def work() -> None:
        for i in indices:
            share.rows[i] = _run_one(items, i, fn)
            share.beside_job += 1

    return Background(work)
