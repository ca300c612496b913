"""The driver's share of a Spark sweep (sweep/driver_share.py): which runs it takes, that
it stops when Spark is ready, and that the table is the same whoever ran each run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.pipeline.sweep import engine
from kraftsim.pipeline.sweep.driver_share import Background, DriverRuns, lightest_first, reserve, take_while
from kraftsim.pipeline.sweep.runs import sweep_inputs
from kraftsim.pipeline.sweep.tasks import heaviest_first
from kraftsim.pipeline.work_queue import WorkQueue
from kraftsim.scenario.suite import SUITE_DIR

SCENARIOS = [SUITE_DIR / "torn-tail.toml", SUITE_DIR / "disable-feature.toml"]


def _items(costs: list[float]) -> list[dict[str, Any]]:
    return [{"cost": c, "n": i} for i, c in enumerate(costs)]


def _deterministic(table: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in table.to_pylist()]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=1, max_value=500, allow_nan=False), min_size=1, max_size=40),
       st.sets(st.integers(0, 39)), st.floats(min_value=0, max_value=1))
def test_reserve_takes_the_lightest_runs_left_within_the_share(costs: list[float], done: set[int],
                                                                 fraction: float) -> None:
    items = _items(costs)
    share = DriverRuns(rows={i: [] for i in done if i < len(items)})
    kept = reserve(items, share, fraction)
    left = [i for i in lightest_first(items) if i not in share.rows]
    assert kept == left[:len(kept)]  # a prefix of the lightest runs not yet done
    assert sum(costs[i] for i in kept) <= fraction * sum(costs[i] for i in left) + 1e-9
    if len(kept) < len(left):  # the next one would have gone over the share
        assert sum(costs[i] for i in kept) + costs[left[len(kept)]] > fraction * sum(costs[i] for i in left)


def test_take_while_takes_the_lightest_from_the_queue_and_stops_when_told(tmp_path: Path) -> None:
    costs = [5.0, 1.0, 3.0, 2.0, 4.0]
    items = _items(costs)
    order = heaviest_first(costs)
    assert order == [0, 4, 2, 3, 1]
    checks = iter([True, True, True, False, True])
    share = DriverRuns()
    with WorkQueue.create(tmp_path / "queue", len(items)) as queue:
        take_while(lambda: next(checks), queue, order, items, lambda it: [{"n": it["n"]}], share, starting=True)
        assert list(share.rows) == [1, 3, 2]  # costs 1, 2, 3: then Spark was ready
        assert share.while_starting == 3 and share.beside_job == 0 and share.rows[3] == [{"n": 3}]
        assert queue.counters() == (0, 2, 3)  # the three lightest taken from the back, all three ended
        take_while(lambda: True, queue, order, items, lambda it: [{"n": it["n"]}], share, starting=False)
        assert share.beside_job == 2 and sorted(share.rows) == [0, 1, 2, 3, 4]
        assert queue.counters() == (0, 0, 5)


def test_background_hands_back_the_value_or_the_error() -> None:
    assert Background(lambda: 42).result() == 42

    def fail() -> None:
        raise ValueError("no Java")

    failing = Background(fail)
    with pytest.raises(ValueError, match="no Java"):
        failing.result()
    assert failing.done()


@pytest.mark.spark
def test_a_slow_start_is_filled_with_driver_runs_and_the_table_is_unchanged(spark, tmp_path: Path) -> None:
    items = sweep_inputs(SCENARIOS, range(0, 12), "crash=0.3")  # about 2 s of runs
    local = engine.run_in_process(items).table

    def slow_start() -> tuple[Any, bool]:
        time.sleep(0.3)  # as a cold JVM would take, only shorter
        return spark, False

    run, session, owner = engine.sweep_on_spark(slow_start, items, str(tmp_path / "t"))
    assert session is spark and not owner
    assert run.driver is not None and run.driver.while_starting >= 1
    # Who runs the rest depends on how soon Spark's first task takes one (the driver goes on
    # until then): test_no_driver_runs_gives_every_run_to_spark has Spark's tasks run them all.
    assert run.start_s is not None and run.start_s >= 0.3
    assert _deterministic(run.table) == _deterministic(local)  # every run once, the same rows
    assert _deterministic(engine.read_table(tmp_path / "t", check=False)) == _deterministic(local)  # as written


@pytest.mark.spark
def test_no_driver_runs_gives_every_run_to_spark(spark, tmp_path: Path) -> None:
    items = sweep_inputs(SCENARIOS, range(0, 3), None)
    run, _, _ = engine.sweep_on_spark(lambda: (time.sleep(0.5), (spark, False))[1], items, str(tmp_path / "t"),
                                      driver_runs=False)
    assert run.driver is not None and len(run.driver) == 0
    assert _deterministic(run.table) == _deterministic(engine.run_in_process(items).table)


@pytest.mark.spark
def test_the_reserve_runs_beside_spark_and_joins_the_table(spark, tmp_path: Path) -> None:
    items = sweep_inputs(SCENARIOS, range(0, 4), "crash=0.3")
    run = engine.run_on_spark(spark, items, str(tmp_path / "t"), reserve_share=0.5)
    assert run.driver is not None and run.driver.beside_job >= 1 and run.driver.while_starting == 0
    assert sorted((r["scenario"], r["seed"]) for r in run.table.to_pylist()) == \
        sorted((it["scenario"], it["seed"]) for it in items)
    assert _deterministic(run.table) == _deterministic(engine.run_in_process(items).table)


@pytest.mark.spark
def test_a_session_running_in_the_caller_is_found_from_the_start_thread(spark) -> None:
    """The sweep starts Spark in a thread: it must use the caller's session, not stop it after."""
    from kraftsim.pipeline.session import start_spark

    session, owner = Background(lambda: start_spark("local[2]")).result()
    assert session is spark and owner is False
    assert spark.sparkContext._jsc is not None


