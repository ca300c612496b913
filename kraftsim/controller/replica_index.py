"""Partitions by replica role, kept current as the controller replays its log.

Why: every broker event (fencing, controlled shutdown, unfencing, unregistration) asks
which partitions hold the broker in their ISR or ELR, which have no leader, or whether the
broker leads anything; the simulated leaders adding followers back to their ISRs ask which
partitions lack a replica in their ISR, the leader balancing which are not led by their first
replica, and both which the last writes changed. Scanning every partition for that makes one
event cost the size of the cluster; Kafka's controller keeps the same answers in its
BrokersToIsrs index. Here `ReplicaIndex` holds them per topic as bit masks of partition ids,
updated from the partitions each replayed batch changed, so a query costs what it returns.

Results come in `iter_partitions` order (topics by name, then id; partitions by id), the
order the scans in replication.py give, because record order is output. An index answers
only for the topics image it was built or advanced to (`describes`); a caller holding any
other image scans instead.
"""

from __future__ import annotations

from operator import attrgetter
from typing import AbstractSet, Any, Callable, Collection, Iterable, Iterator, Mapping, NamedTuple, Protocol

from kraftsim.image import NO_LEADER, PartitionRegistration, TopicImage, TopicsImage
from kraftsim.image.pmap import CHUNK_BITS, CHUNK_MASK, ChunkMap
from kraftsim.protocol.fastpath import try_ri_add_topics, try_ri_follow, try_ri_records
from kraftsim.protocol.primitives import Uuid


#: A partition with its topic and id (partition_change.PartitionAt).
PartitionAt = tuple[TopicImage, int, PartitionRegistration]
#: topic id -> bit mask of the partition ids that hold a role.
Masks = dict[Uuid, int]
#: A topic, its partitions' value chunks when its ids are 0..n-1 (else None), and a mask of its partition ids.
TopicMask = tuple[TopicImage, "tuple[tuple[PartitionRegistration, ...], ...] | None", int]

#: IndexedPartitions.records_walk: (out, fixed, enter, at, start) -> where it stopped, or None when done.
RecordsWalk = Callable[[list[Any], tuple[Any, ...], Callable[[TopicImage], Any], int, int],
                       "tuple[int, TopicImage, Any, int, int, bool] | None"]

_topic_name = attrgetter("name")
#: What the C follow (fastpath.try_ri_follow) needs to know of the image's layout.
_C_FIXED = (ChunkMap, NO_LEADER, CHUNK_BITS)


class Changes(NamedTuple):
    """What the deltas an index followed changed: the partitions (`touched`), and the topics
    among them that are new, gained partitions or hold a partition whose replicas changed
    (`reshaped`)."""

    touched: Masks
    reshaped: set[Uuid]


class TopicChanges(Protocol):
    """What the index reads of one topic's delta (the image's TopicDelta)."""

    @property
    def fresh(self) -> bool: ...  # started afresh by a TopicRecord

    @property
    def changes(self) -> Mapping[int, PartitionRegistration]: ...


class TopicsChanges(Protocol):
    """What the index reads of a topics delta (the image's TopicsDelta)."""

    @property
    def image(self) -> TopicsImage: ...  # the base

    @property
    def changed(self) -> Mapping[Uuid, TopicChanges]: ...

    @property
    def deleted(self) -> AbstractSet[Uuid]: ...


def _set(by_broker: dict[int, Masks], broker: int, tid: Uuid, bit: int) -> None:
    masks = by_broker.get(broker)
    if masks is None:
        masks = by_broker[broker] = {}
    masks[tid] = masks.get(tid, 0) | bit


def _clear(by_broker: dict[int, Masks], broker: int, tid: Uuid, bit: int) -> None:
    masks = by_broker[broker]
    left = masks[tid] & ~bit
    if left:
        masks[tid] = left
    else:
        del masks[tid]
        if not masks:
            del by_broker[broker]


def _move(by_broker: dict[int, Masks], old: Collection[int], new: Collection[int], tid: Uuid, bit: int) -> None:
    """The partition's brokers were `old` and are `new`."""
    for r in old:
        if r not in new:
            _clear(by_broker, r, tid, bit)
    for r in new:
        if r not in old:
            _set(by_broker, r, tid, bit)


def _topic_mask(masks: Masks, tid: Uuid, lost: int, gained: int) -> None:
    """masks[tid] loses `lost` and gains `gained` (an entry that becomes 0 is removed)."""
    left = (masks.get(tid, 0) & ~lost) | gained
    if left:
        masks[tid] = left
    else:
        del masks[tid]


