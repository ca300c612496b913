"""The main job's Spark half: `kraftsim demo` runs downgrade-matrix and snapshot-cost on the
shared session and leaves Parquet whose rows agree with the single-process computation."""

from __future__ import annotations

from pathlib import Path

from kraftsim.demo import DEMO_GRID, matrix_inputs, run_demo
from kraftsim.pipeline.jobs import read_output, run_local


def test_demo_runs_the_jobs_on_spark_and_their_parquet_matches_a_local_run(spark, tmp_path: Path) -> None:
    lines: list[str] = []
    result = run_demo(tmp_path / "demo", say=lines.append)
    assert spark.sparkContext._jsc is not None  # the demo left the shared session running
    assert set(result.parquet) == {"downgrade-matrix", "snapshot-cost"}
    matrix = read_output(result.parquet["downgrade-matrix"], "downgrade-matrix")
    _, local = run_local("downgrade-matrix", matrix_inputs(result.clusters))
    assert matrix.num_rows > 0

    def measured(table):  # every column but the measured time
        return sorted(str({k: v for k, v in row.items() if k != "elapsed_s"}) for row in table.to_pylist())

    assert measured(matrix) == measured(local)
    cost = read_output(result.parquet["snapshot-cost"], "snapshot-cost")
    points = {(r["topics"], r["metadata_version_name"]) for r in cost.to_pylist()}
    assert points == {(t, mv) for t in DEMO_GRID["topics"] for mv in DEMO_GRID["mv"]}
    assert any(line.startswith("  downgrade-matrix: ") for line in lines)
