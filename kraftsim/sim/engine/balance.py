"""The active controller moving leaderships back to preferred replicas by itself (Kafka's
auto.leader.rebalance.enable, on by default): a part the Engine owns.

As Kafka's QuorumController: the controller keeps the partitions not led by their first
replica; after a write that leaves some, it schedules a balancing
`leader_imbalance_check_interval_ms` later (leader.imbalance.check.interval.seconds, 300 s),
or 10 ms later when the last one stopped at its 1,000 changes. A balancing is a preferred
election of each such partition (`balance_partition_leaders`); a partition whose first replica
cannot lead stays as it is and is tried again at the next one. A newly active controller
schedules its first balancing one interval after it takes over. Kafka visits the partitions in
its hash set's order; kraftsim in topic id and partition order (the same partitions change,
their records may come in another order).

Kafka's balancing looks at every imbalanced partition again each time; at a million
partitions, with a broker's worth of them unable to move, that is most of a roll's cost. Here
the imbalanced partitions are kept in order (a SortedSet), and those whose preferred election
changed nothing are set aside while what that answer depends on stands: the partition itself
(every write that changes it passes `written`), its topic's replica count, and the image's
cluster, configs and features (compared by identity: an image's components are replaced when a
record touches them). Leaving them out changes no record: the election would change them no
more than the last time. Which partitions a write changed, and which of them are imbalanced
after it, comes from the controller's replica index (kraftsim.sim.engine.written), topic by
topic: only the partitions whose standing changed are looked at one by one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from sortedcontainers import SortedSet

from kraftsim.controller import balance_partition_leaders, mask_ids
from kraftsim.sim.engine.controller_task import ControllerTask, of_topic
from kraftsim.sim.engine.events import Scheduler
from kraftsim.sim.engine.member import Member

if TYPE_CHECKING:
    from kraftsim.controller import ControllerResult
    from kraftsim.controller import Masks, ReplicaIndex
    from kraftsim.image import MetadataImage
    from kraftsim.protocol.primitives import Uuid
    from kraftsim.sim.engine.written import Written
    from kraftsim.sim.types import SimConfig

Key = tuple["Uuid", int]


class BalanceContext(Protocol):
    """What the part needs of the Engine."""

    sched: Scheduler
    config: SimConfig
    controller_id: int | None

    def leader_member(self) -> Member | None: ...
    def controller_image(self) -> MetadataImage | None: ...
    def execute(self, rule: Any) -> ControllerResult | None: ...


class LeaderBalance:
    """See the module docstring. `set_aside=False` tries every imbalanced partition at every
    balancing, as Kafka does (the plain path, for tests that compare the two)."""

    set_aside = True

    def __init__(self, engine: BalanceContext) -> None:
        self.engine = engine
        self.config = engine.config
        #: the imbalanced partitions: to try, in order; tried without a change at `_tried_at`
        self._pending: Any = SortedSet()
        self._tried: Any = SortedSet()
        self._tried_at: tuple[object, ...] = ()
        #: the imbalanced partitions as of the last write (the two sets' members, as masks)
        self._seen: Masks = {}
        self.task = ControllerTask(engine, "leader-balance", lambda: self.config.leader_imbalance_check_interval_ms,
                                   lambda: bool(self._pending or self._tried), self._balance)

    @property
    def enabled(self) -> bool:
        return self.config.auto_leader_rebalance_enable

    def activated(self, m: Member, index: ReplicaIndex) -> None:
        """A controller became active: what is imbalanced in its image (described by `index`),
        a balancing one interval on."""
        self.task.activated(m)
        self._pending, self._tried, self._tried_at, self._seen = SortedSet(), SortedSet(), (), {}
        if not self.enabled:
            return
        self._seen = dict(index.imbalanced)
        self._pending.update((tid, pid) for tid, mask in self._seen.items() for pid in mask_ids(mask))
        self.task.maybe_schedule()

    def written(self, w: Written) -> None:
        """A write of the active controller (its image holds it): a partition it changed is
        tried again at the next balancing if it is imbalanced, and forgotten if not."""
        if not self.enabled:
            return
        pending, tried, seen = self._pending, self._tried, self._seen
        if "RemoveTopicRecord" in w.names:
            for payload in w.records:
                if payload.record_type.name == "RemoveTopicRecord":
                    tid = payload.message.topic_id
                    seen.pop(tid, None)
                    for keys in (pending, tried):
                        for key in of_topic(keys, tid):
                            keys.discard(key)
        for tid in w.reshaped:
            self._retry_topic(tid)  # (its replica count may be another)
        imbalanced = w.index.imbalanced
        for tid, mask in w.touched.items():
            now = imbalanced.get(tid, 0)
            was = seen.get(tid, 0)
            if now != was:  # (only touched partitions change: the rest of `now` is `was`)
                if now:
                    seen[tid] = now
                else:
                    del seen[tid]
                for pid in mask_ids(now & ~was):
                    pending.add((tid, pid))
                for pid in mask_ids(was & ~now):
                    pending.discard((tid, pid))
                    tried.discard((tid, pid))
            kept = now & was & mask if tried else 0
            for pid in mask_ids(kept):  # (changed otherwise: its election may give another answer)
                key = (tid, pid)
                if key in tried:
                    tried.discard(key)
                    pending.add(key)
        self.task.maybe_schedule()

    def _retry_topic(self, tid: Uuid) -> None:
        """Try the partitions of topic `tid` set aside again (a builder reads its replica count)."""
        if self._tried:
            moved = of_topic(self._tried, tid)
            if moved:
                self._tried.difference_update(moved)
                self._pending.update(moved)

    def _balance(self) -> ControllerResult | None:
        """One balancing: a preferred election of each imbalanced partition not set aside."""
        image = self.engine.controller_image()
        standing = () if image is None else (image.cluster, image.configs, image.features)
        if len(standing) != len(self._tried_at) or any(a is not b for a, b in zip(standing, self._tried_at)):
            self._pending.update(self._tried)  # (what their elections depend on changed)
            self._tried.clear()
        tried: list[Key] = []

        def in_order() -> Iterator[Key]:
            # (the rule has taken what it wants before `written` changes the set)
            for key in self._pending:
                tried.append(key)
                yield key

        result = self.engine.execute(lambda ctx: balance_partition_leaders(ctx, in_order()))
        if result is not None and result.ok and self.set_aside:
            changed = {(r.message.topic_id, r.message.partition_id) for r in result.records}
            unchanged = [k for k in tried if k not in changed and k in self._pending]
            self._pending.difference_update(unchanged)
            self._tried.update(unchanged)
            self._tried_at = standing
        return result
