"""Which voters' disks may lose data, and which have lost data they have not yet got back.

Raft (KRaft included) assumes a voter keeps what it flushed. A torn tail loses a voter's
last batch, a wipe all of it. A committed batch survives only while any majority of the
voters includes one that holds it; once the voters that hold it are no longer a majority,
a leader elected without them overwrites it, in Kafka as in kraftsim. That is a property
of disks, not a bug to find, so the state machine lets a voter's disk lose data only when
(1) the voters whose disks are *damaged* stay a minority, and (2) everything the voter
holds is held by a majority of the voters without it, none of them damaged: a voter that
was down while the others committed (so it lacks the newest committed batches) and a torn
one cannot then elect a leader missing what was committed.

Adding a voter to the static quorum (add-node with the controller role) changes the
majorities at once, in Kafka as in kraftsim (KIP-853 is Kafka's answer): new voters with
empty logs and a voter that lagged behind can become a majority without any voter that
holds the newest committed batch. The machine adds a voter only while the voters that hold
everything committed meet every majority of the larger set.

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
    """The damaged voters of one cluster and every voter's log end on disk, updated after
    every step."""

    voters: tuple[int, ...]
    damaged: dict[int, Damage] = field(default_factory=dict)
    ends: dict[int, int] = field(default_factory=dict)
    #: One past the highest offset ever held by a majority of the voters of the time.
    committed: int = 0

    def may_lose(self, node: int) -> bool:
        """Whether a disk fault on `node` keeps the damaged voters a minority and what
        `node` holds on a majority of the others."""
        if node not in self.voters:
            return True
        if node not in self.damaged and len(self.damaged) + 1 > (len(self.voters) - 1) // 2:
            return False
        mine = self.ends.get(node, 0)
        holders = [v for v in self.voters
                   if v != node and v not in self.damaged and self.ends.get(v, 0) >= mine]
        return len(holders) >= len(self.voters) // 2 + 1

    def may_add_voter(self) -> bool:
        """Whether one more voter (its log empty) leaves every majority of the larger set
        with a voter, not damaged, that holds everything committed."""
        holders = sum(1 for v in self.voters if v not in self.damaged and self.ends.get(v, 0) >= self.committed)
        size = len(self.voters) + 1
        return size - holders < size // 2 + 1

    def may_remove_voter(self, node: int) -> bool:
        """Whether the voters without `node` keep the damaged ones a minority and a majority of
        them, not damaged, holding everything committed (KIP-853's remove-controller)."""
        rest = [v for v in self.voters if v != node]
        if not rest or sum(1 for v in rest if v in self.damaged) > (len(rest) - 1) // 2:
            return False
        holders = sum(1 for v in rest if v not in self.damaged and self.ends.get(v, 0) >= self.committed)
        return holders >= len(rest) // 2 + 1

    def lost(self, node: int, end_before: int) -> None:
        """`node`'s disk lost data; it held offsets below `end_before` before the fault."""
        if node not in self.voters:
            return
        prior = self.damaged.get(node)
        self.damaged[node] = Damage(max(end_before, prior.target if prior else 0))

    def observe(self, sim: Simulation, running: Iterable[int]) -> None:
        """After a step: every voter's log end; a damaged voter that is down starts over;
        one that caught up and fetched again since is whole again."""
        up = set(running)
        self.ends = {v: log_end_on_disk(sim, v) for v in self.voters}
        if self.ends:
            majority_end = sorted(self.ends.values(), reverse=True)[len(self.ends) // 2]
            self.committed = max(self.committed, majority_end)
        for node in sorted(self.damaged):
            d = self.damaged[node]
            if node not in self.voters:  # removed from the voters (remove-controller): no voter's disk now
                del self.damaged[node]
                continue
            if node not in up:
                d.caught_up_at = None
                continue
            end = self.ends[node]
            if end < d.target:
                d.caught_up_at = None
            elif d.caught_up_at is None or end < d.caught_up_at:
                d.caught_up_at = end
            elif end > d.caught_up_at:
                del self.damaged[node]
