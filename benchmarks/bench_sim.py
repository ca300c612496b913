"""Benchmark of the event-driven simulator (kraftsim.sim.Simulation).

Three workloads, each seeded (the same seed runs the same events), with the invariants
checked (the deep ones after every operation, ImageMatchesLog's per-event form after every
event) and reported:

- idle: 3 controllers and 6 brokers on 4.1 over 600 s of virtual time (fetches, heartbeats,
  the controller's NoOpRecords): the simulator's event machinery alone.
- faults: a fault workload in the spirit of Kafka's RaftEventSimulationTest: 3 controllers
  and 6 brokers on 4.1, 100 topics x 3 partitions, 1% message loss on every link, then 40
  rounds in turn of: the leader crashed and restarted, one node partitioned away and
  healed, a broker crashed and restarted, a quiet run.
- reference (issue 12): 3 controllers and 6 brokers on Kafka 3.9, 1,000 topics x 3
  partitions, a full roll to 4.1 with metadata.version 4.1 finalized, 5 leader crashes
  (each leader crashed, the quorum waited for, the node started again) and one partition
  of the leader healed, to a stable end.

Measured: events run, virtual time, wall and CPU seconds, events per second of wall time
(and per CPU second), the peak RSS, and whether every invariant held. The events/s target
(>= 100,000) is judged on the idle and fault workloads; the reference run's rate is shown
beside them (its time goes to the controller's records, not to events).

The machine may be shared: the load average is recorded. Results:
benchmarks/results/sim.{md,json}.

    python benchmarks/bench_sim.py
    python benchmarks/bench_sim.py --topics 200     # a smaller reference run
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import load_average, utc_now
from kraftsim.sim import SimConfig, Simulation

RESULTS = ROOT / "benchmarks" / "results"
#: Where every simulation's clock starts (Simulation.create), to report virtual time.
T0_MS = 1_735_689_600_000
#: The events/s target of issue 12.
TARGET = 100_000


class Clock:
    def __init__(self) -> None:
        self.phases: list[dict] = []

    def phase(self, name: str, sim: Simulation, fn) -> None:  # type: ignore[no-untyped-def]
        events = sim.engine.events_run
        w, c = time.perf_counter(), time.process_time()
        fn()
        self.phases.append({"phase": name, "wall_s": round(time.perf_counter() - w, 3),
                            "cpu_s": round(time.process_time() - c, 3), "events": sim.engine.events_run - events})


def _clean_heap() -> None:
    """A full collection before a timed run (outside its timing): each run starts from a clean
    heap instead of paying for the garbage of the runs before it."""
    gc.collect()


def reference_run(base: Path, topics: int) -> dict:
    clock = Clock()
    _clean_heap()
    w0, c0 = time.perf_counter(), time.process_time()
    sim = Simulation.create(base / "ref", controllers=3, brokers=6, release="3.9", seed=1, durable=False)
    create_wall = time.perf_counter() - w0
    clock.phases.append({"phase": "create (format 9 nodes, elect, register)", "wall_s": round(create_wall, 3),
                         "cpu_s": round(time.process_time() - c0, 3), "events": sim.engine.events_run})
    clock.phase(f"create {topics} topics x 3 partitions", sim, lambda: sim.create_topics(topics, 3))
    clock.phase("roll 3.9 -> 4.1 (9 nodes)", sim, lambda: sim.roll("4.1"))
    clock.phase("features upgrade --metadata 4.1", sim, lambda: sim.features("upgrade", metadata="4.1"))

    def crashes() -> None:
        for _ in range(5):
            leader = sim.leader()
            sim.crash([leader])
            sim.wait(60_000)
            sim.start([leader])
            sim.wait(60_000)

    clock.phase("5 leader crashes", sim, crashes)

    def partition() -> None:
        leader = sim.leader()
        sim.partition([[leader]])
        sim.run(6_000)
        sim.heal()
        sim.wait(60_000)

    clock.phase("partition of the leader, healed", sim, partition)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    ok = all(r.ok for r in sim.invariants())
    out = {"topics": topics, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "events": sim.engine.events_run,
           "events_per_s": round(sim.engine.events_run / wall),
           "events_per_cpu_s": round(sim.engine.events_run / cpu), "virtual_ms": sim.now_ms - 1_735_689_600_000,
           "metadata_version": sim.metadata_version(), "invariants_ok": ok, "phases": clock.phases,
           "commits_replayed": sim.engine.share.replayed, "commits_adopted": sim.engine.share.adopted}
    sim.close()
    return out


def _rates(sim: Simulation, events: int, wall: float, cpu: float, virtual_ms: int) -> dict:
    return {"events": events, "virtual_ms": virtual_ms, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "events_per_s": round(events / wall), "events_per_cpu_s": round(events / cpu),
            "invariants_ok": all(r.ok for r in sim.invariants())}


def idle_run(base: Path, seconds: int = 600) -> dict:
    """3 controllers + 6 brokers on 4.1, idle for `seconds` of virtual time."""
    sim = Simulation.create(base / "idle", controllers=3, brokers=6, release="4.1", seed=2, durable=False)
    events, t0 = sim.engine.events_run, sim.now_ms
    _clean_heap()
    w, c = time.perf_counter(), time.process_time()
    sim.run(seconds * 1000)
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    out = _rates(sim, sim.engine.events_run - events, wall, cpu, sim.now_ms - t0)
    sim.close()
    return out


def fault_run(base: Path, rounds: int = 40, seed: int = 3) -> dict:
    """The fault workload (see the module docstring); timed from after the topics exist."""
    sim = Simulation.create(base / "faults", controllers=3, brokers=6, release="4.1", seed=seed, durable=False,
                            config=SimConfig(message_loss=0.01))
    sim.create_topics(100, 3)
    rng = random.Random(seed + 4)  # which node a round partitions or crashes
    counts = {"leader crashes": 0, "partitions": 0, "broker crashes": 0, "quiet runs": 0}
    events, t0 = sim.engine.events_run, sim.now_ms
    _clean_heap()
    w, c = time.perf_counter(), time.process_time()
    for k in range(rounds):
        kind = k % 4
        if kind == 0:
            leader = sim.leader()
            if leader is not None:
                sim.crash([leader])
                sim.run(5_000)
                sim.start([leader])
                counts["leader crashes"] += 1
        elif kind == 1:
            sim.partition([[rng.randint(1, 9)]])
            sim.run(8_000)
            sim.heal()
            counts["partitions"] += 1
        elif kind == 2:
            broker = rng.randint(4, 9)
            sim.crash([broker])
            sim.run(12_000)
            sim.start([broker])
            counts["broker crashes"] += 1
        else:
            sim.run(20_000)
            counts["quiet runs"] += 1
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    out = _rates(sim, sim.engine.events_run - events, wall, cpu, sim.now_ms - t0)
    out.update(rounds=rounds, seed=seed, faults=counts)
    sim.close()
    return out


def _median_of(n: int, run: Callable[[int], dict]) -> dict:
    """`run` n times (each the same seeded run; only the timing varies with the machine): the
    run of median events/s, with every run's rate under `rates`. The same seed gives the
    same events, so the runs differ only in how long the shared machine took."""
    runs = sorted((run(k) for k in range(max(1, n))), key=lambda r: r["events_per_s"])
    median = dict(runs[len(runs) // 2])
    median["rates"] = [r["events_per_s"] for r in runs]
    return median


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--no-save", action="store_true", help="print, do not write benchmarks/results")
    ap.add_argument("--repeat", type=int, default=3, metavar="N",
                    help="runs of the idle and fault workloads, the median reported (default 3)")
    args = ap.parse_args(argv)
    load_before = load_average()
    base = Path(tempfile.mkdtemp(prefix="bench-sim-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        idle = _median_of(args.repeat, lambda k: idle_run(base / f"idle-{k}"))
        faults = _median_of(args.repeat, lambda k: fault_run(base / f"faults-{k}"))
        ref = reference_run(base, args.topics)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {"generated": utc_now(), "python": platform.python_version(), "load_before": load_before,
              "load_after": load_average(), "peak_rss_mb": round(rss_mb), "idle": idle, "faults": faults,
              "reference": ref}
    met = min(idle["events_per_s"], faults["events_per_s"]) >= TARGET
    ok = idle["invariants_ok"] and faults["invariants_ok"] and ref["invariants_ok"]
    md = [
        "# kraftsim.sim benchmark (event-driven simulator)", "",
        f"Generated by `python benchmarks/bench_sim.py` on {result['generated']}. CPython {result['python']}; "
        f"load average before: {load_before}, after: {result['load_after']} (2 cores, shared: wall times "
        "include waiting for a CPU, so events per CPU second are given too). Scratch files in /dev/shm.", "",
        "## Targets (issue 12)", "",
        "| target | measured | verdict |", "|---|---:|---|",
        f"| >= 100,000 events/s (idle and fault workloads) | idle: {idle['events_per_s']:,} events/s of wall time "
        f"({idle['events_per_cpu_s']:,} per CPU second); faults: {faults['events_per_s']:,} "
        f"({faults['events_per_cpu_s']:,} per CPU second) | {'met' if met else 'not met'} |",
        f"| reference run < 5 s | {ref['wall_s']} s wall, {ref['cpu_s']} s CPU | "
        f"{'met' if ref['wall_s'] < 5 else 'not met'} |",
        f"| invariants hold (all three runs) | {'yes' if ok else 'NO'} | |", "",
    ]
    if faults["events_per_s"] < TARGET:
        md += ["The fault workload falls short of 100,000 events/s: beyond the event machinery (which the idle "
               "run measures), each of its 100 operations brings the controller's work (a crashed broker's "
               "fencing moves the leadership of its partitions; registrations, heartbeats, elections), a "
               "restart (the node recovers its log, CRC-checked, and replays it) and the deep invariants "
               "(each node's image against a replay of its own files).", ""]
    md += [
        f"For information, the reference run: {ref['events_per_s']:,} events/s of wall time "
        f"({ref['events_per_cpu_s']:,} per CPU second). It is lower because its time goes to the controller's "
        "record work (creating 3,000 partitions, and a roll whose controlled shutdowns and registrations move "
        "the leadership of every partition many times, each change replayed by every node's loader), not to "
        "events: it runs few events, each carrying many records.", "",
        "## Idle cluster: 3 controllers + 6 brokers on 4.1, 600 s of virtual time", "",
        f"{idle['events']:,} events over {idle['virtual_ms']:,} ms of virtual time in {idle['wall_s']} s wall "
        f"({idle['cpu_s']} s CPU): {idle['events_per_s']:,} events/s, the median of "
        f"{len(idle['rates'])} runs ({', '.join(f'{r:,}' for r in idle['rates'])}). Invariants: "
        f"{'all held' if idle['invariants_ok'] else 'FAILED'}.", "",
        "## Fault workload: 3 controllers + 6 brokers on 4.1, 100 topics x 3, 1% message loss", "",
        f"Seed {faults['seed']}, {faults['rounds']} rounds: "
        + ", ".join(f"{n} {what}" for what, n in faults["faults"].items())
        + f". {faults['events']:,} events over {faults['virtual_ms']:,} ms of virtual time in {faults['wall_s']} s "
        f"wall ({faults['cpu_s']} s CPU): {faults['events_per_s']:,} events/s, the median of "
        f"{len(faults['rates'])} runs ({', '.join(f'{r:,}' for r in faults['rates'])}). Invariants: "
        f"{'all held' if faults['invariants_ok'] else 'FAILED'}.", "",
        f"## Reference run: 3 controllers + 6 brokers, {ref['topics']} topics x 3 partitions", "",
        f"{ref['events']:,} events over {ref['virtual_ms']:,} ms of virtual time; final metadata.version level "
        f"{ref['metadata_version']}; peak RSS of the process {result['peak_rss_mb']} MB.", "",
        "| phase | wall | CPU | events |", "|---|---:|---:|---:|",
    ]
    md += [f"| {p['phase']} | {p['wall_s']} s | {p['cpu_s']} s | {p['events']:,} |" for p in ref["phases"]]
    md += ["", f"Commits replayed by a loader: {ref['commits_replayed']:,}; adopted from a node that replayed the "
           f"same batch on the same image: {ref['commits_adopted']:,} (kraftsim.sim.node.commit_share).", "",
           WHERE_THE_TIME_GOES, ""]
    text = "\n".join(md)
    print(text)
    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "sim.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        (RESULTS / "sim.md").write_text(text)
    return 0


#: What profiling the runs showed (cProfile), and what each pass of speed work changed, kept with the results.
WHERE_THE_TIME_GOES = """## Where the time goes

