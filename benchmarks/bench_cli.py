"""Benchmark of the CLI's start-up: wall time, CPU time and peak memory of short commands
against `python -c pass` on the same interpreter, in one run.

Each command runs `--repeat` times as its own process, with its bytecode cached as an
installed package has it (interleaved, so that a change of
load hits every command alike); per command the median and best wall time, the median CPU
time (user + system) and the largest peak RSS (`wait4`'s ru_maxrss) are kept. The targets
are the ones the CLI is held to: each command under 0.15 s wall and 40 MiB. On a shared
machine wall times follow the load (it is recorded); CPU time and memory much less so.

    python benchmarks/bench_cli.py             # results/cli.md and results/cli.json
    python benchmarks/bench_cli.py --repeat 5 --no-write
"""

from __future__ import annotations

import argparse
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import load_average, utc_now  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
WALL_TARGET_S = 0.15
RSS_TARGET_MIB = 40.0


def _small_log(tmp: Path) -> Path:
    """A small metadata log segment written by kraftsim (40 records in 14 batches)."""
    from kraftsim.protocol.entries import Payload
    from kraftsim.protocol.registry import default_registry
    from kraftsim.storage.log import MetadataLog

    registry = default_registry()
    rt = registry["ConfigRecord"]
    log = MetadataLog.open(tmp / "__cluster_metadata-0", fsync=False)
    try:
        for i in range(14):
            log.append_records([Payload(rt, 0, rt.new(resource_type=2, resource_name=f"t{i}", name=f"k{j}",
                                                      value="v" * j)) for j in range(1 + i % 4)],
                               epoch=1, timestamp=1_700_000_000_000 + i)
        log.flush()
    finally:
        log.close()
    return tmp / "__cluster_metadata-0" / "00000000000000000000.log"


GNU_TIME = Path("/usr/bin/time")


def _child_env(scratch: Path) -> dict[str, str]:
    """The environment of the measured commands: bytecode cached (in a scratch folder), as an
    installed package runs, whatever this shell's PYTHONDONTWRITEBYTECODE says."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    return env


def _run_once(argv: list[str], scratch: Path) -> tuple[float, float, float | None]:
    """(wall s, cpu s, peak RSS MiB) of one process.

    Peak memory comes from GNU time when the machine has it: a child started straight from
    this (larger) process would report this process's own peak, since Linux carries the
    peak of the address space a child replaces across exec."""
    measure = [str(GNU_TIME), "-f", "%M", "-o", str(scratch / "rss")] if GNU_TIME.is_file() else []
    t0 = time.perf_counter()
    proc = subprocess.Popen(measure + argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=_child_env(scratch))
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed with exit {proc.returncode}: {err[-500:]}")
    rss = int((scratch / "rss").read_text().split()[-1]) / 1024 if measure else None
    return wall, usage.ru_utime + usage.ru_stime, rss


def bench(repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        log = _small_log(Path(tmp))
        py = sys.executable
        commands = {
            "python -c pass": [py, "-c", "pass"],
            "kraftsim --help": [py, "-m", "kraftsim", "--help"],
            "kraftsim log dump (small file)": [py, "-m", "kraftsim", "log", "dump", str(log)],
            "kraftsim features version-mapping": [py, "-m", "kraftsim", "features", "version-mapping"],
        }
        load_before = os.getloadavg()
        samples: dict[str, list[tuple[float, float, float | None]]] = {name: [] for name in commands}
        scratch = Path(tmp)
        for argv in commands.values():  # warm the file cache and .pyc files
            _run_once(argv, scratch)
        for _ in range(repeat):
            for name, argv in commands.items():
                samples[name].append(_run_once(argv, scratch))
        load_after = os.getloadavg()
        log_bytes = log.stat().st_size
    rows = []
    base = statistics.median(s[0] for s in samples["python -c pass"])
    for name, runs in samples.items():
        wall = statistics.median(r[0] for r in runs)
        rows.append({
            "command": name,
            "wall_median_s": round(wall, 4),
            "wall_best_s": round(min(r[0] for r in runs), 4),
            "cpu_median_s": round(statistics.median(r[1] for r in runs), 4),
            "peak_rss_mib": None if runs[0][2] is None else round(max(r[2] or 0 for r in runs), 1),
            "vs_python": round(wall / base, 2),
        })
    return {
        "date": utc_now(),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {platform.system()}, {os.cpu_count()} CPUs",
        "repeat": repeat,
        "small_log_bytes": log_bytes,
        "load_before": list(load_before),
        "load_after": list(load_after),
        "targets": {"wall_s": WALL_TARGET_S, "peak_rss_mib": RSS_TARGET_MIB},
        "rows": rows,
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        "# kraftsim CLI start-up benchmark",
        "",
        f"`python benchmarks/bench_cli.py` on CPython {result['python']}, {result['machine']}, {result['date']}. "
        f"Each command ran {result['repeat']} times as its own process, interleaved with the others.",
        "",
        f"**Load:** {load_average(result['load_before'])} (1 / 5 / 15 min) before, "
        f"{load_average(result['load_after'])} after. Wall times follow the load; CPU time and memory much less.",
        "",
        f"Targets: every kraftsim command under {result['targets']['wall_s']} s wall and "
        f"{result['targets']['peak_rss_mib']:.0f} MiB.",
        "",
        "| command | wall (median) | wall (best) | CPU (median) | peak RSS | wall vs `python -c pass` |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lines.append(f"| {r['command']} | {r['wall_median_s']:.3f} s | {r['wall_best_s']:.3f} s | "
                     f"{r['cpu_median_s']:.3f} s | {_mib(r['peak_rss_mib'])} | {r['vs_python']:.2f}x |")
    lines += [
        "",
        f"The small file is a kraftsim-written segment of {result['small_log_bytes']} bytes. Only the module of the "
        "command being run is imported (kraftsim/cli/main.py); pandas, pyarrow.dataset, Spark and the demo load "
        "only in the commands that use them (tests/reliability/test_startup_imports.py guards this).",
        "",
    ]
    return "\n".join(lines)


def _mib(value: float | None) -> str:
    return "n/a (no GNU time)" if value is None else f"{value:.1f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="runs per command (default 15)")
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    args = ap.parse_args()
    if not 1 <= args.repeat <= 1000:
        ap.error("--repeat: expected 1..1000")
    result = bench(args.repeat)
    text = render(result)
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "cli.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "cli.md").write_text(text)


if __name__ == "__main__":
    main()
