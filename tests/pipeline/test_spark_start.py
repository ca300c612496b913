"""A Spark job as a user sees it on stderr: each step of the start told, a task count that
only grows across stages, and no PySpark traceback when Spark lets its idle Python
workers go (kraftsim/pipeline/spark_daemon.py)."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftsim.pipeline.progress import SparkProgress
from tests.paths import REPO
from tests.pipeline.conftest import cli_command

_COUNT = re.compile(r"^t: (\d+)/(\d+) tasks done")


def _slow(batches):
    for batch in batches:
        time.sleep(0.3)
        yield batch


def test_progress_counts_the_tasks_of_every_stage_and_never_goes_back(spark, tmp_path: Path) -> None:
    out = io.StringIO()
    frame = spark.range(0, 400, numPartitions=4).mapInArrow(_slow, "id long").repartition(3)
    with SparkProgress(spark, "t", out=out, after=0, every=0.05, starting="t: starting") as progress:
        frame.write.parquet(str(tmp_path / "out"))
        done, running, total = progress.snapshot()
    lines = out.getvalue().splitlines()
    assert lines[0] == "t: starting"
    counts = [(int(m.group(1)), int(m.group(2))) for m in map(_COUNT.match, lines[1:]) if m]
    assert counts, lines
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(counts, counts[1:])), counts
    # The write's fan-out stage (4 tasks) and its shuffle's stage both count, to the end.
    assert len(progress._stages) >= 2 and total > 4 and done == total and running == 0
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None  # the group is put back


def _fake_jvm_closes_an_idle_worker(module: str) -> str:
    """Run `python -m MODULE` as Spark runs its worker daemon, connect as the JVM does for a
    worker, close the worker's socket before sending it a task, stop the daemon; its stderr."""
    env = dict(os.environ, PYTHON_WORKER_FACTORY_SECRET="secret", SPARK_REUSE_WORKER="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.pop("PYTHON_UNIX_DOMAIN_ENABLED", None)
    daemon = subprocess.Popen([sys.executable, "-m", module], cwd=REPO, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert daemon.stdout is not None and daemon.stdin is not None
        (port,) = struct.unpack(">i", daemon.stdout.read(4))
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            (pid,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        daemon.stdin.close()  # how Spark stops its daemon
        daemon.wait(timeout=30)
        assert daemon.stderr is not None
        err = daemon.stderr.read()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(timeout=30)
    return err.decode(errors="replace")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks workers; watches them in /proc")
def test_the_worker_daemon_lets_a_worker_go_quietly_where_pysparks_prints_a_traceback() -> None:
    assert "Traceback" in _fake_jvm_closes_an_idle_worker("pyspark.daemon")  # what users saw
    assert _fake_jvm_closes_an_idle_worker("kraftsim.pipeline.spark_daemon") == ""


def test_the_worker_daemon_loads_no_threaded_module_before_it_forks() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys, kraftsim.pipeline.spark_daemon; print(sorted(sys.modules))"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout
    assert "'pyarrow" not in loaded and "'pandas" not in loaded and "'kraftsim.pipeline.jobs'" not in loaded


def test_the_sweeps_preload_starts_no_thread_and_loads_no_threaded_module() -> None:
    """What a sweep asks the daemon to import before it forks (jobs.toml) must fork safely;
    a module that fails to import is left to the worker that needs it."""
    from kraftsim.pipeline.spark_daemon import PRELOAD_ENV
    from kraftsim.pipeline.sweep.engine import SPARK_CONF

    names = SPARK_CONF[f"spark.executorEnv.{PRELOAD_ENV}"]
    code = ("import gc, json, sys, threading, kraftsim.pipeline.spark_daemon as d\n"
            f"failed = d.preload({names + ' no_such_module_here'!r})\n"
            "print(json.dumps([failed, threading.active_count(), gc.get_freeze_count(), sorted(sys.modules)]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    failed, threads, frozen, modules = json.loads(done.stdout)
    assert failed == ["no_such_module_here"] and threads == 1 and frozen > 0
    assert "kraftsim.scenario.runner" in modules and "kraftsim.sim.simulation" in modules  # what a run needs
    assert not [m for m in modules if m.split(".")[0] in ("pyarrow", "pandas", "numpy")]


@pytest.mark.spark
def test_a_spark_job_tells_its_start_and_ends_without_a_traceback(tmp_path: Path) -> None:
    """With an idle-worker pool of one, Spark closes a reused Python worker mid-run, as it does
    to every idle worker after a minute (which printed a BrokenPipeError after `kraftsim demo`)."""
    grid = ["--grid", "topics=3,30", "--grid", "partitions=2", "--grid", "brokers=3", "--grid", "mv=3.9-IV0,4.0-IV3"]
    done = subprocess.run(
        cli_command("spark", "snapshot-cost", *grid, "--no-memory", "--master", "local[2]", "--partitions", "4",
                    "--conf", "spark.python.factory.idleWorkerMaxPoolSize=1", "-o", str(tmp_path / "cost")),
        cwd=REPO, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    err = done.stderr
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception" not in err, err
    steps = ["snapshot-cost: starting Java ", "snapshot-cost: Java up after ",
             "snapshot-cost: Spark ", "snapshot-cost: 4 inputs in 4 Spark tasks, then the Parquet write"]
    where = [err.find(step) for step in steps]
    assert -1 not in where and where == sorted(where), err
    assert "starting the Spark session on local[2]" in err
    assert "snapshot-cost: 4 rows" in done.stdout
