"""Shrinking a failing run by its steps: drop chunks of steps while the same check still fails.

Hypothesis shrinks the choices behind a run, and every attempt re-runs the whole example:
with steps that cost seconds (a roll restarts nodes and waits for each to catch up), its
shrinker spends minutes on attempts that only lower a drawn value, and on a loaded machine
it may not remove a single step in a minute. What a reader of a reproducer needs first is
fewer steps. The recorded steps are concrete ops, so a shorter run is simply a sublist of
them: each attempt replays a sublist through a fresh machine (its `do` and invariants,
as ClusterStateMachine.replay does), and a sublist is kept when the same invariant fails
again. Chunks of half the steps, then a quarter, down to single steps (the ddmin scheme),
so a long run loses most of its steps in a few attempts. An attempt stops at its failure,
and the steps it ran become the new run.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence, TypeVar

S = TypeVar("S")


def shrink(steps: Sequence[S], fails: Callable[[list[S]], list[S] | None], deadline: float) -> tuple[list[S], bool]:
    """The shortest run found by dropping chunks of `steps`; `fails(candidate)` gives the steps
    that ran up to the same failure, or None when it did not fail so. Stops at `deadline`
    (time.monotonic()); the flag says whether shrinking finished (every single step needed)."""
    current = list(steps)
    chunk = max(1, len(current) // 2)
    while True:
        removed = False
        start = 0
        while start < len(current):
            if time.monotonic() >= deadline:
                return current, False
            candidate = current[:start] + current[start + chunk:]
            ran = fails(candidate) if candidate else None
            if ran is not None and len(ran) < len(current):
                current, removed = ran, True
            else:
                start += chunk
        if chunk == 1 and not removed:
            return current, True
        chunk = max(1, chunk // 2) if not removed or chunk > 1 else 1
