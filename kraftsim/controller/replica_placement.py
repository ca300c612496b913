"""Replica placement for new partitions: Kafka's StripedReplicaPlacer (rack-aware striping)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from kraftsim.image import MetadataImage

# --------------------------------------------------------------------------- replica placement


class InvalidReplicationFactor(Exception):
    """Raised by `place_replicas` with Kafka's StripedReplicaPlacer text."""


@dataclass(frozen=True)
class UsableBroker:
    id: int
    rack: str | None
    fenced: bool


def usable_brokers(image: MetadataImage) -> list[UsableBroker]:
    """Registered brokers not in controlled shutdown and with a log directory that is not
    cordoned (KIP-1066), by id."""
    return [UsableBroker(b.id, b.rack, b.fenced) for b in image.cluster.sorted_brokers()
            if not b.in_controlled_shutdown and not b.all_directories_cordoned]


def _rack_alternated(by_rack: dict[str, list[UsableBroker]]) -> list[UsableBroker]:
    """Brokers ordered rack by rack in turn (racks sorted, brokers by id within a rack)."""
    lanes = [by_rack[r] for r in sorted(by_rack)]
    out: list[UsableBroker] = []
    for i in range(max((len(lane) for lane in lanes), default=0)):
        out += [lane[i] for lane in lanes if i < len(lane)]
    return out


class _RackCursors:
    """One round-robin cursor per rack, each starting at an offset drawn from `rng`."""

    def __init__(self, by_rack: dict[str, list[UsableBroker]], rng: random.Random):
        self.by_rack = by_rack
        self.pos = {r: rng.randrange(len(lane)) for r, lane in sorted(by_rack.items())}

    def take(self, rack: str, chosen: list[UsableBroker]) -> UsableBroker | None:
        lane = self.by_rack[rack]
        for i in range(len(lane)):
            b = lane[(self.pos[rack] + i) % len(lane)]
            if b not in chosen:
                self.pos[rack] = (self.pos[rack] + i + 1) % len(lane)
                return b
        return None


class _Layout:
    """What placement reads of one brokers list, whatever the topic: unfenced brokers by rack,
    in rack-alternated order, their ids, the racks and the fenced brokers."""

    __slots__ = ("by_rack", "unfenced", "ids", "racks", "fenced")

    def __init__(self, brokers: Sequence[UsableBroker]):
        self.by_rack: dict[str, list[UsableBroker]] = {}
        for b in sorted(brokers, key=lambda b: b.id):
            if not b.fenced:
                self.by_rack.setdefault(b.rack or "", []).append(b)
        self.unfenced = _rack_alternated(self.by_rack)
        self.ids = [b.id for b in self.unfenced]
        self.racks = sorted(self.by_rack)
        self.fenced = sorted((b for b in brokers if b.fenced), key=lambda b: b.id)


class PlacementMemo:
    """What `place_replicas` already worked out for one list of usable brokers.

    Why: a CreateTopics request places every topic on the same brokers, and without racks a
    partition's replicas depend only on how many are taken, its leader's position and the
    follower shift (modulo the brokers but one): after a few topics every list is one already
    made (at 30 brokers and RF 3, 870 lists serve any number of partitions). The brokers'
    layout (racks, order, fenced ones) is also the same for every topic. Kept for the brokers
    list object it was first used with; another list starts it afresh."""

    __slots__ = ("brokers", "lists", "layout", "rows")

    def __init__(self) -> None:
        self.brokers: Sequence[UsableBroker] | None = None
        self.lists: dict[tuple[int, int, int], tuple[int, ...]] = {}
        self.layout: _Layout | None = None
        #: (replicas taken, shift) -> the lists of one round, by leader position (single rack)
        self.rows: dict[tuple[int, int], list[tuple[int, ...]]] = {}

    def of(self, brokers: Sequence[UsableBroker]) -> dict[tuple[int, int, int], tuple[int, ...]]:
        """The lists made for `brokers`: (replicas taken, leader position, shift) -> replicas."""
        if self.brokers is not brokers:
            self.brokers, self.lists, self.layout, self.rows = brokers, {}, None, {}
        return self.lists

    def layout_of(self, brokers: Sequence[UsableBroker]) -> _Layout:
        """The layout of `brokers`, made once."""
        self.of(brokers)
        if self.layout is None:
            self.layout = _Layout(brokers)
        return self.layout


