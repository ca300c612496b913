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
session, the same runs on both sides, in `--pairs P` pairs whose sides each run in a fresh
process (Spark's whole start-up billed to every Spark side), taking turns first; the
verdict is on the median ratio (benchmarks/_sweep_bench.py). On two quiet cores:

    python benchmarks/bench_pipeline.py --sweep 1000 --pairs 3
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
from benchmarks._sweep_bench import SWEEP_LEFT_OUT, bench_sweep, default_files, render_sweep, run_side  # noqa: E402
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
    ap.add_argument("--pairs", type=int, default=3, metavar="P",
                    help="with --sweep: pairs of one-process and Spark sweeps, each side in a fresh process (default 3)")
    ap.add_argument("--no-driver-runs", action="store_true",
                    help="with --sweep: every Spark-side run in a Spark task, as `kraftsim spark sweep --no-driver-runs`")
    ap.add_argument("--scenarios", nargs="+", type=Path, metavar="PATH",
                    help="with --sweep: scenario files or folders (default: the shipped suite but "
                         + ", ".join(SWEEP_LEFT_OUT) + ")")
    ap.add_argument("--sweep-side", choices=("local", "spark"), help=argparse.SUPPRESS)  # one side, in a child
    ap.add_argument("--table", type=Path, help=argparse.SUPPRESS)  # where that side writes its table
    args = ap.parse_args()
    if args.sweep:
        from kraftsim.scenario.suite import scenario_files

        files = scenario_files(args.scenarios) if args.scenarios else default_files()
        if args.sweep < 1 or args.pairs < 1 or not files:
            ap.error("--sweep N and --pairs P must be at least 1, and there must be scenario files")
        if args.sweep_side:
            if args.table is None:
                ap.error("--sweep-side needs --table DIR")
            print(json.dumps(run_side(args.sweep_side, args.sweep, files, args.table,
                                      driver_runs=not args.no_driver_runs)))
            return 0
        out = str(ROOT / "benchmarks" / "results" / "pipeline-sweep")
        data = bench_sweep(args.sweep, args.pairs, files, scenarios=args.scenarios,
                           driver_runs=not args.no_driver_runs)
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