@pytest.mark.spark
def test_on_a_local_master_one_task_per_core_takes_runs_from_the_queue(spark, tmp_path: Path) -> None:
    import io

    items = sweep_inputs(SCENARIOS, range(0, 10), "crash=0.3")
    out = io.StringIO()
    progress = engine.Progress(len(items), out=out, every=0.05)
    run, _, _ = engine.sweep_on_spark(lambda: (spark, False), items, str(tmp_path / "t"), progress=progress)
    assert run.tasks == spark.sparkContext.defaultParallelism  # one task per core, not bins
    assert _deterministic(run.table) == _deterministic(engine.run_in_process(items).table)  # every run once
    counts = [int(line.split()[1].lstrip("~").split("/")[0]) for line in out.getvalue().splitlines()]
    assert counts == sorted(counts) and counts[-1] == len(items)  # runs ended, never going back


@pytest.mark.spark
def test_a_run_taken_from_the_queue_but_never_made_is_an_error(spark, tmp_path: Path) -> None:
    from kraftsim.errors import KraftsimError

    items = sweep_inputs(SCENARIOS, range(0, 2), None)
    order = heaviest_first([float(it["cost"]) for it in items])
    with WorkQueue.create(tmp_path / "queue", len(items)) as queue:
        queue.take_back()  # taken by a taker that then made no row
        with pytest.raises(KraftsimError, match=f"{len(items) - 1} rows for {len(items)} runs"):
            engine.run_on_spark(spark, items, str(tmp_path / "t"), queued=engine.Queued(queue, order, beside=False))


@pytest.mark.spark
@pytest.mark.parametrize("fails", ["building the job", "running the job"])
def test_a_failed_job_stops_the_driver_before_the_queue_is_closed(spark, tmp_path: Path, monkeypatch,
                                                                   fails: str) -> None:
    import threading

    class FailingFrame:
        def toArrow(self) -> None:
            time.sleep(0.2)  # the driver is taking runs beside the job meanwhile
            raise RuntimeError("executor lost")

    def fan_out_queued(*args: Any, **kwargs: Any) -> FailingFrame:
        if fails == "building the job":
            time.sleep(0.2)
            raise RuntimeError("executor lost")
        return FailingFrame()

    monkeypatch.setattr(engine, "fan_out_queued", fan_out_queued)
    items = sweep_inputs(SCENARIOS, range(0, 60), "crash=0.3")
    with pytest.raises(RuntimeError, match="executor lost"):
        engine.sweep_on_spark(lambda: (spark, False), items, str(tmp_path / "t"))
    # The thread that took runs beside the job ended before the queue's file was closed.
    assert not [t for t in threading.enumerate() if t.name == "kraftsim-background"]


@pytest.mark.parametrize("master, speculation, takes", [
    ("local[2]", None, True), ("local[*]", None, True), ("local", None, True),
    ("local[2,3]", None, False),  # retries: a failed attempt's runs would be lost
    ("local[2]", "true", False),  # a killed speculative attempt's runs would be lost
    ("spark://127.0.0.1:7077", None, False), ("local-cluster[2,1,1024]", None, False),
])
def test_only_a_session_that_runs_each_task_once_takes_from_the_queue(master: str, speculation: str | None,
                                                                       takes: bool) -> None:
    class Conf:
        def get(self, key: str, default: str) -> str:
            return speculation if key == "spark.speculation" and speculation is not None else default

    class Context:
        def __init__(self) -> None:
            self.master = master

        def getConf(self) -> Conf:
            return Conf()

    class Session:
        sparkContext = Context()

    assert engine.takes_from_queue(Session()) is takes
