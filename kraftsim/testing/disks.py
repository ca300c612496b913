"""Which voters' disks have lost data they have not yet durably got back.

Raft (KRaft included) assumes a voter keeps what it flushed. A torn tail loses a voter's
last batch, a wipe all of it; once a majority of the voters have lost a committed batch,
that batch can be lost for good, in Kafka as in kraftsim. That is a property of disks, not
a bug to find, so the state machine keeps the voters whose disks are *damaged* to a
minority at every moment.

A damaged voter stops counting once it holds again, durably, what it held before the
fault: it is running, its log on disk reaches the end it had before the fault, and later
(still running, without a stop in between) its log has grown past that observation. A
follower flushes what it appended before it fetches again, so a log that grew past an
offset after a fetch from it has flushed everything below that offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from kraftsim.sim import Simulation
from kraftsim.testing.properties import log_end_on_disk


@dataclass
class Damage:
    """A voter whose disk lost data: the log end it must reach again, and the end seen
    once it had (None until then)."""

    target: int
    caught_up_at: int | None = None


@dataclass
class VoterDisks:
    """The damaged voters of one cluster, updated after every step."""

    voters: tuple[int, ...]
    damaged: dict[int, Damage] = field(default_factory=dict)

    def may_lose(self, node: int) -> bool:
        """Whether a disk fault on `node` keeps the damaged voters a minority."""
        if node not in self.voters or node in self.damaged:
            return True
        return len(self.damaged) + 1 <= (len(self.voters) - 1) // 2

    def lost(self, node: int, end_before: int) -> None:
        """`node`'s disk lost data; it held offsets below `end_before` before the fault."""
        if node not in self.voters:
            return
        prior = self.damaged.get(node)
        self.damaged[node] = Damage(max(end_before, prior.target if prior else 0))

    def observe(self, sim: Simulation, running: Iterable[int]) -> None:
        """After a step: a damaged voter that is down starts over; one that caught up and
        fetched again since is whole again."""
        up = set(running)
        for node in sorted(self.damaged):
            d = self.damaged[node]
            if node not in up:
                d.caught_up_at = None
                continue
            end = log_end_on_disk(sim, node)
            if end < d.target:
                d.caught_up_at = None
            elif d.caught_up_at is None or end < d.caught_up_at:
                d.caught_up_at = end
            elif end > d.caught_up_at:
                del self.damaged[node]