def _imbalanced(p: PartitionRegistration) -> bool:
    """Whether `p` is led by another than its first replica (or by none)."""
    return bool(p.replicas) and p.leader != p.replicas[0]


def _lacking(p: PartitionRegistration) -> frozenset[int]:
    """The replicas of `p` that its ISR lacks."""
    return frozenset(p.replicas).difference(p.isr)


def mask_ids(mask: int) -> Iterator[int]:
    """The partition ids of a mask, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _all_ids(partitions: Mapping[int, PartitionRegistration]) -> int:
    """The mask of every partition id of a topic."""
    n = len(partitions)
    if n and max(partitions) == n - 1:  # (ids 0..n-1, the usual case)
        return (1 << n) - 1
    mask = 0
    for pid in partitions:
        mask |= 1 << pid
    return mask


def sorted_topics(topics: Iterable[TopicImage]) -> list[TopicImage]:
    """`topics` in TopicsImage.sorted_topics order: by name, then id."""
    out = list(topics)
    if len({t.name for t in out}) == len(out):
        out.sort(key=_topic_name)
    else:
        out.sort(key=lambda t: (t.name, bytes(t.id)))
    return out


class ReplicaIndex:
    """broker -> partitions whose ISR holds it, broker -> partitions whose ELR holds it,
    the leaderless partitions, broker -> how many partitions it leads, broker -> partitions
    whose ISR lacks it (a replica not in the ISR), the partitions not led by their first
    replica, and what the deltas followed since the last `take_changes` changed.

    Built on first use from a topics image (`ensure`), then advanced with each delta
    (`follow`); when it cannot follow (another base), it forgets and is rebuilt on demand.
    """

    __slots__ = ("topics", "isr", "elr", "leaderless", "leads", "lacking", "imbalanced", "_touched", "_reshaped",
                 "_changes_known", "_rank", "_topic", "_dense")

    def __init__(self) -> None:
        self.topics: TopicsImage | None = None  # the image the index describes; None: not built
        self.isr: dict[int, Masks] = {}
        self.elr: dict[int, Masks] = {}
        self.leaderless: Masks = {}
        self.leads: dict[int, int] = {}
        self.lacking: dict[int, Masks] = {}
        self.imbalanced: Masks = {}
        #: what changed since the last take_changes (Changes); known only while the index
        #: followed every delta since (not when it was built in between)
        self._touched: Masks = {}
        self._reshaped: set[Uuid] = set()
        self._changes_known = False
        #: topic id -> its place in sorted_topics order; None until asked (topics come or go: None again)
        self._rank: dict[Uuid, int] | None = None
        #: topic id -> the topic in `topics` (a dict look-up where the image's map hashes the id)
        self._topic: dict[Uuid, TopicImage] = {}
        #: topic id -> (its partitions when last answered, their dense_chunks()): a broker event
        #: answers for thousands of topics, most of them unchanged since the last answer
        self._dense: dict[Uuid, tuple[Mapping[int, PartitionRegistration], Any]] = {}

    # --- keeping it current

    def forget(self) -> None:
        """Drop everything (rebuilt by the next `ensure`)."""
        self.topics = None
        self.isr, self.elr, self.leaderless, self.leads, self.lacking, self.imbalanced = {}, {}, {}, {}, {}, {}
        self._touched, self._reshaped, self._changes_known = {}, set(), False
        self._rank = None
        self._topic = {}
        self._dense = {}

    def ensure(self, topics: TopicsImage) -> bool:
        """Make the index describe `topics` if it describes nothing yet; whether it does now."""
        if self.topics is None:
            items = list(topics.by_id.items())
            self._topic.update(items)
            self._add_topics(items)
            self.topics = topics
        return self.topics is topics

    def describes(self, topics: TopicsImage) -> bool:
        return self.topics is topics

    def take_changes(self) -> Changes | None:
        """What the deltas the index followed since the last call changed, then nothing; None
        when that is not known (the index was built or forgotten since)."""
        changes = Changes(self._touched, self._reshaped) if self._changes_known else None
        self._touched, self._reshaped, self._changes_known = {}, set(), self.topics is not None
        return changes

    def _state(self) -> tuple[Any, ...]:
        """What the C loops change (_speedups.c RI_ISR...)."""
        return (self.isr, self.elr, self.leaderless, self.leads, self.lacking, self.imbalanced, self._touched,
                self._reshaped)

    def follow(self, delta: TopicsChanges, new: TopicsImage) -> None:
        """Advance from `delta.image` to `new`, the image `delta.apply()` gave."""
        if self.topics is None:
            return
        old = delta.image
        if self.topics is not old:
            self.forget()
            return
        if new is not old:
            new_by_id, known, changed = new.by_id, self._topic, delta.changed
            for tid in delta.deleted:
                self._dense.pop(tid, None)
                self._touched.pop(tid, None)
                if tid not in changed:
                    self._drop_topic(tid, known.pop(tid).partitions)
            # The C loop follows the usual topics (changed, not new; see _speedups.c) as
            # _follow_topic does and leaves the others' ids to the loop below.
            fast = try_ri_follow()
            left = None if fast is None else fast(_C_FIXED, self._state(), known, new_by_id, changed, delta.deleted)
            rest: Iterable[Uuid] = changed if left is None else left
            if delta.deleted or any(changed[tid].fresh for tid in rest):  # (C leaves every fresh topic here)
                self._rank = None  # topics came or went (a topic's name is set when it is made)
            for tid in rest:
                td = changed[tid]
                before = known.get(tid)
                after = known[tid] = new_by_id[tid]
                if td.fresh or tid in delta.deleted:  # a topic started afresh: none of the old partitions stay
                    if before is not None:
                        self._drop_topic(tid, before.partitions)
                    self._add_topics([(tid, after)])
                    touched = _all_ids(after.partitions)
                    if touched:
                        self._touched[tid] = touched
                    else:
                        self._touched.pop(tid, None)
                    self._reshaped.add(tid)
                    continue
                assert before is not None
                self._follow_topic(tid, before.partitions, td.changes)
        self.topics = new

    def _follow_topic(self, tid: Uuid, parts: Mapping[int, PartitionRegistration],
                      changes: Mapping[int, PartitionRegistration]) -> None:
        """Move the changed partitions of topic `tid` (`parts`: its partitions before). A broker
        event changes up to every partition: what each broker gains and loses in the topic is
        gathered first, then each broker's mask changes once."""
        chunks = parts.dense_chunks() if type(parts) is ChunkMap else None
        n = len(parts)
        isr_lost: dict[int, int] = {}
        isr_gained: dict[int, int] = {}
        leaders: dict[int, int] = {}  # broker -> partitions led, gained less lost
        leaderless_lost = leaderless_gained = imbalanced_lost = imbalanced_gained = touched = 0
        for pid, p in changes.items():
            o = chunks[pid >> CHUNK_BITS][pid & CHUNK_MASK] if chunks is not None and pid < n else parts.get(pid)
            bit = 1 << pid
            touched |= bit
            if o is None:
                self._add(tid, bit, p)
                self._reshaped.add(tid)
                continue
            if o.replicas is not p.replicas or o.isr is not p.isr:
                _move(self.lacking, _lacking(o), _lacking(p), tid, bit)
            if o.replicas is not p.replicas or o.leader != p.leader:
                was, now = _imbalanced(o), _imbalanced(p)
                if was and not now:
                    imbalanced_lost |= bit
                elif now and not was:
                    imbalanced_gained |= bit
                if o.replicas is not p.replicas:
                    self._reshaped.add(tid)
            old_isr, new_isr = o.isr, p.isr
            if old_isr != new_isr:
                for r in old_isr:
                    if r not in new_isr:
                        isr_lost[r] = isr_lost.get(r, 0) | bit
                for r in new_isr:
                    if r not in old_isr:
                        isr_gained[r] = isr_gained.get(r, 0) | bit
            if o.elr != p.elr:
                _move(self.elr, o.elr, p.elr, tid, bit)
            old_leader, new_leader = o.leader, p.leader
            if old_leader != new_leader:
                if old_leader == NO_LEADER:
                    leaderless_lost |= bit
                else:
                    leaders[old_leader] = leaders.get(old_leader, 0) - 1
                if new_leader == NO_LEADER:
                    leaderless_gained |= bit
                else:
                    leaders[new_leader] = leaders.get(new_leader, 0) + 1
        for r, bits in isr_lost.items():
            _clear(self.isr, r, tid, bits)
        for r, bits in isr_gained.items():
            _set(self.isr, r, tid, bits)
        if leaderless_lost or leaderless_gained:
            _topic_mask(self.leaderless, tid, leaderless_lost, leaderless_gained)
        if imbalanced_lost or imbalanced_gained:
            _topic_mask(self.imbalanced, tid, imbalanced_lost, imbalanced_gained)
        leads = self.leads
        for r, d in leaders.items():
            if d:
                count = leads.get(r, 0) + d
                if count:
                    leads[r] = count
                else:
                    del leads[r]
        if touched:
            self._touched[tid] = self._touched.get(tid, 0) | touched

    def _add_topics(self, items: list[tuple[Uuid, TopicImage]]) -> None:
        """`_add_topic` each topic of `items` in order. The C loop adds the usual topics (dense,
        at most 64 partitions; see _speedups.c ri_add_topics) as _add_topic does, and stops at
        any other for this loop to add."""
        fast = try_ri_add_topics()
        at = 0
        while at < len(items):
            done = None if fast is None else fast(_C_FIXED, self._state(), items, at)
            if done is None:
                fast = None
            elif done == len(items):
                return
            else:
                at = done
            tid, topic = items[at]
            self._add_topic(tid, topic.partitions)
            at += 1

    def _add_topic(self, tid: Uuid, partitions: Mapping[int, PartitionRegistration]) -> None:
        """`_add` each of a topic's partitions: each broker's mask is set once for the topic."""
        isr: dict[int, int] = {}
        elr: dict[int, int] = {}
        lacking: dict[int, int] = {}
        leaderless = imbalanced = 0
        leads = self.leads
        for pid, p in partitions.items():
            bit = 1 << pid
            for r in p.isr:
                isr[r] = isr.get(r, 0) | bit
            for r in p.replicas:  # (_lacking, in replica order: the order the C build meets the brokers)
                if r not in p.isr:
                    lacking[r] = lacking.get(r, 0) | bit
            if p.elr:
                for r in p.elr:
                    elr[r] = elr.get(r, 0) | bit
            if p.leader == NO_LEADER:
                leaderless |= bit
            else:
                leads[p.leader] = leads.get(p.leader, 0) + 1
            if _imbalanced(p):
                imbalanced |= bit
        for r, bits in isr.items():
            _set(self.isr, r, tid, bits)
        for r, bits in elr.items():
            _set(self.elr, r, tid, bits)
        for r, bits in lacking.items():
            _set(self.lacking, r, tid, bits)
        if leaderless:
            _topic_mask(self.leaderless, tid, 0, leaderless)
        if imbalanced:
            _topic_mask(self.imbalanced, tid, 0, imbalanced)

    def _drop_topic(self, tid: Uuid, partitions: Mapping[int, PartitionRegistration]) -> None:
        for pid, p in partitions.items():
            self._remove(tid, 1 << pid, p)

    def _add(self, tid: Uuid, bit: int, p: PartitionRegistration) -> None:
        for r in p.isr:
            _set(self.isr, r, tid, bit)
        for r in p.elr:
            _set(self.elr, r, tid, bit)
        for r in _lacking(p):
            _set(self.lacking, r, tid, bit)
        if _imbalanced(p):
            _topic_mask(self.imbalanced, tid, 0, bit)
        self._add_leader(tid, bit, p.leader)

    def _remove(self, tid: Uuid, bit: int, p: PartitionRegistration) -> None:
        for r in p.isr:
            _clear(self.isr, r, tid, bit)
        for r in p.elr:
            _clear(self.elr, r, tid, bit)
        for r in _lacking(p):
            _clear(self.lacking, r, tid, bit)
        if _imbalanced(p):
            _topic_mask(self.imbalanced, tid, bit, 0)
        self._remove_leader(tid, bit, p.leader)

    def _add_leader(self, tid: Uuid, bit: int, leader: int) -> None:
        if leader == NO_LEADER:
            self.leaderless[tid] = self.leaderless.get(tid, 0) | bit
        else:
            self.leads[leader] = self.leads.get(leader, 0) + 1

    def _remove_leader(self, tid: Uuid, bit: int, leader: int) -> None:
        if leader == NO_LEADER:
            left = self.leaderless[tid] & ~bit
            if left:
                self.leaderless[tid] = left
            else:
                del self.leaderless[tid]
        else:
            n = self.leads[leader] - 1
            if n:
                self.leads[leader] = n
            else:
                del self.leads[leader]

    # --- queries (the index must describe the caller's image: see `describes`)

    def with_isr_member(self, broker_id: int) -> list[PartitionAt]:
        return list(self.iter_isr_member(broker_id))

    def with_elr_member(self, broker_id: int) -> list[PartitionAt]:
        return list(self.iter_elr_member(broker_id))

    def without_leader(self) -> list[PartitionAt]:
        return list(self.iter_without_leader())

    def iter_isr_member(self, broker_id: int) -> "IndexedPartitions":
        """`with_isr_member`, one partition at a time (read it before the index moves on)."""
        return IndexedPartitions(self, self.isr.get(broker_id, {}))

    def iter_elr_member(self, broker_id: int) -> "IndexedPartitions":
        return IndexedPartitions(self, self.elr.get(broker_id, {}))

    def iter_without_leader(self) -> "IndexedPartitions":
        return IndexedPartitions(self, self.leaderless)

    def iter_lacking(self, broker_id: int) -> "IndexedPartitions":
        """The partitions whose ISR lacks replica `broker_id`."""
        return IndexedPartitions(self, self.lacking.get(broker_id, {}))

    def iter_masks(self, masks: Masks) -> "IndexedPartitions":
        """The partitions of `masks` (topic id -> mask of partition ids of the topics the index
        describes), as an answer of the index."""
        return IndexedPartitions(self, masks)

    def leads_any(self, broker_id: int) -> bool:
        """Whether a partition's leader is `broker_id` (NO_LEADER: whether one has none)."""
        return bool(self.leaderless) if broker_id == NO_LEADER else broker_id in self.leads

    def _sorted_ids(self, masks: Masks) -> list[Uuid]:
        """The topic ids of `masks` in sorted_topics order."""
        assert self.topics is not None
        rank = self._rank
        if rank is None:
            rank = self._rank = {t.id: i for i, t in enumerate(sorted_topics(self._topic.values()))}
        return sorted(masks, key=rank.__getitem__)

    def _dense_chunks(self, tid: Uuid, parts: Mapping[int, PartitionRegistration]) -> Any:
        """`parts.dense_chunks()` of topic `tid`'s ChunkMap `parts`, kept while the topic's
        partitions are these (as the C walk keeps them: _speedups.c ri_dense_chunks)."""
        kept = self._dense.get(tid)
        if kept is not None and kept[0] is parts:
            return kept[1]
        assert type(parts) is ChunkMap
        chunks = parts.dense_chunks()
        self._dense[tid] = (parts, chunks)
        return chunks

    def _by_topic(self, masks: Masks) -> Iterator[TopicMask]:
        known = self._topic
        for tid in self._sorted_ids(masks):
            topic = known[tid]
            parts = topic.partitions
            yield topic, self._dense_chunks(tid, parts) if type(parts) is ChunkMap else None, masks[tid]

    def _partitions(self, masks: Masks) -> Iterator[PartitionAt]:
        for topic, chunks, m in self._by_topic(masks):
            if chunks is not None:  # (partition ids 0..n-1: read the chunks directly)
                for pid in mask_ids(m):
                    yield topic, pid, chunks[pid >> CHUNK_BITS][pid & CHUNK_MASK]
            else:
                parts = topic.partitions
                for pid in mask_ids(m):
                    yield topic, pid, parts[pid]


