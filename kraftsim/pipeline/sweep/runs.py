"""One sweep run: a scenario under a seed (and a fault schedule), as one row of `scenario_sweep`.

Input rows carry the scenario's TOML text (not its path), so a worker on another machine
needs nothing but kraftsim. The row holds the contract-5 result as its JSON line, the
fields a table is filtered on, counts gathered from the simulator's events, and, for a run
that did not pass, the reproducer: the faulted scenario as a file `kraftsim scenario run`
replays to the same result.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from kraftsim import tomlinput
from kraftsim.errors import KraftsimError, UsageError
from kraftsim.pipeline.sweep.faults import FaultSpec, absolute_paths, inject, parse_faults, to_toml
from kraftsim.pipeline.sweep.tasks import run_cost

if TYPE_CHECKING:
    from kraftsim.scenario import ScenarioResult
    from kraftsim.sim import SimEvent

SCHEMA = "scenario_sweep"
#: /dev/shm holds the runs' clusters only when it has at least this much room (the largest
#: shipped scenario writes about 100 MB per run; a container's default /dev/shm is 64 MB).
SCRATCH_MIN_BYTES = 2 << 30
_SNAPSHOT_BYTES = re.compile(r"^Wrote \S+ \((\d+) bytes\)$")


#: The most runs one sweep makes (scenarios x seeds): its inputs are built before any runs, so a
#: range such as 1:100000000 would take all the memory first.
MAX_RUNS = 1_000_000


def sweep_inputs(files: Sequence[Path], seeds: range, faults: str | None) -> list[dict[str, object]]:
    """Every scenario under every seed, scenarios in the given order, then by seed. UsageError
    for more than MAX_RUNS runs, before any is built."""
    from kraftsim.scenario import load_scenario

    if len(files) * len(seeds) > MAX_RUNS:
        raise UsageError(f"{len(files):,} scenario(s) x {len(seeds):,} seeds is {len(files) * len(seeds):,} runs: "
                         f"more than the {MAX_RUNS:,} one sweep makes")
    spec = parse_faults(faults)
    items = []
    for f in files:
        scenario = load_scenario(f)  # refuse an invalid file here, once, with its own error
        text = Path(f).read_text(encoding="utf-8")
        raw = absolute_paths(tomlinput.loads(text), Path(f).resolve().parent)  # (checked by load_scenario)
        for seed in seeds:
            items.append({"scenario": scenario.name, "file": str(f), "raw": raw, "seed": seed,
                          "faults": spec.text(), "steps": len(scenario.steps),
                          "cost": run_cost(raw, seed, spec.text())})
    return items


@functools.cache
def scratch_root() -> str | None:
    """Where runs keep their simulated clusters while they run: KRAFTSIM_SWEEP_SCRATCH if
    set, else /dev/shm when it is a writable memory file system with room (the simulator
    renames and fsyncs its quorum-state files thousands of times per run, which on a disk
    costs a fifth of a run and makes parallel runs queue for it), else the temp folder."""
    chosen = os.environ.get("KRAFTSIM_SWEEP_SCRATCH")
    if chosen:
        return chosen
    shm = "/dev/shm"
    try:
        st = os.statvfs(shm)
        if os.access(shm, os.W_OK) and st.f_bavail * st.f_frsize >= SCRATCH_MIN_BYTES:
            return shm
    except OSError:
        pass
    return None


def parse_seeds(text: str) -> range:
    """`A:B` (A up to and including B) or `N` (seed N alone)."""
    a, sep, b = text.partition(":")
    try:
        lo, hi = int(a), int(b) if sep else int(a)
    except ValueError:
        raise KraftsimError(f"--seeds {text!r}: expected A:B (two whole numbers, A <= B) or N") from None
    if lo < 0 or hi < lo:
        raise KraftsimError(f"--seeds {text!r}: expected 0 <= A <= B")
    return range(lo, hi + 1)


def reproducer_text(item: dict[str, Any]) -> tuple[str, list[str]]:
    """The faulted scenario of one run as TOML, and its fault schedule in words."""
    spec: FaultSpec = parse_faults(item["faults"])
    raw, schedule = inject(item["raw"], item["seed"], spec)
    comments = [f"Reproducer of a sweep run: scenario {item['scenario']} ({item['file']}), seed {item['seed']}, "
                f"faults {item['faults'] or 'none'}.", "Replay: kraftsim scenario run THIS-FILE"]
    comments += [f"  fault: {s}" for s in schedule]
    return to_toml(raw, comments), schedule


def _first_failure(result: ScenarioResult) -> tuple[str | None, int | None]:
    """The first thing that made the run fail, as one line, and the step it happened in."""
    if result.setup_error:
        return result.setup_error, None
    for s in result.steps:
        if not s.ok and not s.skipped:
            if s.error is None:
                return f"step {s.index} ({s.op}): expected the error {s.expected_error!r}, but it succeeded", s.index
            return f"step {s.index} ({s.op}): {s.error}", s.index
    for e in result.expect:
        if not e.ok:
            where = f"after step {e.step}" if e.step is not None else "at the end"
            return f"expect {e.key} {where}: expected {e.expected!r}, found {e.actual!r}", e.step
    for inv in result.invariants:
        if not inv.ok:
            return f"invariant {inv.name} broken {inv.detail or ''}".strip(), None
    return None, None


def sweep_row(item: dict[str, Any]) -> list[dict[str, Any]]:
    """Run one scenario under one seed; one row. An invalid faulted scenario or a crash of the
    runner is a row with verdict 'error', never a lost run."""
    from kraftsim.scenario import parse_scenario, result_json, run_scenario

    started = time.perf_counter()
    row: dict[str, object] = {"scenario": item["scenario"], "seed": item["seed"],
                           "run_id": f"{item['scenario']}/seed-{item['seed']}", "faults": item["faults"],
                           "scenario_steps": item["steps"]}
    counts: dict[str, int] = {}

    def count(event: SimEvent) -> None:
        counts[event.kind] = counts.get(event.kind, 0) + 1

    text, schedule = reproducer_text(item)
    row["fault_schedule"] = schedule
    try:
        scenario = parse_scenario(text, f"{row['run_id']}.toml", Path(item["file"]).resolve().parent)
        with tempfile.TemporaryDirectory(prefix="kraftsim-sweep-", dir=scratch_root()) as tmp:
            outcome = run_scenario(scenario, keep=Path(tmp) / "cluster", on_event=count)
    except Exception as e:  # reported in the row: a sweep of thousands must not stop at one run
        row.update(verdict="error", passed=False, failure=f"{type(e).__name__}: {e}" if not isinstance(
            e, KraftsimError) else str(e), reproducer=text, fenced=[], wall_s=time.perf_counter() - started)
        return [row]
    res = outcome.result
    failure, failed_step = _first_failure(res)
    injected = [s.note is not None and s.note.startswith("sweep fault:") for s in scenario.steps]
    row.update(
        verdict="pass" if res.passed else "fail", passed=res.passed, failure=failure, failed_step=failed_step,
        failed_in_fault=bool(failed_step and injected[failed_step - 1]),
        steps=len(res.steps), steps_failed=sum(not s.ok for s in res.steps),
        expects_failed=sum(not e.ok for e in res.expect),
        invariants_failed=[i.name for i in res.invariants if not i.ok],
        digest=res.digest, metadata_version=res.final.metadata_version.name, leader=res.final.leader,
        time_ms=res.time_ms, events=sum(counts.values()), elections=counts.get("election", 0),
        leader_changes=counts.get("leader", 0), messages_dropped=counts.get("drop", 0),
        fenced=[{"broker": f.broker, "ms": f.ms} for f in res.fenced],
        fenced_ms_max=max((f.ms for f in res.fenced), default=0),
        snapshot_bytes=sum(int(m.group(1)) for s in res.steps for line in s.output
                           if (m := _SNAPSHOT_BYTES.match(line))),
        result=result_json(res), reproducer=None if res.passed else text,
        wall_s=time.perf_counter() - started)
    return [row]
