"""Benchmark: how long a state machine takes to find, shrink and write a counterexample.

Three users' machines with a planted bug each (tests/testing/_planted.py: an invariant that
fails after a roll and a metadata.version downgrade, one after a crash in the middle of a
roll, one after a partition heals) run under the machine's TestCase settings (deadline
off, health checks off, hypothesis's default 100 examples of up to 50 steps), derandomized
and without the example database so that every run explores the same sequences.
Measured per bug: seconds to the first failing example (find), from there to the file
written (shrink, which ends at the shrink budget when it is spent), the steps of the first
failing example and of the file, whether the file is marked cut short, and the load
average (the machine is shared).

`--root DIR` imports kraftsim from another checkout (the code before a change; the planted
machines are loaded from this tree's file); `--label` names the run in the results, where
runs of other labels are kept. Results: benchmarks/results/shrink.{md,json}.

    python benchmarks/bench_shrink.py --label after
    python benchmarks/bench_shrink.py --label before --root /path/to/main --budget none
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PLANTED = ROOT / "tests" / "testing" / "_planted.py"


def _load_planted() -> Any:
    spec = importlib.util.spec_from_file_location("kraftsim_planted_machines", PLANTED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def measure(base: type, budget: float | None) -> dict[str, Any]:
    """Find, shrink and write `base`'s planted bug once; the times and step counts."""
    from hypothesis import settings
    from hypothesis.stateful import run_state_machine_as_test

    from kraftsim.testing import machine as machine_module

    marks: dict[str, tuple[float, int]] = {}
    repro = Path(tempfile.mkdtemp(prefix="kraftsim-bench-shrink-"))

    class Timed(base):  # type: ignore[valid-type, misc]
        repro_dir = repro
        shrink_budget_s = 1e9 if budget is None else budget

        def write_repro(self, *args: Any, **kwargs: Any) -> Path | None:
            now = time.perf_counter()
            marks.setdefault("found", (now, len(self.steps)))
            return super().write_repro(*args, **kwargs)

    Timed.__name__ = Timed.__qualname__ = base.__name__
    cfg = settings(Timed.TestCase.settings, database=None, derandomize=True)
    run = getattr(machine_module, "run_as_test", None) or (lambda cls, s: run_state_machine_as_test(cls, settings=s))
    load_before = os.getloadavg()
    start = time.perf_counter()
    error = None
    try:
        run(Timed, cfg)
    except BaseException as e:  # the planted bug: expected
        error = e
    end = time.perf_counter()
    found_at, steps_found = marks.get("found", (end, 0))
    files = sorted(repro.glob("*.toml"))
    table = tomllib.loads(files[0].read_text("utf-8")) if files else {}
    return {
        "bug": base.__name__, "failure": None if error is None else f"{type(error).__name__}: "
                                                                      f"{str(error).splitlines()[0][:120]}",
        "find_s": round(found_at - start, 1), "shrink_and_write_s": round(end - found_at, 1),
        "total_s": round(end - start, 1), "steps_found": steps_found,
        "steps_written": len(table.get("step", [])),
        "cut_short": bool(table.get("recorded_failure", {}).get("cut_short", False)),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def markdown(data: dict[str, Any]) -> str:
    md = ["# Shrinking a state machine's counterexample", "",
          "`python benchmarks/bench_shrink.py` (tests/testing/_planted.py: three users' machines with a",
          "planted bug each; the machine's TestCase settings, derandomized, no example database).",
          "find: seconds to the first failing example; shrink+write: from there until the scenario file",
          "is written; steps: of the first failing example and of the written file. `before` is",
          "hypothesis's own shrinker with no budget (it stops itself after five minutes of slow progress);",
          "`after` shrinks a failing invariant's run by its steps within the 60 s budget (step_shrink.py).",
          "The machine is shared: compare the load averages.", ""]
    for label, run in data["runs"].items():
        md += [f"## {label}", "", f"{run['when']}, commit {run['commit']}, shrink budget {run['budget']}, "
               f"python {run['python']}", "",
               "| bug | find s | shrink+write s | total s | steps found | steps written | cut short | "
               "load avg before | load avg after |", "|---|---|---|---|---|---|---|---|---|"]
        for r in run["bugs"]:
            md.append(f"| {r['bug']} | {r['find_s']} | {r['shrink_and_write_s']} | {r['total_s']} | "
                      f"{r['steps_found']} | {r['steps_written']} | {'yes' if r['cut_short'] else 'no'} | "
                      f"{' / '.join(map(str, r['load_average_before']))} | "
                      f"{' / '.join(map(str, r['load_average_after']))} |")
        md.append("")
    return "\n".join(md)


def _commit(root: Path) -> str:
    """The checkout's commit, with "+changes" when kraftsim/ differs from it."""
    def git(*words: str) -> str:
        return subprocess.run(["git", "-C", str(root), *words], capture_output=True, text=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "--", "kraftsim") else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="after", help="the run's name in the results (default: after)")
    ap.add_argument("--root", type=Path, default=ROOT, help="import kraftsim from this checkout")
    ap.add_argument("--budget", default=None, help="shrink budget in seconds, or `none` (default: the machine's)")
    ap.add_argument("--bugs", nargs="*", help="only these planted bugs (class names); their rows replace "
                                             "those of an earlier run of the same label")
    ap.add_argument("--commit", help="the commit --root holds (default: git's answer there)")
    ap.add_argument("--no-write", action="store_true", help="print only; keep the stored results")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.root.resolve()))
    budget = None if args.budget in (None, "none") else float(args.budget)
    if args.budget is None:
        from kraftsim.testing import config
        budget = config.shrink_budget()
    planted = _load_planted()
    bugs = [m for m in planted.PLANTED if not args.bugs or m.__name__ in args.bugs]
    commit = args.commit or _commit(args.root)
    run = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
           "python": platform.python_version(), "budget": "none" if budget is None else f"{budget:g} s",
           "bugs": []}
    for machine in bugs:
        result = measure(machine, budget)
        print(json.dumps(result), flush=True)
        run["bugs"].append(result)
    if not args.no_write:
        path = RESULTS / "shrink.json"
        data = json.loads(path.read_text("utf-8")) if path.exists() else {"runs": {}}
        earlier = data["runs"].get(args.label)
        if args.bugs and earlier:  # some bugs again: their rows replace those of the label's earlier run
            run["bugs"] = [r for r in earlier["bugs"] if r["bug"] not in args.bugs] + run["bugs"]
            run["when"] = f"{earlier['when']}, {run['when']}"
        data["runs"][args.label] = run
        RESULTS.mkdir(exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        (RESULTS / "shrink.md").write_text(markdown(data), encoding="utf-8")
        print(f"wrote {RESULTS / 'shrink'}.md and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