Profiled with cProfile. Reference run: the controller's own record work (creating the partitions; a roll's
controlled shutdowns and registrations move the leadership of every partition many times) and one replay of
each commit per release. Fault and idle workloads: fetches and their replies (append, commit, apply),
heartbeats, NoOpRecords and session expiry, and the deep invariants after each operation.

Left in the fault workload, none of it more than a few per cent on its own but the first: the controller's
work when a crashed broker is fenced and returns (about 10%, heartbeats about 5% more), the first replay of
every commit on a node and on the deep check's shadows (about 8%), a restart's log scans (about 5%), the deep
check's digests and the collector at the end of each operation (about 3% each), and the per-event machinery.

## What made it faster

Four passes. After each, the same seeds gave byte-identical timelines and node directories (faults 3, 11, 29
and 47; idle 2; reference runs of 300 topics with seeds 1 and 5 and of 1,000 topics; a wiped follower with a
torn tail), and every invariant is still checked after every event. Figures per CPU second, main just before
a pass against the pass, in one sitting (the machine's speed moves 5-15% within minutes: only figures of one
sitting compare).

| pass | fault workload | idle | reference run (CPU) |
|---|---:|---:|---:|
| 1 (before: load 1.31; after: the start of pass 2, another sitting) | 49,511 -> 85,917 | 129,021 -> 178,456 | 1.252 s -> 0.800 s |
| 2 (load 1.5-1.7; best of 3, interleaved) | 85,917 -> 102,124 | 178,456 -> 222,591 | 0.800 s -> 0.772 s |
| 3 (load 0.57-0.73; median of 6, interleaved) | 87,894 -> 101,637 | 204,508 -> 213,614 | 0.840 s -> 0.698 s |
| 4 (load 0.55-0.75; middle of 3, interleaved) | 93,061 -> 109,705 | 197,172 -> 227,119 | 0.782 s -> 0.694 s |

