"""Benchmark of the scenario runner: the whole shipped suite and one small scenario, as a user
runs them (`python -m kraftsim scenario run ...`, interpreter start-up included), and each
shipped scenario in-process.

The issue's targets: the whole suite under 60 s on this 2-core box, a small scenario under
1 s including start-up. Each measurement is the best of `--repeat` runs; the machine's load
average before and after is recorded, since other work on the same cores changes everything.

    python benchmarks/bench_scenarios.py            # results/scenarios.md and .json
    python benchmarks/bench_scenarios.py --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import load_average, utc_now  # noqa: E402
from kraftsim.scenario import load_scenario  # noqa: E402
from kraftsim.scenario.runner import run_scenario  # noqa: E402
from kraftsim.scenario.suite import is_slow  # noqa: E402

SUITE = ROOT / "scenarios"
SMALL = SUITE / "finalize-beyond-software.toml"
RESULTS = ROOT / "benchmarks" / "results"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cli(args: list[str], repeat: int) -> tuple[float, float, bool]:
    """Best wall time and best CPU time of `repeat` runs, and whether every run printed the same bytes."""
    best, best_cpu, outputs = float("inf"), float("inf"), set()
    for _ in range(repeat):
        t, c = time.perf_counter(), _children_cpu()
        proc = subprocess.run([sys.executable, "-m", "kraftsim", "scenario", "run", *args, "--json"], cwd=ROOT,
                              capture_output=True, timeout=1200)
        best, best_cpu = min(best, time.perf_counter() - t), min(best_cpu, _children_cpu() - c)
        if proc.returncode != 0:
            raise SystemExit(f"scenario run {' '.join(args)} failed: {proc.stderr.decode()[-500:]}")
        outputs.add(proc.stdout)
    return best, best_cpu, len(outputs) == 1


def _startup(repeat: int) -> tuple[float, float]:
    """`kraftsim --version`: the interpreter and the CLI's imports, nothing run (wall, CPU)."""
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), _children_cpu()
        subprocess.run([sys.executable, "-m", "kraftsim", "--version"], cwd=ROOT, capture_output=True, timeout=120)
        best, best_cpu = min(best, time.perf_counter() - t), min(best_cpu, _children_cpu() - c)
    return best, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    before = os.getloadavg()
    files = [f for f in sorted(SUITE.glob("*.toml")) if not is_slow(f)]  # (slow ones: bench_scale.py)
    suite_s, suite_cpu, identical = _cli([str(f) for f in files], args.repeat)
    small_s, small_cpu, _ = _cli([str(SMALL)], args.repeat)
    startup_s, startup_cpu = _startup(args.repeat)
    per: dict[str, float] = {}
    for f in files:
        scenario = load_scenario(f)
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            run_scenario(scenario)
            best = min(best, time.perf_counter() - t)
        per[f.stem] = best
    after = os.getloadavg()
    data = {"when": utc_now(), "python": platform.python_version(), "cpus": os.cpu_count(), "repeat": args.repeat,
            "load_before": before, "load_after": after, "scenarios": len(files), "suite_cli_s": round(suite_s, 3), "suite_cli_cpu_s": round(suite_cpu, 3), "suite_identical_json": identical,
            "small_cli_cpu_s": round(small_cpu, 3), "startup_cpu_s": round(startup_cpu, 3),
            "small_cli_s": round(small_s, 3), "startup_s": round(startup_s, 3), "small": SMALL.stem,
            "in_process_s": {k: round(v, 4) for k, v in per.items()}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scenarios.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    rows = "\n".join(f"| {k} | {v * 1000:.0f} ms |" for k, v in sorted(per.items(), key=lambda kv: -kv[1]))
    md = f"""# Scenario runner benchmark

`python benchmarks/bench_scenarios.py` on CPython {data['python']}, {os.cpu_count()} CPUs, {data['when']}.
Best of {args.repeat} run(s). Load average {load_average(before)} before, {load_average(after)} after
(1 / 5 / 15 min): the machine was shared with other work, so absolute times are pessimistic.

| what | wall time | CPU time | target |
|---|---:|---:|---:|
| whole shipped suite ({len(files)} scenarios), `kraftsim scenario run scenarios --json` | {suite_s:.2f} s | {suite_cpu:.2f} s | < 60 s |
| one small scenario ({SMALL.stem}), start-up included | {small_s:.2f} s | {small_cpu:.2f} s | < 1 s |
| of which the start-up alone (`kraftsim --version`) | {startup_s:.2f} s | {startup_cpu:.2f} s | |
| the same small scenario in-process | {per[SMALL.stem] * 1000:.0f} ms | | |

On a machine shared with other work the wall time includes waiting for a core; the CPU time
(user + system of the `kraftsim` process) is what the run itself costs.

The {args.repeat} runs of the whole suite printed {"identical" if identical else "DIFFERENT"} `--json` output.

The start-up is the interpreter plus the imports of the one command module that runs
(`kraftsim.cli.main` loads command modules lazily); the scenario itself is the in-process
time.

Each shipped scenario in-process (cluster creation, steps, invariants, expectations, digest):

| scenario | time |
|---|---:|
{rows}
"""
    (RESULTS / "scenarios.md").write_text(md, encoding="utf-8")
    print(md)


if __name__ == "__main__":
    main()
