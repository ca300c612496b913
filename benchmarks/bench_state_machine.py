"""Benchmark of kraftsim.testing.ClusterStateMachine: state-machine steps per second.

The default machine (3 controllers, 2 brokers, releases 3.7-3.9, every op the simulator
carries out, add-node, wait and snapshot included; the simulator's invariants after every
event and the model-level properties after every step) runs under hypothesis with
generation only (no shrinking), derandomized, so every run draws the same sequences.
Measured: steps (rules run), runs (clusters created), wall and CPU time, steps per second
of wall time, steps per second of the process's own CPU time (the rate with a core to
itself, waits for the disk aside), and the share of time spent in the model-level checks.
The issue asks for at least 20 steps/s.

The machine may be shared: the load average is recorded. Results:
benchmarks/results/state_machine.{md,json}.

    python benchmarks/bench_state_machine.py
    python benchmarks/bench_state_machine.py --examples 50 --steps 20
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

from benchmarks._common import load_average, utc_now  # noqa: E402
from kraftsim.testing import ClusterStateMachine, properties  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


class Counted(ClusterStateMachine):
    """The default machine (as DefaultMachine in tests/testing/test_default_machine.py),
    counting its steps and runs."""

    steps_run = 0
    runs = 0

    def do(self, op, **args):  # type: ignore[no-untyped-def]
        type(self).steps_run += 1
        return super().do(op, **args)

    def teardown(self) -> None:
        type(self).runs += 1
        super().teardown()


def timed(fn, bucket: list[float]):  # type: ignore[no-untyped-def]
    def wrapper(*a, **k):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            bucket.append(time.perf_counter() - t)
    return wrapper


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=100)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--no-write", action="store_true", help="print only; keep the stored results")
    args = ap.parse_args(argv)

    checks: list[float] = []
    for name in ("unsupported_finalized", "applied_uncommitted", "lossless_downgrade_loss"):
        setattr(properties, name, timed(getattr(properties, name), checks))
    Counted.repro_dir = Path(tempfile.mkdtemp(prefix="kraftsim-bench-repro-"))
    cfg = settings(max_examples=args.examples, stateful_step_count=args.steps, deadline=None, database=None,
                   derandomize=True, phases=(Phase.generate,), suppress_health_check=list(HealthCheck))
    w, c = time.perf_counter(), time.process_time()
    error = None
    try:
        run_state_machine_as_test(Counted, settings=cfg)
    except BaseException as e:  # a failure is reported, not hidden
        error = f"{type(e).__name__}: {str(e).splitlines()[0]}"
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    result = {
        "when": utc_now(), "python": platform.python_version(), "load_average": load_average(),
        "examples": args.examples, "max_steps_per_example": args.steps,
        "runs": Counted.runs, "steps": Counted.steps_run, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "steps_per_s": round(Counted.steps_run / wall, 1) if wall else None,
        # on a shared machine wall time is mostly waiting: steps per second of this process's CPU
        "steps_per_cpu_s": round(Counted.steps_run / cpu, 1) if cpu else None,
        "model_checks_share": round(sum(checks) / wall, 3) if wall else None,
        "failure": error,
    }
    print(json.dumps(result, indent=2))
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "state_machine.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        md = ["# ClusterStateMachine: steps per second", "",
              "`python benchmarks/bench_state_machine.py` (default machine: 3 controllers, 2 brokers, releases",
              "3.7-3.9, every simulated op; the simulator's invariants after every event, the model-level",
              "properties after every step; hypothesis generation only, derandomized).", "",
              "| measure | value |", "|---|---|"]
        md += [f"| {k} | {v} |" for k, v in result.items()]
        (RESULTS / "state_machine.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    return 0 if error is None else 1


if __name__ == "__main__":
    raise SystemExit(main())