1. The deep check's shadow loaders share their replays among themselves (never with the nodes they check);
   digests reuse the sums of immutable image parts; an open log segment keeps the checked parse of its
   newest batches, so a leader's batch is parsed once for all its followers, and a follower appends the
   leader's checked batch as it is; a restart CRC-checks its log once; the network draws its delays with
   `randrange`'s bits but not its checks; a controller's start-up feature scan decodes each batch once.
2. The per-event path: shared commits adopted without the loader's general bookkeeping; applies and
   appends found in the active segment directly; in the controller, leader and ISR updates look each broker
   up once per request; the idle NoOpRecord built once per catalog and metadata.version.
3. Restarts and the collector: a start reads its log once (the read-only open that looks for a refusal
   becomes the node's log); unparsed batches are matched by their bytes against checked bytes applied
   before; a new publisher's first full-image delta is made only when read; quorum-state and
   leader-epoch-checkpoint are written only when their bytes change; the collector's young threshold is
   10,000 instead of 700 while an operation runs (kraftsim/gcpause.py: put back after, never off).
4. Messages are msgspec structs that land in the engine's dispatch directly; timers are pushed without
   the scheduler's wrapper; the event loop keeps the running heap entry; parked fetches answered at one
   moment share their batch lookups; index entries are built without NamedTuple constructors; a restart's
   catch-up holds back commits its loader publishes to nobody; the collector's threshold is raised once
   per operation, not once per part; this file collects fully before each timed run, outside its timing.

## Restructuring of issue 30, against main

The engine composed of parts (Raft, Fetcher, Lifecycle, Reconfig) with per-role raft state (LeaderState,
ElectionState, FollowerState) and strict types, measured against main (454b2dd) in one sitting on
2026-11-29 13:59-14:08 UTC: `bench_sim.py --no-save` (each run the median of 3 idle and 3 fault runs, and
one reference run), main and the branch alternating, 6 runs each, each tree on its own PYTHONPATH. The
machine was shared and busy (load average 7.1-13.0 on 2 cores), so wall times mean little; figures are per
CPU second, and only their spread compares. Seeded outputs are byte-identical (tests/sim/test_seeded_outputs_frozen.py).

| workload | main: median (range) | branch: median (range) |
|---|---:|---:|
| idle, events per CPU second | 129,611 (119,858-150,585) | 138,966 (104,087-158,220) |
| faults, events per CPU second | 58,260 (40,872-66,360) | 63,185 (45,412-65,171) |
| reference run, CPU | 1.264 s (1.050-1.465 s) | 1.221 s (1.113-1.394 s) |

Within noise: the ranges overlap almost wholly and the medians differ by less than the spread of either side.
"""


if __name__ == "__main__":
    raise SystemExit(main())
