"""The sweep benchmark of bench_pipeline.py (`--sweep N`): one process against Spark, in pairs.

Each side of each pair runs in a fresh Python process (`bench_pipeline.py --sweep-side
SIDE`), so that every Spark measurement pays Spark's whole start-up (the JVM, the session,
the Python workers) as a `kraftsim spark sweep` command does, and no side inherits the
other's warm heap. The sides take turns first (local then Spark, Spark then local, ...), and
the verdict is on the median of the pairs' ratios: the machine's speed drifts by 5-15% over
minutes, and a pair's two sides, measured back to back, drift together.

What each side times, once its inputs are listed: the one process runs every run and writes
the table with pyarrow; Spark is `kraftsim spark sweep`'s own path (engine.sweep_on_spark:
Spark started in the background while the driver runs the lightest runs, one task per core
taking runs from the sweep's work queue through mapInArrow, the driver writing the Parquet
table). Both tables are compared, apart from wall times.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import load_average, utc_now

ROOT = Path(__file__).resolve().parents[1]
SWEEP_FAULTS = "crash=0.2,partition=0.1,torn-tail=0.1,loss=0.01"
#: Left out of the default sweep: one run rolls 100,000 partitions (about a minute alone), so
#: its share of 1,000 runs would be most of the benchmark's hour and measure that one scenario.
SWEEP_LEFT_OUT = ("snapshot-during-roll-at-scale.toml",)
SWEEP_TARGET = 1.7
SIDE_TIMEOUT_S = 3600


def sweep_items(runs: int, files: list[Path]) -> list[dict[str, Any]]:
    """The first `runs` runs ordered by seed, then scenario: every scenario about equally often."""
    from kraftsim.pipeline.sweep.runs import sweep_inputs

    seeds = range(0, -(-runs // len(files)))
    rank = {str(f): i for i, f in enumerate(files)}
    items = sorted(sweep_inputs(files, seeds, SWEEP_FAULTS), key=lambda it: (it["seed"], rank[it["file"]]))
    return items[:runs]


def default_files() -> list[Path]:
    from kraftsim.scenario.suite import SUITE_DIR, is_slow

    return [f for f in sorted(SUITE_DIR.glob("*.toml")) if f.name not in SWEEP_LEFT_OUT and not is_slow(f)]


_RECORD_ARCHIVE = """
from kraftsim.pipeline.session import spark_session
spark = spark_session("local[1]", app_name="record the class archive")
spark.range(0, 10, 1, 2).count()
spark.stop()
"""


def ensure_class_archive(timeout_s: float = 300.0) -> str:
    """The state the measured JVMs start in: 'mapped' when the driver's class-data archive
    (kraftsim/pipeline/class_archive.py) exists, recording it first with a throwaway Spark
    start if this machine has none yet, as any earlier Spark start would have; 'off' when
    turned off or unusable here."""
    from kraftsim.pipeline import class_archive
    from kraftsim.pipeline.java import find_java
    from kraftsim.pipeline.session import real_java_home, spark_jars

    def options() -> str:
        return class_archive.class_archive_options(real_java_home(find_java()), spark_jars())

    first = options()
    if "ArchiveClassesAtExit" not in first:
        return "mapped" if "SharedArchiveFile" in first else "off"
    print("recording the driver's class-data archive (a throwaway Spark start, once per machine)", flush=True)
    subprocess.run([sys.executable, "-c", _RECORD_ARCHIVE], cwd=ROOT, check=True, timeout=timeout_s,
                   capture_output=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:  # the JVM writes the archive as it exits, after Python
        if "SharedArchiveFile" in options():
            return "mapped"
        time.sleep(0.5)
    return "off"


def _python_workers(spark: Any) -> dict[str, int]:
    """Distinct Python worker processes over 4 tasks per core of a mapInArrow stage: one per core
    when Spark reuses its workers."""
    import pyarrow as pa

    tasks = 4 * spark.sparkContext.defaultParallelism

    def pid(batches: Any) -> Any:
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pylist([{"pid": os.getpid()}])

    frame = spark.range(tasks).repartition(tasks).mapInArrow(pid, "pid long")
    return {"tasks": tasks, "processes": frame.distinct().count()}


def run_side(side: str, runs: int, files: list[Path], table_dir: Path, *, driver_runs: bool) -> dict[str, Any]:
    """One side of a pair, in this (fresh) process: the figures as a JSON-ready dict."""
    from kraftsim.pipeline.sweep import engine

    items = sweep_items(runs, files)
    rec: dict[str, Any] = {"side": side, "runs": len(items), "load_before": os.getloadavg()}
    if side == "local":
        t0 = time.perf_counter()
        local = engine.run_in_process(items)
        engine.write_local_table(local.table, table_dir)
        rec["elapsed_s"] = time.perf_counter() - t0
        table = local.table
    else:
        from kraftsim.pipeline.session import start_spark

        on_spark, spark, owner = engine.sweep_on_spark(
            lambda: start_spark(conf=engine.SPARK_CONF, java_options=engine.LOCAL_DRIVER_JAVA_OPTIONS), items, str(table_dir),
            driver_runs=driver_runs)
        driver = on_spark.driver
        rec.update(elapsed_s=on_spark.elapsed_s, start_s=on_spark.start_s, tasks=on_spark.tasks,
                   cores=spark.sparkContext.defaultParallelism,
                   driver_while_starting=driver.while_starting if driver else 0,
                   driver_beside_job=driver.beside_job if driver else 0,
                   python_workers=_python_workers(spark))
        table = on_spark.table
        if owner:
            spark.stop()
    rec["passed"] = sum(v == "pass" for v in table.column("verdict").to_pylist())
    rec["load_after"] = os.getloadavg()
    return rec


def _side_command(side: str, runs: int, table_dir: Path, scenarios: list[Path] | None, driver_runs: bool) -> list[str]:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_pipeline.py"), "--sweep", str(runs),
           "--sweep-side", side, "--table", str(table_dir)]
    if scenarios:
        cmd += ["--scenarios", *map(str, scenarios)]
    if not driver_runs:
        cmd.append("--no-driver-runs")
    return cmd


def _session_members(sid: int) -> list[int]:
    """Processes of session `sid` still running (Linux /proc; elsewhere none are seen)."""
    members = []
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else []:
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _wait_for_session_end(sid: int, timeout_s: float = 60.0) -> None:
    """Wait until what a side left running ends (Spark's JVM shuts down for a few seconds after
    its Python driver exits), so that it does not slow the next side; kill what outlasts
    `timeout_s`."""
    import signal

    deadline = time.monotonic() + timeout_s
    while _session_members(sid) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in _session_members(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _table_rows(table_dir: Path) -> list[dict[str, Any]]:
    """A side's table, sorted, without its wall times: what must be equal on both sides."""
    from kraftsim.pipeline.sweep import engine

    table = engine.read_table(table_dir, check=False)
    return [{k: v for k, v in row.items() if k != "wall_s"} for row in table.to_pylist()]


