"""The generic fan-out: the same rows whatever the partitioning, a few tasks rather than one per item.

- `pack` puts every item in exactly one bin, deterministically, with loads within one
  item's weight of each other (greedy to the lightest bin).
- fan_out over 1, 3 and the default number of partitions gives exactly run_local's rows,
  nested and null values included; rows from a DataFrame input (fan_out_frame) too.
- Work runs in as many Spark tasks as bins (partitions-per-core x cores), not per item.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.pipeline.fanout import fan_out, fan_out_frame, pack, partition_count, run_local
from tests.pipeline import rowfns

ITEMS = [{"n": n, "word": w} for n, w in zip(range(1, 51), ["alpha", "beta", "gamma", "delta", "epsilon"] * 10)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=60), st.integers(min_value=1, max_value=12))
def test_pack_is_a_balanced_partition(weights: list[int], bins: int) -> None:
    items = [{"w": w} for w in weights]
    packed = pack(items, bins, lambda it: it["w"])
    assert sorted(i for b in packed for i in b) == list(range(len(items)))
    assert len(packed) <= bins and all(b == sorted(b) and b for b in packed)
    assert packed == pack(items, bins, lambda it: it["w"])
    if len(packed) == bins and weights:
        loads = [sum(weights[i] for i in b) for b in packed]
        assert max(loads) - min(loads) <= max(weights)


def test_pack_refuses_zero_bins() -> None:
    with pytest.raises(KraftsimError):
        pack([{}], 0)


def _key(r: dict) -> tuple:
    return r["item"], r["copy"]


def _without_pid(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k != "pid"} for r in rows), key=_key)


@pytest.fixture(scope="module")
def by_value():
    """Spark workers get the test module's functions by value (tests/ is not on their path)."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(rowfns)
    yield
    cloudpickle.unregister_pickle_by_value(rowfns)


def test_fan_out_gives_the_local_rows_whatever_the_partitions(spark, by_value) -> None:
    local = run_local(ITEMS, rowfns.copies, rowfns.SCHEMA).to_pylist()
    assert len(local) == sum(n % 4 for n in range(1, 51))
    expected = _without_pid(local)
    results = {}
    for partitions in (1, 3, None):
        frame = fan_out(spark, ITEMS, rowfns.copies, rowfns.SCHEMA, partitions=partitions,
                        weight=lambda it: it["n"])
        results[partitions] = frame.toArrow().to_pylist()
        assert _without_pid(results[partitions]) == expected, partitions
    # one task per bin: a single partition ran every item in one Python worker
    assert len({r["pid"] for r in results[1]}) == 1


def test_work_is_spread_over_a_few_partitions_per_core(spark, by_value) -> None:
    cores = spark.sparkContext.defaultParallelism
    assert partition_count(spark, len(ITEMS), per_core=2) == 2 * cores
    assert partition_count(spark, 3, per_core=2) == min(3, 2 * cores)
    assert partition_count(spark, len(ITEMS), partitions=7) == 7
    frame = fan_out(spark, ITEMS, rowfns.copies, rowfns.SCHEMA, partitions_per_core=2)
    assert frame.rdd.getNumPartitions() == 2 * cores < len(ITEMS)


def test_fan_out_frame_takes_rows_from_a_dataframe(spark, by_value) -> None:
    frame = spark.createDataFrame(ITEMS, "n long, word string")
    rows = fan_out_frame(frame, rowfns.copies, rowfns.SCHEMA, partitions=3).toArrow().to_pylist()
    assert _without_pid(rows) == _without_pid(run_local(ITEMS, rowfns.copies, rowfns.SCHEMA).to_pylist())


def test_no_items_give_an_empty_frame_of_the_schema(spark) -> None:
    frame = fan_out(spark, [], rowfns.copies, rowfns.SCHEMA)
    assert frame.columns == rowfns.SCHEMA.names and frame.count() == 0
