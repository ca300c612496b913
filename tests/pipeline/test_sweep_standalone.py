"""`kraftsim spark sweep --master spark://127.0.0.1:PORT` on a Spark standalone cluster.

The cluster is test_spark_cli's fixture: a master and one worker (2 cores) started with
`spark-class` from the installed PySpark on loopback, free ports, bounded waits, always
stopped. The sweep runs as a user runs it (a separate `kraftsim` process, the default
guided tasks) and its table must equal the same runs in this process, apart from wall time.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kraftsim.pipeline.sweep import engine
from kraftsim.pipeline.sweep.runs import sweep_inputs
from kraftsim.scenario.suite import SUITE_DIR
from tests.pipeline.conftest import cli_command
from tests.pipeline.test_spark_cli import standalone_cluster  # noqa: F401  (the fixture)
from tests.pipeline.test_sweep import FAULTS, PLANTED

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


def _deterministic(table) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in table.to_pylist()]


def test_a_sweep_runs_on_a_standalone_cluster(standalone_cluster: str, tmp_path: Path) -> None:  # noqa: F811
    planted = tmp_path / "planted.toml"
    planted.write_text(PLANTED, encoding="utf-8")
    files = [planted, SUITE_DIR / "torn-tail.toml"]
    out = tmp_path / "sweep"
    done = subprocess.run(
        cli_command("spark", "sweep", *map(str, files), "--seeds", "0:3", "--faults", FAULTS,
                    "--master", standalone_cluster, "--out", str(out), "--no-plots", "--no-progress",
                    # the executors run this checkout's kraftsim, as the driver does
                    "--conf", f"spark.executorEnv.PYTHONPATH={REPO}", "--conf", "spark.executor.memory=1g"),
        capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL, cwd=REPO)
    local = engine.run_in_process(sweep_inputs(files, range(0, 4), FAULTS)).table
    assert done.returncode == (0 if all(r["verdict"] == "pass" for r in local.to_pylist()) else 1), done.stderr[-3000:]
    assert f"on Spark {standalone_cluster}" in done.stdout
    assert f"sweep: starting Spark ({standalone_cluster})" in done.stderr
    table = engine.read_table(out / engine.TABLE)
    assert table.num_rows == 8
    assert _deterministic(table) == _deterministic(local)
    for r in local.to_pylist():
        path = engine.reproducer_path(out, r["scenario"], r["seed"])
        assert path.is_file() == (r["verdict"] != "pass")