def bench_sweep(runs: int, pairs: int, files: list[Path], *, scenarios: list[Path] | None = None,
                driver_runs: bool = True) -> dict[str, Any]:
    """`pairs` pairs of one-process and Spark sweeps of the same `runs` runs, each side in a
    fresh process, the sides taking turns first."""
    from kraftsim.pipeline.sweep import engine

    archive = ensure_class_archive()
    load_before = os.getloadavg()
    detail: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-sweep-") as tmp:
        for p in range(pairs):
            order = ("local", "spark") if p % 2 == 0 else ("spark", "local")
            pair: dict[str, Any] = {"pair": p + 1, "order": list(order)}
            for side in order:
                table_dir = Path(tmp) / f"{side}-{p}"
                child = subprocess.Popen(_side_command(side, runs, table_dir, scenarios, driver_runs), cwd=ROOT,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                         start_new_session=True)
                stdout, stderr = child.communicate(timeout=SIDE_TIMEOUT_S)
                _wait_for_session_end(child.pid)
                if child.returncode != 0:
                    raise SystemExit(f"the {side} side of pair {p + 1} failed:\n{stderr[-3000:]}")
                pair[side] = json.loads(stdout.strip().splitlines()[-1])
                print(f"pair {p + 1}/{pairs} {side:5} {runs} runs {pair[side]['elapsed_s']:7.1f} s  "
                      f"load {load_average()}", flush=True)
            pair["ratio"] = pair["local"]["elapsed_s"] / pair["spark"]["elapsed_s"]
            pair["tables_equal"] = _table_rows(Path(tmp) / f"local-{p}") == _table_rows(Path(tmp) / f"spark-{p}")
            detail.append(pair)
    return {"date": utc_now(), "python": platform.python_version(), "cpus": os.cpu_count(), "runs": runs,
            "pairs": pairs, "faults": SWEEP_FAULTS, "driver_runs": driver_runs,
            "java_options": engine.LOCAL_DRIVER_JAVA_OPTIONS, "spark_conf": engine.SPARK_CONF, "class_archive": archive,
            "scenarios": [f.name for f in files], "left_out": [] if scenarios else list(SWEEP_LEFT_OUT),
            "load_before": load_before, "load_after": os.getloadavg(), "detail": detail,
            "median_local_s": statistics.median(d["local"]["elapsed_s"] for d in detail),
            "median_spark_s": statistics.median(d["spark"]["elapsed_s"] for d in detail),
            "ratio": statistics.median(d["ratio"] for d in detail),
            "tables_equal": all(d["tables_equal"] for d in detail)}


