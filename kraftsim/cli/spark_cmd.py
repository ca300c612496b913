"""`kraftsim spark JOB`: the pipeline's jobs on Spark (kraftsim/pipeline/jobs.py).

Jobs: `sweep SCENARIO...` (every scenario under every seed, with seeded faults),
`corpus PATH...` (per-file counts, bytes and verification over a tree of metadata
files), `downgrade-matrix PATH...` (every cluster state against every lower
metadata.version), `snapshot-cost` (a grid of cluster shapes). Each writes partitioned
Parquet and prints a summary table. Spark runs embedded (`local[*]`) unless `--master`
names a cluster; `--local` does the same work in this process without Spark.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from kraftsim.cli.common import add_catalog_options, bounded_int, catalog_from_args
from kraftsim.textsafe import own
from kraftsim.errors import KraftsimError, UsageError
from kraftsim.pipeline.defaults import partitions_per_core
from kraftsim.pipeline.jobs import JOBS, JobRun, job, job_inputs, run_local, run_spark
from kraftsim.pipeline.snapshot_cost import AXES, parse_grid
from kraftsim.pipeline.session import DEFAULT_MASTER, parse_conf, start_spark
from kraftsim.storage.safepath import check_output, check_writable

if TYPE_CHECKING:
    import pyarrow as pa

DEFAULT_OUTPUT = "kraftsim-output"

_HELP = {
    "corpus": "per-file and per-record-type counts and bytes, metadata.version and feature levels, and "
              "`log verify` verdicts over a tree of metadata logs, snapshots and bootstrap files",
    "downgrade-matrix": "for each cluster state and each lower metadata.version: lossless or lossy, and every "
                        "item the loss report lists",
    "snapshot-cost": "bytes, records, write and load time and peak memory of the snapshot of each cluster shape "
                     "of a grid",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("spark", help="run the data pipeline's jobs on Spark (embedded local[*] by default)")
    jobs = group.add_subparsers(dest="spark_job", metavar="JOB")
    jobs.required = True
    for name in JOBS:
        p = jobs.add_parser(name, help=_HELP[name], description=_HELP[name])
        if name != "snapshot-cost":
            p.add_argument("paths", nargs="+", metavar="PATH",
                           help="metadata files, __cluster_metadata-0 or log directories, or folders holding them")
        else:
            p.add_argument("--grid", action="append", default=[], metavar="AXIS=V1,V2",
                           help=f"set one axis of the grid ({', '.join(AXES)}; repeatable); the others keep their "
                                "defaults (kraftsim/pipeline/jobs.toml)")
            p.add_argument("--seed", type=int, default=0, help="seed of the synthetic clusters (default: %(default)s)")
            p.add_argument("--no-memory", action="store_true",
                           help="skip the peak-memory pass (tracemalloc), which takes most of the time")
            p.add_argument("--with-kafka", metavar="RELEASE",
                           help="also time Kafka's own load and write of each snapshot, warm and cold (a release "
                                "fetched with `kraftsim kafka fetch RELEASE` on every worker; a JDK 17+; each task "
                                "runs one JVM at a time: use --local or few tasks on a small machine)")
            p.add_argument("--kafka-heap", metavar="SIZE", help="the heap of Kafka's JVMs, fixed as a broker's (-Xmx and -Xms; default: 1g)")
        p.add_argument("-o", "--output", metavar="DIR",
                       help=f"where to write the Parquet output (default: {DEFAULT_OUTPUT}/{name})")
        p.add_argument("--overwrite", action="store_true",
                       help="replace DIR even if it is not an earlier output of this job")
        p.add_argument("--master", metavar="URL",
                       help=f"Spark master: local[N], spark://HOST:PORT, yarn, k8s://... (default: {DEFAULT_MASTER})")
        p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                       help="a Spark setting, passed through (repeatable); wins over kraftsim's defaults")
        p.add_argument("--partitions-per-core", type=bounded_int(1, 1000, "a number of tasks per core"),
                       default=partitions_per_core(), metavar="N",
                       help="Spark tasks per core the work is spread over (default: %(default)s)")
        p.add_argument("--partitions", type=bounded_int(1, 1_000_000, "a number of tasks"), metavar="N",
                       help="exactly N Spark tasks (overrides --partitions-per-core)")
        p.add_argument("--local", action="store_true", help="do the work in this process, without Spark or Java")
        p.add_argument("--no-progress", action="store_true", help="do not report progress on stderr")
        p.add_argument("--json", action="store_true", help="print the run and its summary as one JSON object")
        add_catalog_options(p)
        p.set_defaults(run=run_job)
    _register_sweep(jobs)


def _params(args: argparse.Namespace) -> dict[str, object]:
    params: dict[str, object] = {}
    if args.catalog or args.release:
        catalog_from_args(args)  # refuse a bad catalog here, with its own error, before any worker starts
        params["catalog"] = str(Path(args.catalog).resolve()) if args.catalog else None
        params["release"] = args.release
    if args.spark_job == "snapshot-cost":
        params["seed"] = args.seed
        if args.no_memory:
            params["trace_memory"] = False
        if args.with_kafka:
            from kraftsim.conformance.dist import KafkaUnavailable
            from kraftsim.pipeline.snapshot_cost import kafka_dist

            try:  # missing Java or jars: said here, before any worker starts
                params["kafka_release"] = kafka_dist(args.with_kafka).release.version
            except KafkaUnavailable as e:
                raise UsageError(str(e)) from None
            if args.kafka_heap:
                params["kafka_heap"] = args.kafka_heap
        elif args.kafka_heap:
            raise UsageError("--kafka-heap applies with --with-kafka only")
    return params


def run_job(args: argparse.Namespace) -> int:
    name = args.spark_job
    j = job(name)
    if args.partitions_per_core < 1 or (args.partitions is not None and args.partitions < 1):
        raise UsageError("--partitions and --partitions-per-core must be at least 1")
    grid = parse_grid(args.grid) if name == "snapshot-cost" else None
    items = job_inputs(name, getattr(args, "paths", ()), grid)
    params = _params(args)
    output = args.output or f"{DEFAULT_OUTPUT}/{name}"
    if "://" not in output:
        if args.overwrite:
            _check_overwrite(Path(output), [Path(p) for p in getattr(args, "paths", ())])
        check_writable(output, flag="--output", directory=True)  # (before Spark starts)
    if args.local:
        if args.master or args.conf:
            raise UsageError("--local runs without Spark: --master and --conf do not apply")
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        run, _ = run_local(name, items, params=params, output=output, overwrite=args.overwrite,
                           progress=None if args.no_progress else _local_progress(name))
    else:
        conf = parse_conf(args.conf)
        if "://" not in output:
            Path(output).parent.mkdir(parents=True, exist_ok=True)
        spark, owner = start_spark(args.master, conf, app_name=f"kraftsim {name}", say=_say, label=name)
        try:
            run = run_spark(spark, name, items, output, params=params, partitions=args.partitions,
                            partitions_per_core=args.partitions_per_core, overwrite=args.overwrite,
                            show_progress=not args.no_progress)
        finally:
            if owner:
                spark.stop()
    _print_run(run, j.partition_by, as_json=args.json)
    return 0


def _check_overwrite(output: Path, inputs: list[Path]) -> None:
    """--overwrite removes an existing output folder before the write (without it, only an
    earlier output or an empty folder is replaced): refuse, before any work, one that is, holds
    or lies inside an input (`-o LOGS --overwrite` replaced the logs read with the Parquet) or
    holds the working directory (`-o .` emptied it, then failed with exit 70)."""
    if not output.exists():
        return
    check_output(output, inputs, flag="--output", directory=True)
    cwd, out = Path.cwd().resolve(), output.resolve()
    if cwd == out or out in cwd.parents:
        raise UsageError(f"--output {output}: holds the working directory, which --overwrite would remove; "
                         "write it elsewhere")


def _say(text: str) -> None:
    """A line on stderr about the Spark start (stdout keeps the results)."""
    print(text, file=sys.stderr, flush=True)


def _local_progress(name: str) -> Callable[[int, int], None]:
    tty = sys.stderr.isatty()

    def report(done: int, total: int) -> None:
        if tty:
            cr, erase = own("\r", sys.stderr), own("\x1b[K", sys.stderr)
            sys.stderr.write(f"{cr}{name}: {done}/{total} done{erase}" + (cr + erase if done == total else ""))
            sys.stderr.flush()

    return report


def _print_run(run: JobRun, partition_by: tuple[str, ...], *, as_json: bool = False) -> None:
    if as_json:
        print(json.dumps({"job": run.job, "rows": run.rows, "elapsed_s": round(run.elapsed_s, 3), "engine": run.engine,
                          "partitions": run.partitions, "output": run.output, "partition_by": list(partition_by),
                          "summary": run.summary}, sort_keys=True, default=str))
        return
    print(run.summary_text)
    where = "in this process" if run.engine == "local" else f"on Spark {run.engine} ({run.partitions} tasks)"
    print(f"\n{run.job}: {run.rows} rows in {run.elapsed_s:.1f} s {where}")
    print(f"Parquet: {run.output} (partitioned by {', '.join(partition_by)})")


# ---------------------------------------------------------------------------------- sweep


def _register_sweep(jobs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from kraftsim.pipeline.sweep.engine import SPARK_MIN_RUNS
    from kraftsim.pipeline.sweep.faults import GAP_KINDS

    text = ("run every scenario under every seed (with --faults, a seeded fault schedule injected between the "
            "steps); one Parquet row per run, reproducer files for runs that did not pass, a summary and plots")
    p = jobs.add_parser("sweep", help=text, description=text,
                        epilog="Exit status: 0 when every run passed, 1 when any run failed or could not run (the "
                               "table, summary, reproducers and plots are written all the same), 2 for bad usage.")
    p.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario files or folders of them")
    p.add_argument("--seeds", required=True, metavar="A:B", help="seeds A to B inclusive (or one seed N)")
    p.add_argument("--faults", metavar="SPEC",
                   help=f"KIND=RATE,... with kinds {', '.join(GAP_KINDS)} (probability per gap between steps), "
                        "loss=P (message loss), down=MS (default 3000); e.g. crash=0.2,partition=0.1,loss=0.01")
    p.add_argument("--out", "-o", metavar="DIR", help=f"output folder (default: {DEFAULT_OUTPUT}/sweep)")
    p.add_argument("--overwrite", action="store_true", help="replace DIR even if it is not an earlier sweep output")
    p.add_argument("--master", metavar="URL", help=f"Spark master (default: {DEFAULT_MASTER})")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    p.add_argument("--partitions", type=int, metavar="N",
                   help="exactly N Spark tasks (default: on a local master one per core, taking runs from a queue; "
                        "elsewhere guided bins of runs by estimated cost)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--local", action="store_true", help="run in this process, without Spark")
    how.add_argument("--spark", action="store_true",
                     help=f"use Spark even for fewer than {SPARK_MIN_RUNS} runs (which otherwise run in this process)")
    p.add_argument("--no-driver-runs", action="store_true",
                   help="every run in a Spark task (by default the driver runs the lightest runs while Spark "
                        "starts and its first tasks start, where a small machine's cores would idle)")
    p.add_argument("--include-slow", action="store_true",
                   help="also sweep a directory's scenarios marked `slow = true` (left out by default, unless "
                        "named on their own)")
    p.add_argument("--no-plots", action="store_true", help="do not draw the plots")
    p.add_argument("--no-progress", action="store_true", help="do not report progress on stderr")
    p.add_argument("--json", action="store_true",
                   help="print the outcome as one JSON object (runs, verdict counts, where the outputs are)")
    p.set_defaults(run=run_sweep)


def run_sweep(args: argparse.Namespace) -> int:
    from kraftsim.pipeline.sweep import engine
    from kraftsim.pipeline.sweep.runs import parse_seeds, sweep_inputs
    from kraftsim.pipeline.sweep.summary import summary_text, write_plots
    from kraftsim.scenario.suite import scenario_files, slow_skipped_note

    seeds = parse_seeds(args.seeds)
    files = scenario_files([Path(s) for s in args.scenarios], include_slow=args.include_slow,
                           on_skip=lambda f: print(slow_skipped_note(f), file=sys.stderr))
    if not files:
        raise KraftsimError("no scenario files found in " + ", ".join(args.scenarios))
    items = sweep_inputs(files, seeds, args.faults)
    if args.partitions is not None and args.partitions < 1:
        raise KraftsimError("--partitions must be at least 1")
    out = Path(args.out or f"{DEFAULT_OUTPUT}/sweep")
    engine.prepare_out(out, args.overwrite)
    check_writable(out, flag="--out", directory=True)  # (before the first run)
    table_dir = out / engine.TABLE
    progress = None if args.no_progress else engine.Progress(len(items))
    on_spark = args.spark or args.master is not None or (not args.local and len(items) >= engine.SPARK_MIN_RUNS)
    if not on_spark:
        if args.conf:
            raise KraftsimError("--conf applies to Spark; this sweep runs in this process")
        if not args.local:
            engine.announce(f"sweep: {len(items)} runs (fewer than {engine.SPARK_MIN_RUNS}): running in this "
                            "process, without Spark (--spark to use it anyway)")
        run = engine.run_in_process(items, progress)
        engine.write_local_table(run.table, table_dir)
    else:
        conf = {**engine.SPARK_CONF, **parse_conf(args.conf)}
        run, spark, owner = engine.sweep_on_spark(
            lambda: start_spark(args.master, conf, app_name="kraftsim sweep", say=_say, label="sweep",
                                java_options=engine.LOCAL_DRIVER_JAVA_OPTIONS),
            items, str(table_dir.resolve()), partitions=args.partitions, progress=progress,
            driver_runs=not args.no_driver_runs)
        if owner:
            spark.stop()
    if progress is not None:
        progress.finish()
    engine.write_sidecar(table_dir)
    reproducers = engine.write_reproducers(run.table, out)
    text = summary_text(run.table, engine=run.engine, elapsed_s=run.elapsed_s,
                        driver_runs=len(run.driver) if run.driver else 0)
    (out / "summary.txt").write_text(text, encoding="utf-8")
    if args.json:
        plots = None if args.no_plots else write_plots(run.table, out / "plots")
        verdicts = run.table.column("verdict").to_pylist()
        print(json.dumps({"runs": len(verdicts), "passed": verdicts.count("pass"), "failed": verdicts.count("fail"),
                          "errors": verdicts.count("error"), "engine": run.engine, "parquet": str(table_dir),
                          "summary": str(out / "summary.txt"), "reproducers": [str(r) for r in reproducers],
                          "plots": plots if plots is None or isinstance(plots, str) else [str(p) for p in plots]},
                         sort_keys=True))
        return 1 if verdicts.count("fail") or verdicts.count("error") else 0  # as _sweep_status
    print(text, end="")
    print(f"\nParquet: {table_dir} (partitioned by scenario)")
    if reproducers:
        print(f"Reproducers: {len(reproducers)} files under {out / engine.REPRODUCERS} "
              "(kraftsim scenario run FILE replays one)")
    if not args.no_plots:
        plots = write_plots(run.table, out / "plots")
        print(plots if isinstance(plots, str) else f"Plots: {', '.join(str(p) for p in plots)}")
    return _sweep_status(run.table)


def _sweep_status(table: pa.Table) -> int:
    """0 when every run passed; 1 when any did not (the table, summary and reproducers are
    written all the same), saying so on the last line."""
    verdicts = table.column("verdict").to_pylist()
    failed, errors = verdicts.count("fail"), verdicts.count("error")
    if not failed and not errors:
        print(f"sweep: all {len(verdicts)} runs passed")
        return 0
    print(f"sweep: {failed + errors} of {len(verdicts)} runs did not pass ({failed} failed, {errors} errors): "
          "exit status 1")
    return 1
