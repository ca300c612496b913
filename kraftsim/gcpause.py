"""The cycle collector held back: paused while a bulk load allocates, run less often while
the simulator works.

Paused (`collector_paused`). Why: loading a 1,000,000-partition snapshot allocates a few hundred thousand container
objects (topic deltas, per-topic read-only views, trie nodes) and keeps all of them. Each
time the collector's thresholds trip during that growth it walks every tracked object
again: measured at 1,000,000 partitions, six full collections cost about 0.7 s of a ~2 s
load. Nothing a load allocates forms a cycle, so the pause loses nothing; the new objects
are examined once, by the next collection after it. The codec's C decoder pauses the
collector for the same reason.

Less often (`fewer_collections`, `working`). The simulator allocates container objects on
every event (heap entries, messages, batch parses, image parts) while the images and logs
of a whole cluster stay alive. The collector runs after every 700 net container
allocations; each run walks the young objects, and every tenth one the older generation
too: with a cluster's state alive that took 10 to 15% of the simulator's fault workload
(benchmarks/results/sim.md). At a million partitions the old generations were the cost at
first: every middle collection walks what survived since the last, and a full one every
tracked object of a 4 GB heap (0.7 s each); with Python's thresholds there the collector took
31 of 220 CPU s (193 middle and 16 full collections), with a young threshold of 50,000 and a
middle one of 20 during operations 17 s (31 and 3). Once the replay, the controller's records
and the snapshot writer ran in C, the collector's share grew back: 18.3 of 163 CPU s (1,279
young, 96 middle, 8 full collections). With `YOUNG` 200,000 and `MIDDLE` 40, also for the whole
of a scenario's run (its steps, and the checks between them), it took 8.9 s (134 young, 3
middle, no full one) for 370 MB more peak memory, 4.4 -> 4.8 GB
(benchmarks/results/scale-notes.md). While the simulator runs an operation (its events, then
the deep invariants) or a scenario, the young generation's threshold is raised to `YOUNG` and
the middle one's to `MIDDLE` (the oldest is kept), and both are put back as they were when the
outermost such call returns, also on an exception. The collector is never turned off there,
since simulated state can form cycles: they are still collected, after at most `YOUNG` net
allocations instead of 700, which bounds the extra garbage held at any moment. A caller who set
higher thresholds, or disabled the collector, keeps them.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable
from contextlib import contextmanager
from typing import Iterator, TypeVar


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run a block with the cycle collector off; it is back on after (if it was on before)."""
    was_on = gc.isenabled()
    if was_on:
        gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


F = TypeVar("F", bound=Callable[..., object])

#: The young generation's threshold while the simulator works (Python's default: 700).
YOUNG = 200_000
#: The middle generation's (young collections between its own; Python's default: 10).
MIDDLE = 40

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] | None = None


class fewer_collections:  # noqa: N801 (used as a function: `with fewer_collections():`)
    """Raise the young and middle generations' thresholds to `YOUNG` and `MIDDLE` for the
    body (see the module docstring: never off)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _depth, _saved
        with _lock:
            if _depth == 0:
                saved = gc.get_threshold()
                if saved[0] < YOUNG or saved[1] < MIDDLE:
                    _saved = saved
                    gc.set_threshold(max(saved[0], YOUNG), max(saved[1], MIDDLE), *saved[2:])
            _depth += 1

    def __exit__(self, *exc: object) -> None:
        global _depth, _saved
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None


def working(method: F) -> F:
    """`method` run inside `fewer_collections` as a whole: a simulation's operation (its
    events, then the deep invariants) changes the threshold once, not once per part; each
    change back to a low threshold with thousands of young objects pending starts a
    collection at once."""

    @functools.wraps(method)
    def run(*args: object, **kwargs: object) -> object:
        with fewer_collections():
            return method(*args, **kwargs)

    return run  # type: ignore[return-value]


def leave_to_exit() -> None:
    """The process ends next: what it still holds is left to the operating system. At
    shutdown the collector walks and frees every object still tracked; after a scenario run
    at a million partitions that is the closed simulation's state, 2.2 s of 98. Frozen
    (`gc.freeze`), it is never collected; shutdown still runs the atexit handlers, waits for
    threads and flushes files. Only for a process that exits right after: one that goes on
    would keep all of it."""
    gc.freeze()
