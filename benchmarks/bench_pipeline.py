"""Benchmark of the pipeline's jobs: Spark at 1, 2 and 4 partitions per core against one process.

For each job — corpus over the oracle tree (files/s), downgrade-matrix over the oracle
(cluster states/s, each against every lower metadata.version), snapshot-cost over its
default grid (grid points/s) — it runs, in one process and one Spark session:

- the job in this process (`run_local`, writing the same Parquet layout with pyarrow);
- the job on the embedded Spark session (`run_spark`: fan-out, partitioned Parquet,
  read back for the summary) at 1, 2 and 4 partitions per core.

A warm-up job runs first so that starting Spark's Python workers is not billed to the
first configuration; the session's own start is reported apart. Each configuration runs
`--repeat` times and the best time is kept. The machine's load average before and after
is recorded with the results, since other work on the same cores changes everything.

    python benchmarks/bench_pipeline.py                 # results/pipeline.md and .json
    python benchmarks/bench_pipeline.py --quick         # a small grid, one repeat
    python benchmarks/bench_pipeline.py --sweep 1000    # only the scenario sweep: results/pipeline-sweep.*

`--sweep N` measures `kraftsim spark sweep` alone: N runs (the shipped suite's scenarios
under as many seeds as it takes, with faults) in one process and on the embedded Spark
session, the same runs on both sides, in `--rounds R` rounds with the sides taking turns
first; Spark's start-up is billed to Spark once. On two quiet cores, the measurement:

    python benchmarks/bench_pipeline.py --sweep 1000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import load_average  # noqa: E402
from kraftsim.pipeline.jobs import job_inputs, run_local, run_spark  # noqa: E402
from kraftsim.pipeline.session import spark_session  # noqa: E402
from kraftsim.pipeline.snapshot_cost import default_grid, parse_grid  # noqa: E402

ORACLE = ROOT.parent / "shared" / "oracle"
PER_CORE = (1, 2, 4)
UNIT = {"corpus": "files", "downgrade-matrix": "states", "snapshot-cost": "grid points"}


def _best(fn, repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def bench(repeat: int, quick: bool) -> dict[str, Any]:
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    spark = spark_session()  # local[*]
    session_s = time.perf_counter() - t0
    cores = spark.sparkContext.defaultParallelism
    grid = parse_grid(["topics=10,100", "partitions=1,10"], default_grid()) if quick else default_grid()
    jobs = {
        "corpus": job_inputs("corpus", [ORACLE]),
        "downgrade-matrix": job_inputs("downgrade-matrix", [ORACLE]),
        "snapshot-cost": job_inputs("snapshot-cost", grid=grid),
    }
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-") as tmp:
        warm_t0 = time.perf_counter()
        run_spark(spark, "corpus", jobs["corpus"][:cores * 2], f"{tmp}/warmup", show_progress=False)
        warmup_s = time.perf_counter() - warm_t0
        for name, items in jobs.items():
            out = f"{tmp}/{name}"
            secs, run = _best(lambda: run_local(name, items, output=out + "-local", overwrite=True)[0], repeat)
            results.append({"job": name, "engine": "one process", "partitions": None, "items": len(items),
                            "rows": run.rows, "seconds": secs, "per_second": len(items) / secs})
            print(f"{name:17} one process      {secs:7.2f} s  {len(items) / secs:8.2f} {UNIT[name]}/s", flush=True)
            for per_core in PER_CORE:
                secs, run = _best(lambda: run_spark(spark, name, items, out, partitions_per_core=per_core,
                                                    overwrite=True, show_progress=False), repeat)
                results.append({"job": name, "engine": f"spark {per_core}/core", "partitions": run.partitions,
                                "items": len(items), "rows": run.rows, "seconds": secs,
                                "per_second": len(items) / secs})
                print(f"{name:17} spark {per_core}/core ({run.partitions:2} tasks) {secs:7.2f} s  "
                      f"{len(items) / secs:8.2f} {UNIT[name]}/s", flush=True)
    spark.stop()
    return {
        "python": platform.python_version(), "machine": platform.machine(), "system": platform.system(),
        "cpus": os.cpu_count(), "spark_cores": cores, "quick": quick, "repeat": repeat,
        "load_before": load_before, "load_after": os.getloadavg(),
        "session_start_s": session_s, "warmup_s": warmup_s, "results": results,
    }


SWEEP_FAULTS = "crash=0.2,partition=0.1,torn-tail=0.1,loss=0.01"
#: Left out of the default sweep: one run rolls 100,000 partitions (about a minute alone), so
#: its share of 1,000 runs would be most of the benchmark's hour and measure that one scenario.
SWEEP_LEFT_OUT = ("snapshot-during-roll-at-scale.toml",)


def sweep_items(runs: int, files: list[Path]) -> list[dict[str, Any]]:
    """The first `runs` runs ordered by seed, then scenario: every scenario about equally often."""
    from kraftsim.pipeline.sweep.runs import sweep_inputs

    seeds = range(0, -(-runs // len(files)))
    rank = {str(f): i for i, f in enumerate(files)}
    items = sorted(sweep_inputs(files, seeds, SWEEP_FAULTS), key=lambda it: (it["seed"], rank[it["file"]]))
    return items[:runs]


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


_RECORD_ARCHIVE = """
from kraftsim.pipeline.session import spark_session
spark = spark_session("local[1]", app_name="record the class archive")
spark.range(0, 10, 1, 2).count()
spark.stop()
"""


def ensure_class_archive(timeout_s: float = 300.0) -> str:
    """The state the measured JVM starts in: 'mapped' when the driver's class-data archive
    (kraftsim/pipeline/class_archive.py) exists, recording it first with a throwaway Spark
    start if this machine has none yet, as any earlier Spark start would have; 'off' when
    turned off or unusable here."""
    import subprocess

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


def bench_sweep(runs: int, rounds: int, files: list[Path], *, driver_runs: bool = True) -> dict[str, Any]:
    """`runs` sweep runs in one process and on Spark, the same runs on both sides, in `rounds`
    rounds of every rounds-th run, the sides taking turns first (ABBA...) so that a change of
    the machine's load hits both alike. The Spark side is `kraftsim spark sweep`'s own path
    (engine.sweep_on_spark): its first turn starts Spark and is billed the start-up, during
    which the driver runs the lightest runs (unless `driver_runs` is off); Python workers
    start inside the first job's time."""
    from kraftsim.pipeline.session import start_spark
    from kraftsim.pipeline.sweep import engine

    items = sweep_items(runs, files)
    archive = ensure_class_archive()
    load_before = os.getloadavg()
    spark = None
    session_s = 0.0
    per_round: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-sweep-") as tmp:
        for r in range(rounds):
            part = items[r::rounds]
            sides = ("local", "spark") if r % 2 == 0 else ("spark", "local")
            rec: dict[str, Any] = {"round": r + 1, "runs": len(part), "order": list(sides),
                                   "load_before": os.getloadavg()}
            tables = {}
            for side in sides:
                if side == "local":
                    t0 = time.perf_counter()
                    local = engine.run_in_process(part)
                    engine.write_local_table(local.table, Path(tmp) / f"local-{r}")
                    rec["local_s"] = time.perf_counter() - t0
                    tables["local"] = local.table
                else:
                    first = spark is None
                    on_spark, spark, _ = engine.sweep_on_spark(
                        lambda: start_spark(java_options=engine.LOCAL_DRIVER_JAVA_OPTIONS), part,
                        f"{tmp}/spark-{r}", driver_runs=driver_runs)
                    if first:
                        session_s = on_spark.start_s or 0.0
                    driver = on_spark.driver
                    rec.update(spark_s=on_spark.elapsed_s, spark_tasks=on_spark.tasks,
                               driver_while_starting=driver.while_starting if driver else 0,
                               driver_beside_job=driver.beside_job if driver else 0)
                    tables["spark"] = on_spark.table
                print(f"round {r + 1}/{rounds} {side:5} {len(part)} runs "
                      f"{rec[side + '_s']:7.1f} s  load {load_average()}", flush=True)
            rec["tables_equal"] = _deterministic(tables["local"]) == _deterministic(tables["spark"])
            rec["passed"] = sum(v == "pass" for v in tables["local"].column("verdict").to_pylist())
            rec["load_after"] = os.getloadavg()
            per_round.append(rec)
    assert spark is not None
    cores = spark.sparkContext.defaultParallelism
    workers = _python_workers(spark)
    spark.stop()
    local_s = sum(r["local_s"] for r in per_round)
    spark_s = sum(r["spark_s"] for r in per_round)
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "spark_cores": cores,
            "runs": len(items), "rounds": rounds, "faults": SWEEP_FAULTS, "driver_runs": driver_runs,
            "java_options": engine.LOCAL_DRIVER_JAVA_OPTIONS, "class_archive": archive,
            "scenarios": [f.name for f in files], "left_out": [n for n in SWEEP_LEFT_OUT],
            "load_before": load_before, "load_after": os.getloadavg(), "session_start_s": session_s,
            "local_s": local_s, "spark_s": spark_s, "ratio": local_s / spark_s, "rounds_detail": per_round,
            "python_workers": workers, "tables_equal": all(r["tables_equal"] for r in per_round),
            "passed": sum(r["passed"] for r in per_round)}