def render_sweep(d: dict[str, Any]) -> str:
    ratio = d["ratio"]
    verdict = "met" if ratio >= SWEEP_TARGET else "NOT met"
    first_spark = d["detail"][0]["spark"]
    lines = [
        "# kraftsim spark sweep benchmark", "",
        f"`python benchmarks/bench_pipeline.py --sweep {d['runs']} --pairs {d['pairs']}` on {d['date']}, CPython "
        f"{d['python']}, embedded `local[*]` with {first_spark['cores']} cores ({d['cpus']} CPUs): {d['runs']} runs "
        f"of {len(d['scenarios'])} shipped scenarios (left out: {', '.join(d['left_out']) or 'none'}) with faults "
        f"`{d['faults']}`, {first_spark['passed']} passed.", "",
        f"**Load:** {load_average(d['load_before'])} before, {load_average(d['load_after'])} after (1 / 5 / 15 min) "
        f"on {d['cpus']} CPUs.", "",
        f"{d['pairs']} pairs; each side of a pair runs in a fresh Python process, and the sides take turns first, so "
        "that every Spark side pays Spark's whole start-up and a drift of the machine's speed hits both sides of a "
        "pair alike. One process: the runs, then the table written with pyarrow. Spark: `kraftsim spark sweep`'s "
        f"own path (driver JVM options `{d['java_options']}`; the driver's class-data archive: {d['class_archive']}; "
        f"session settings {', '.join(f'`{k}={v}`' for k, v in d.get('spark_conf', {}).items()) or 'none'}): the "
        "session started in the background, one task per core taking runs from the sweep's work queue through "
        "mapInArrow, the driver writing the Parquet table. "
        + ("While Spark starts, the driver runs the lightest runs itself, and goes on until the first task takes a "
           "run (kraftsim/pipeline/sweep/driver_share.py); the driver column counts them."
           if d["driver_runs"] else "Every run ran in a Spark task (`--no-driver-runs`)."), "",
        "| pair | order | one process | spark | session ready | tasks | driver runs (start + until a task) | ratio | "
        "load before |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for p in d["detail"]:
        s = p["spark"]
        lines.append(f"| {p['pair']} | {' then '.join(p['order'])} | {p['local']['elapsed_s']:.1f} s | "
                     f"{s['elapsed_s']:.1f} s | {s['start_s']:.1f} s | {s['tasks']} | {s['driver_while_starting']} + "
                     f"{s['driver_beside_job']} | {p['ratio']:.2f}x | {load_average(p[p['order'][0]]['load_before'])} |")
    lines += [
        "", "| engine | median time | runs/s | vs one process (median of the pairs' ratios) |",
        "|---|---:|---:|---:|",
        f"| one process | {d['median_local_s']:.1f} s | {d['runs'] / d['median_local_s']:.2f} | 1.00x |",
        f"| spark, start-up included | {d['median_spark_s']:.1f} s | {d['runs'] / d['median_spark_s']:.2f} | "
        f"{ratio:.2f}x |", "",
        f"Target: at least {SWEEP_TARGET}x for 1,000 runs on 2 cores: {verdict} in this run (the median of "
        f"{d['pairs']} pairs; pairs ranged {min(p['ratio'] for p in d['detail']):.2f}x to "
        f"{max(p['ratio'] for p in d['detail']):.2f}x)"
        + ("" if d["runs"] >= 1000 else f" (only {d['runs']} runs: a check of the benchmark, not the measurement)")
        + ".",
        f"Tables equal apart from wall_s, every pair: {'yes' if d['tables_equal'] else 'NO'}. "
        f"Python workers: {first_spark['python_workers']['processes']} processes served "
        f"{first_spark['python_workers']['tasks']} tasks.",
    ]
    return "\n".join(lines) + "\n"
