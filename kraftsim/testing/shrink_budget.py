"""The time a state machine may spend shrinking a counterexample before the smallest one so
far is written, marked cut short.

Hypothesis has no shrink time limit a test can set: its public controls are `phases` (no
shrinking at all), `max_examples` and the per-example `deadline`; its shrinker stops by
itself only after five minutes of slow progress (an internal constant), and then reports
a longer example than needed. Someone who just found a bug should not wait that long.

So the machine keeps its own clock, per machine class and hypothesis run, from the first
failing example, and remembers the failing example with the fewest steps seen so far that
broke the same check as the first one (how to write its file, and its error). When the next example starts after the budget is
spent, at the next step (or the end of the example under way), that file is written with
`cut_short = true` and `BudgetSpent` ends hypothesis's run. It is a BaseException on
purpose: hypothesis treats an Exception as a new failure to shrink. When the example under
way replays choices hypothesis has seen, it takes the early stop for flaky data generation
and raises that instead, with the BudgetSpent as its context: `spent_in` finds it there. `run_as_test` (what the machine's TestCase runs) turns it back into the
recorded failure, with a note naming the file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


class BudgetSpent(BaseException):
    """The machine ended hypothesis's run: `error` is the failure written at `path` (the
    smallest so far when the budget was spent, or what the step shrinker left)."""

    def __init__(self, error: BaseException, path: Path, how: str):
        super().__init__(f"{how}; the counterexample is written as a scenario: {path}")
        self.error = error
        self.path = path

    def recorded_failure(self) -> BaseException:
        """The failure itself, with a note saying it was cut short and where it is written."""
        self.error.add_note(f"kraftsim: {self}")
        return self.error


@dataclass
class _Clock:
    first_failure: float
    check: object = None
    steps: int = 0
    write: Callable[[], Path] | None = None
    error: BaseException | None = None
    done: bool = False


#: Per machine class: the clock of its current hypothesis run.
_CLOCKS: dict[type, _Clock] = {}


def failed(machine: type, check: object, steps: int, write: Callable[[], Path], error: BaseException) -> None:
    """A (non-final) example of `machine` failed `check` after `steps` steps; `write` writes
    its file marked cut short. The clock starts at the first failure of a run."""
    clock = _CLOCKS.get(machine)
    if clock is None or clock.done:
        clock = _CLOCKS[machine] = _Clock(time.monotonic(), check)
    if clock.check == check and (clock.write is None or steps < clock.steps):
        clock.steps, clock.write, clock.error = steps, write, error


def check(machine: type, budget_s: float) -> None:
    """After an example ended: when the budget is spent, write the smallest failure so far
    and raise BudgetSpent (the run's clock is dropped)."""
    clock = _CLOCKS.get(machine)
    if clock is None or clock.done or clock.write is None or clock.error is None:
        return
    if time.monotonic() - clock.first_failure < budget_s:
        return
    del _CLOCKS[machine]
    raise BudgetSpent(clock.error, clock.write(), f"shrinking was cut short after {budget_s:g} s (the shrink "
                                                  "budget): the smallest failing run so far")


def deadline(machine: type, budget_s: float) -> float:
    """When the run's budget is spent (time.monotonic()), counted from its first failure."""
    clock = _CLOCKS.get(machine)
    return (time.monotonic() if clock is None else clock.first_failure) + budget_s


def ended(machine: type) -> None:
    """The machine ended the run itself (its step shrinker wrote the file)."""
    _CLOCKS.pop(machine, None)


def spent_in(error: BaseException) -> BudgetSpent | None:
    """The BudgetSpent `error` is, or was raised while handling (a bounded walk of the chain)."""
    seen: BaseException | None = error
    for _ in range(10):
        if seen is None or isinstance(seen, BudgetSpent):
            return seen
        seen = seen.__context__
    return None


def final_run_ended(machine: type) -> None:
    """Hypothesis's final run is over: the next failure starts a new run's clock."""
    clock = _CLOCKS.get(machine)
    if clock is not None:
        clock.done = True
