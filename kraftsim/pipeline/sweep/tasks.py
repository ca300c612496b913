"""How a sweep's runs become Spark tasks: an estimate of each run's cost, and guided bins.

Runs differ in cost by two orders of magnitude (a one-step refusal takes tens of
milliseconds, a roll of 100,000 partitions a minute), so tasks are bins of runs by estimated
cost, not by count. The bins follow guided self-scheduling: the heaviest runs first, in
large bins (a share of what is left per core), then smaller and smaller ones. Spark hands
tasks to free cores in partition order, so the large bins keep every core busy with few
task start-ups, and the small ones at the end absorb the estimate's errors: no core waits
long for the last task while another idles.
"""

from __future__ import annotations

from typing import Sequence

from kraftsim.pipeline.sweep.faults import inject, parse_faults

#: The estimate is in steps: a simulated step of a small cluster costs about as much as
#: this many created partitions (about 0.07 s against 0.7 ms each, measured on the suite).
PARTITIONS_PER_STEP = 100
#: Each bin gets 1/(GUIDE x cores) of the weight still to place ...
GUIDE = 2
#: ... but never less than 1/(TAIL x cores) of the whole: the smallest tasks at the end.
#: A core that finds no task left idles until the others end theirs, about half a last task;
#: on 1,000 runs of the shipped suite (2 cores, the runs' measured times scheduled as Spark
#: hands out tasks) the cores ended 1.0 s apart at 48 (15 tasks), 0.2 s apart at 200 (20).
TAIL = 200


def run_cost(raw: dict[str, object], seed: int, faults: str) -> float:
    """The estimated cost of one run: its steps once the seed's faults are injected, plus the
    partitions its create-topics steps make (in steps), plus one for the cluster's start."""
    faulted, _ = inject(raw, seed, parse_faults(faults))
    steps = faulted.get("step", [])
    partitions = sum(int(s.get("count", 1)) * int(s.get("partitions", 1))
                     for s in steps if s.get("op") == "create-topics")
    return 1.0 + len(steps) + partitions / PARTITIONS_PER_STEP


def heaviest_first(weights: Sequence[float]) -> list[int]:
    """Indices into `weights`, the heaviest first (ties in input order)."""
    return sorted(range(len(weights)), key=lambda i: (-weights[i], i))


def guided_bins(weights: Sequence[float], cores: int, *, guide: int = GUIDE, tail: int = TAIL) -> list[list[int]]:
    """Indices into `weights` in bins, heaviest items first: each bin is filled to
    max(left / (guide x cores), total / (tail x cores)) of weight, where `left` is the
    weight not yet placed. Each bin lists its items in input order. Deterministic."""
    cores = max(1, cores)
    order = heaviest_first(weights)
    total = float(sum(weights))
    smallest = total / (tail * cores)
    left = total
    bins: list[list[int]] = []
    k = 0
    while k < len(order):
        target = max(left / (guide * cores), smallest)
        b: list[int] = []
        filled = 0.0
        while k < len(order) and (not b or filled + weights[order[k]] / 2 <= target
                                  or left - filled < smallest / 2):  # no crumb of a last task
            b.append(order[k])
            filled += weights[order[k]]
            k += 1
        left -= filled
        bins.append(sorted(b))
    return bins