def place_replicas(brokers: Sequence[UsableBroker], num_partitions: int, replication_factor: int,
                   rng: random.Random, memo: PlacementMemo | None = None) -> list[list[int]]:
    """Deterministic, balanced replica placement.

    Leaders go round robin over the unfenced brokers (racks alternating) from a start
    index drawn from `rng`. Without racks, followers follow at a shift that grows every
    full round (Kafka's classic assignment), so leaders and replicas spread evenly. With
    racks, a partition's followers come from the other racks first, each rack handing out
    its brokers round robin, and the order of those racks rotates every round; so every
    partition spans as many racks as it can and brokers of a rack share its load evenly.
    Fenced brokers are used only when there are not enough unfenced ones, and never as
    the first replica. `memo`: replica lists kept across calls for the same `brokers`.
    """
    return [list(replicas) for replicas in placed_replicas(brokers, num_partitions, replication_factor, rng, memo)]


def placed_replicas(brokers: Sequence[UsableBroker], num_partitions: int, replication_factor: int,
                    rng: random.Random, memo: PlacementMemo | None = None) -> list[tuple[int, ...]]:
    """`place_replicas` as tuples, those of `memo` shared rather than copied (the same tuple
    object for every partition placed alike: callers may key per-replica-list work on it)."""
    if replication_factor <= 0:
        raise InvalidReplicationFactor(
            f"Invalid replication factor {replication_factor}: the replication factor must be positive.")
    layout = memo.layout_of(brokers) if memo is not None else _Layout(brokers)
    by_rack, unfenced, ids, racks, fenced = layout.by_rack, layout.unfenced, layout.ids, layout.racks, layout.fenced
    if not unfenced:
        raise InvalidReplicationFactor("All brokers are currently fenced.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactor(
            f"The target replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered.")
    n = len(unfenced)
    start, shift = rng.randrange(n), rng.randrange(n)
    cursors = _RackCursors(by_rack, rng)
    take = min(replication_factor, n)
    made = memo.of(brokers) if memo is not None else {}
    if len(racks) == 1 and take == replication_factor and memo is not None:
        return _single_rack_rounds(memo, made, ids, take, num_partitions, start, shift)
    out: list[tuple[int, ...]] = []
    for p in range(num_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas: tuple[int, ...]
        if len(racks) == 1:
            replicas = _replicas(made, ids, take, first, shift % (n - 1) if n > 1 else 0)
        else:
            leader = unfenced[first]
            chosen = [leader]
            li = racks.index(leader.rack or "")
            others = [racks[(li + 1 + j) % len(racks)] for j in range(len(racks) - 1)]
            turn = shift % len(others)
            order = others[turn:] + others[:turn] + [racks[li]]
            while len(chosen) < take:
                for rack in order:
                    if len(chosen) == take:
                        break
                    taken = cursors.take(rack, chosen)
                    if taken is not None:
                        chosen.append(taken)
            replicas = tuple(b.id for b in chosen)
        if take < replication_factor:
            replicas += tuple(fenced[(p + k) % len(fenced)].id for k in range(replication_factor - take))
        out.append(replicas)
    return out


def _single_rack_rounds(memo: PlacementMemo, made: dict[tuple[int, int, int], tuple[int, ...]], ids: list[int],
                        take: int, num_partitions: int, start: int, shift: int) -> list[tuple[int, ...]]:
    """placed_replicas' single-rack loop a round of brokers at a time: partitions k*n.. share
    the shift (the k-th after `shift`), and their leaders go round from `start`, so a round is
    the shift's row of lists (one per leader position, from `made`) rotated by `start`."""
    n = len(ids)
    out: list[tuple[int, ...]] = []
    for k, first_p in enumerate(range(0, num_partitions, n)):
        s = (shift + k) % (n - 1) if n > 1 else 0
        row = memo.rows.get((take, s))
        if row is None:
            row = memo.rows[(take, s)] = [_replicas(made, ids, take, first, s) for first in range(n)]
        rotated = row[start:] + row[:start]
        out += rotated[:num_partitions - first_p]
    return out


def _replicas(made: dict[tuple[int, int, int], tuple[int, ...]], ids: list[int], take: int, first: int,
              s: int) -> tuple[int, ...]:
    """The replicas of a partition led from position `first` at shift `s` (single rack): the j-th
    follower sits (s + j) % (n - 1) + 1 places after the leader; made once per (take, first, s)."""
    key = (take, first, s)
    kept = made.get(key)
    if kept is None:
        n = len(ids)
        kept = made[key] = (ids[first], *[ids[(first + 1 + (s + j) % (n - 1)) % n] for j in range(take - 1)])
    return kept