def _deterministic(table: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "wall_s"} for row in table.to_pylist()]


SWEEP_TARGET = 1.7


def render_sweep(d: dict[str, Any]) -> str:
    ratio = d["ratio"]
    verdict = "met" if ratio >= SWEEP_TARGET else "NOT met"
    lines = [
        "# kraftsim spark sweep benchmark", "",
        f"`python benchmarks/bench_pipeline.py --sweep {d['runs']} --rounds {d['rounds']}` on CPython {d['python']}, "
        f"embedded `local[*]` with {d['spark_cores']} cores ({d['cpus']} CPUs): {d['runs']} runs of "
        f"{len(d['scenarios'])} shipped scenarios (left out: {', '.join(d['left_out']) or 'none'}) with faults "
        f"`{d['faults']}`, {d['passed']} passed.", "",
        f"**Load:** {load_average(d['load_before'])} before, {load_average(d['load_after'])} after (1 / 5 / 15 min) "
        f"on {d['cpus']} CPUs.", "",
        f"The same runs on both sides, in {d['rounds']} round(s) (round k takes runs k, k + {d['rounds']}, ...), the "
        "sides taking turns first so that a change of load hits both alike. One process: the runs, then the table written with pyarrow. "
        "Spark: `kraftsim spark sweep`'s own path: the session started (driver JVM options "
        f"`{d.get('java_options', '')}`; class-data archive: {d.get('class_archive', 'not used')}), the sweep's guided tasks through mapInArrow, Parquet partitioned by "
        f"scenario, read back. The start-up ({d['session_start_s']:.1f} s until the session was ready) is billed to "
        "Spark's first turn, and the first Python workers start inside the first job. "
        + ("While Spark starts, the driver runs the lightest runs itself, and it runs a reserve of the lightest "
           "remaining ones beside Spark's job (kraftsim/pipeline/sweep/driver_share.py); the driver column counts "
           "them." if d.get("driver_runs", False) else "Every run ran in a Spark task (`--no-driver-runs`)."), "",
        "| round | runs | order | one process | spark | tasks | driver runs (start + beside) | ratio | load before |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in d["rounds_detail"]:
        lines.append(f"| {r['round']} | {r['runs']} | {' then '.join(r['order'])} | {r['local_s']:.1f} s | "
                     f"{r['spark_s']:.1f} s | {r['spark_tasks']} | {r.get('driver_while_starting', 0)} + "
                     f"{r.get('driver_beside_job', 0)} | {r['local_s'] / r['spark_s']:.2f}x | "
                     f"{load_average(r['load_before'])} |")
    lines += [
        "", "| engine | time | runs/s | vs one process |", "|---|---:|---:|---:|",
        f"| one process | {d['local_s']:.1f} s | {d['runs'] / d['local_s']:.2f} | 1.00x |",
        f"| spark, start-up included | {d['spark_s']:.1f} s | {d['runs'] / d['spark_s']:.2f} | {ratio:.2f}x |", "",
        f"Target: at least {SWEEP_TARGET}x for 1,000 runs on 2 cores: {verdict} in this run"
        + ("" if d["runs"] >= 1000 else f" (only {d['runs']} runs: a check of the benchmark, not the measurement)")
        + ".",
        f"Tables equal apart from wall_s, every round: {'yes' if d['tables_equal'] else 'NO'}. "
        f"Python workers: {d['python_workers']['processes']} processes served {d['python_workers']['tasks']} tasks.",
    ]
    return "\n".join(lines) + "\n"


def render(data: dict[str, Any]) -> str:
    import pyspark

    lines = [
        "# kraftsim.pipeline benchmark",
        "",
        f"`python benchmarks/bench_pipeline.py{' --quick' if data['quick'] else ''}` on CPython {data['python']}, "
        f"{data['machine']}, {data['system']}, PySpark {pyspark.__version__}, embedded `local[*]` with "
        f"{data['spark_cores']} cores ({data['cpus']} CPUs). Best of {data['repeat']} run(s) per configuration.",
        "",
        f"**Load:** the machine was shared with other work during this run: load average "
        f"{load_average(data['load_before'])} (1 / 5 / 15 min) before, {load_average(data['load_after'])} "
        f"after, on {data['cpus']} CPUs. Absolute times are therefore pessimistic; the ratios "
        "between configurations measured in the same run are the meaningful part.",
        "",
        f"Spark session start: {data['session_start_s']:.1f} s; warm-up job (first Python workers): "
        f"{data['warmup_s']:.1f} s — neither is in the times below.",
        "",
        "| job | inputs | engine | tasks | time | throughput | vs one process |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    base = {r["job"]: r["per_second"] for r in data["results"] if r["partitions"] is None}
    for r in data["results"]:
        ratio = r["per_second"] / base[r["job"]]
        lines.append(f"| {r['job']} | {r['items']} {UNIT[r['job']]} | {r['engine']} | {r['partitions'] or '-'} | "
                     f"{r['seconds']:.2f} s | {r['per_second']:.2f} {UNIT[r['job']]}/s | {ratio:.2f}x |")
    lines += [
        "",
        "Each time covers the whole job as its command runs it once inputs are listed: the work, writing the "
        "partitioned Parquet (pyarrow in one process; Spark's writer after a shuffle by the partition column "
        "on Spark) and reading the output back for the summary. corpus: every file of ../shared/oracle "
        "verified (CRC, decode, byte-exact re-encode) with counts per record type; downgrade-matrix: every "
        "log directory, snapshot and bootstrap file loaded and written at every lower metadata.version; "
        "snapshot-cost: the default grid (kraftsim/pipeline/jobs.toml), each point built, written with fsync, "
        "loaded, and measured again under tracemalloc.",
        "",
        "Reading: the oracle corpus is small (15 MB; a few seconds of work in one process), about the size of "
        "Spark's fixed cost per job (scheduling, Arrow transfer to and from the Python workers, the shuffle and "
        "Spark's Parquet writer, reading the output back), so corpus and downgrade-matrix show that cost more "
        "than parallel speed; snapshot-cost, with more work per item, gains from the second core. More "
        "partitions per core balance uneven items better but add per-task cost; with two cores shared by "
        "other work, 2 per core is the default (kraftsim/pipeline/jobs.toml).",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small snapshot-cost grid and one repeat")
    ap.add_argument("--repeat", type=int, default=None, help="runs per configuration (default 2, quick 1)")
    ap.add_argument("--render", action="store_true", help="rewrite the .md from the .json of an earlier run")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pipeline"),
                    help="results path without extension (default: benchmarks/results/pipeline)")
    ap.add_argument("--sweep", type=int, metavar="N", help="only the scenario sweep, N runs (results/pipeline-sweep)")
    ap.add_argument("--rounds", type=int, default=2, metavar="R",
                    help="with --sweep: rounds the runs are split into, sides taking turns first (default 2)")
    ap.add_argument("--no-driver-runs", action="store_true",
                    help="with --sweep: every Spark-side run in a Spark task, as `kraftsim spark sweep --no-driver-runs`")
    ap.add_argument("--scenarios", nargs="+", type=Path, metavar="PATH",
                    help="with --sweep: scenario files or folders (default: the shipped suite but "
                         + ", ".join(SWEEP_LEFT_OUT) + ")")
    args = ap.parse_args()
    if args.sweep:
        from kraftsim.scenario.suite import SUITE_DIR, scenario_files

        out = str(ROOT / "benchmarks" / "results" / "pipeline-sweep")
        files = (scenario_files(args.scenarios) if args.scenarios
                 else [f for f in sorted(SUITE_DIR.glob("*.toml")) if f.name not in SWEEP_LEFT_OUT])
        if args.sweep < 1 or args.rounds < 1 or not files:
            ap.error("--sweep N and --rounds R must be at least 1, and there must be scenario files")
        data = bench_sweep(args.sweep, min(args.rounds, args.sweep), files, driver_runs=not args.no_driver_runs)
        if args.scenarios:
            data["left_out"] = []
        Path(out + ".json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        Path(out + ".md").write_text(render_sweep(data), encoding="utf-8")
        print(f"wrote {out}.md and .json")
        return 0
    if args.render:
        data = json.loads(Path(args.out + ".json").read_text(encoding="utf-8"))
        Path(args.out + ".md").write_text(render(data), encoding="utf-8")
        return 0
    repeat = args.repeat or (1 if args.quick else 2)
    data = bench(repeat, args.quick)
    Path(args.out + ".json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    Path(args.out + ".md").write_text(render(data), encoding="utf-8")
    print(f"wrote {args.out}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
