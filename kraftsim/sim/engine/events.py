"""The event loop's parts: a seeded scheduler on virtual milliseconds and a simulated network.

Scheduler: a priority queue of (time, sequence number, action). The sequence number makes
ties deterministic (first scheduled, first run), so one seed and one sequence of
operations always run the same events in the same order.

Network: every message between nodes goes through `send`. It is dropped when its ends
are in different partition groups (at sending or at delivery), or with the configured
loss probability; otherwise it arrives after a seeded delay. Order between two nodes is
not guaranteed, as with separate TCP connections after reconnects.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import msgspec

Action = Callable[[], None]
#: A scheduled event: (time, sequence number, label, node, action).
Event = tuple[int, int, str, int | None, Action]


class Message(msgspec.Struct):
    """One request or response between two nodes: `kind` names it, `epoch` is the sender's
    quorum epoch, `data` its fields (a fresh empty dict by default). A struct made in C: one
    is made for every message."""

    src: int
    dst: int
    kind: str
    epoch: int
    data: dict[str, Any] = {}


class LazyText:
    """Text made only when formatted: `make()` (an event's name, asked after every event and
    needed only in the rare finding)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], str]):
        self.make = make

    def __str__(self) -> str:
        return self.make()


class Scheduler:
    """Timed actions on a virtual clock; `label` says what an action is (for the timeline and
    for naming the event an invariant broke in)."""

    def __init__(self, now_ms: int):
        self.now_ms = now_ms
        self._heap: list[Event] = []
        self._seq = 0

    def push(self, time_ms: int, label: str, node: int | None, action: Action) -> None:
        """Schedule `action` at `time_ms` (now, if that has passed): the one way onto the queue.
        Hot callers keep this bound method in a local or attribute."""
        self._seq += 1
        now = self.now_ms
        heapq.heappush(self._heap, (time_ms if time_ms > now else now, self._seq, label, node, action))

    at = push

    def after(self, delay_ms: int, label: str, node: int | None, action: Action) -> None:
        """`push` at `delay_ms` from now (its body, not a call of it: every timer comes here)."""
        self._seq += 1
        now = self.now_ms
        heapq.heappush(self._heap, (now + delay_ms if delay_ms > 0 else now, self._seq, label, node, action))

    def next_time(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def pop_due(self, end_ms: int) -> Event | None:
        """The next event if it is due by `end_ms` (the clock moves to its time), else None."""
        heap = self._heap
        if heap and heap[0][0] <= end_ms:
            entry = heapq.heappop(heap)
            self.now_ms = entry[0]
            return entry
        return None

    def due(self, end_ms: int) -> Iterator[Event]:
        """The events due by `end_ms`, in order, each taken off the queue (and the clock moved
        to its time) as it is reached: what an event loop iterates. Events pushed while
        iterating are seen as they fall due."""
        heap, pop = self._heap, heapq.heappop
        while heap and heap[0][0] <= end_ms:
            entry = pop(heap)
            self.now_ms = entry[0]
            yield entry

    def advance(self, time_ms: int) -> None:
        """Let the clock reach `time_ms` when no event is due before it (never backwards)."""
        if time_ms > self.now_ms:
            self.now_ms = time_ms

    def labels(self) -> list[str]:
        """What the pending events are, in no particular order (for tests and diagnostics)."""
        return [entry[2] for entry in self._heap]

    def __len__(self) -> int:
        return len(self._heap)


class Network:
    """Seeded delay and loss, and partitions (see the module docstring)."""

    def __init__(self, scheduler: Scheduler, rng: random.Random, *, delay_ms: tuple[int, int], loss: float,
                 deliver: Callable[[Message], None], emit: Callable[[int | None, str, dict[str, object]], None],
                 deliver_drops_partitioned: bool = False):
        """`deliver` gets each message as it lands. With `deliver_drops_partitioned` it is
        handed the message directly and must itself drop one whose ends are in different
        groups by then (`groups`, `drop`), as `_arrive` does: one call per message, not two."""
        self.scheduler = scheduler
        self.rng = rng
        self.delay_ms = delay_ms
        self.loss = loss
        self.deliver = deliver
        self.emit = emit
        self.groups: dict[int, int] = {}  # node -> partition group; absent: the "everyone else" group
        self.verbose = True
        lo, hi = delay_ms
        #: The delay draw, as `rng.randrange(lo, hi + 1)` makes it (the same bits, the same
        #: numbers), without its argument checks on every message: n values, k bits each.
        self._delay_n = hi - lo + 1
        self._delay_k = self._delay_n.bit_length()
        self._getrandbits = rng.getrandbits
        self._random = rng.random
        #: (one bound method for every message's arrival)
        self._arrive_at = deliver if deliver_drops_partitioned else self._arrive
        self._push = scheduler.push

    def reachable(self, a: int, b: int) -> bool:
        return self.groups.get(a, -1) == self.groups.get(b, -1)

    def partition(self, groups: Sequence[Sequence[int]]) -> None:
        self.groups = {n: i for i, g in enumerate(groups) for n in g}

    def heal(self) -> None:
        self.groups = {}

    def describe(self) -> Mapping[int, int]:
        return dict(sorted(self.groups.items()))

    def send(self, msg: Message) -> None:
        groups = self.groups  # (reachable(), inlined: every message passes here)
        if groups and groups.get(msg.src, -1) != groups.get(msg.dst, -1):
            self.drop(msg, "partitioned")
            return
        loss = self.loss
        if loss > 0 and self._random() < loss:
            self.drop(msg, "lost")
            return
        n = self._delay_n
        if n <= 1:  # (hi <= lo)
            delay = self.delay_ms[0]
        else:  # rng.randrange(lo, hi + 1) (randint's own definition), inlined
            k, bits = self._delay_k, self._getrandbits
            r = bits(k)
            while r >= n:
                r = bits(k)
            delay = self.delay_ms[0] + r
        if self.verbose:
            self.emit(msg.src, "send", {"to": msg.dst, "message": msg.kind, "epoch": msg.epoch})
        self._push(self.scheduler.now_ms + delay, msg.kind, msg.dst, partial(self._arrive_at, msg))

    def _arrive(self, msg: Message) -> None:
        groups = self.groups
        if groups and groups.get(msg.src, -1) != groups.get(msg.dst, -1):
            self.drop(msg, "partitioned")
            return
        self.deliver(msg)

    def drop(self, msg: Message, why: str) -> None:
        """A message that does not arrive: `why` is \"partitioned\" or \"lost\" (a timeline event)."""
        self.emit(msg.src, "drop", {"to": msg.dst, "message": msg.kind, "epoch": msg.epoch, "why": why})