class IndexedPartitions:
    """One answer of the index: iterated, its partitions one at a time (PartitionAt, in
    iter_partitions order); `by_topic()`, topic by topic in the same order, each with the
    bit mask of its partition ids, so that a caller handling many partitions of a topic
    alike (a broker event) needs no tuple per partition. Read it before the index moves on."""

    __slots__ = ("_index", "_masks")

    def __init__(self, index: ReplicaIndex, masks: Masks):
        self._index = index
        self._masks = masks

    def __iter__(self) -> Iterator[PartitionAt]:
        return self._index._partitions(self._masks)

    def by_topic(self) -> Iterator[TopicMask]:
        """(topic, its dense value chunks or None (pmap.ChunkMap.dense_chunks), mask of partition ids)."""
        return self._index._by_topic(self._masks)

    def records_walk(self, plain: "tuple[dict[Any, Any], AbstractSet[str]] | None" = None) -> "RecordsWalk | None":
        """leader_and_isr_updates' C loop over this whole answer (fastpath.try_ri_records:
        `walk(out, fixed, enter, at, start)`, documented in _speedups.c as ri_records), or
        None (fast path off): the caller then goes `by_topic()`. `plain`: (memo, names), the
        memo of every topic whose name is not in `names`, given it without `enter`."""
        fast = try_ri_records()
        if fast is None:
            return None
        index, masks = self._index, self._masks
        order, known = index._sorted_ids(masks), index._topic
        dense = index._dense
        return lambda out, fixed, enter, at, start: fast(out, fixed, order, masks, known, ChunkMap, dense, enter,
                                                         plain, at, start)
