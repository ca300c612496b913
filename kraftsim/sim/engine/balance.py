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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from kraftsim.controller import NO_LEADER_CHANGE, balance_partition_leaders
from kraftsim.sim.engine.events import Scheduler
from kraftsim.sim.engine.member import Member

if TYPE_CHECKING:
    from kraftsim.controller import ControllerResult
    from kraftsim.image import MetadataImage
    from kraftsim.protocol.primitives import Uuid
    from kraftsim.sim.types import SimConfig

#: Kafka's delay of a balancing that follows one stopped at its limit.
IMMEDIATE_MS = 10


class BalanceContext(Protocol):
    """What the part needs of the Engine."""

    sched: Scheduler
    config: SimConfig
    controller_id: int | None

    def leader_member(self) -> Member | None: ...
    def controller_image(self) -> MetadataImage | None: ...
    def execute(self, rule: Any) -> ControllerResult | None: ...


class LeaderBalance:
    """See the module docstring."""

    def __init__(self, engine: BalanceContext) -> None:
        self.engine = engine
        self.config = engine.config
        self._imbalanced: set[tuple[Uuid, int]] = set()
        self._scheduled = False
        self._immediately = False
        self._balancing = False  # (its own write schedules nothing: it decides the next one itself)
        #: the controller (node, epoch) the state belongs to
        self._owner: tuple[int, int] | None = None

    @property
    def enabled(self) -> bool:
        return self.config.auto_leader_rebalance_enable

    def activated(self, m: Member, image: MetadataImage) -> None:
        """A controller became active: what is imbalanced in its image, a balancing one interval on."""
        self._owner, self._scheduled, self._immediately = (m.id, m.epoch), False, False
        self._imbalanced = set()
        if not self.enabled:
            return
        for t in image.topics.sorted_topics():
            for pid, p in t.sorted_partitions():
                if p.replicas and p.leader != p.replicas[0]:
                    self._imbalanced.add((t.id, pid))
        self._maybe_schedule()

    def written(self, result: ControllerResult) -> None:
        """The records the active controller just wrote (its image holds them)."""
        if not self.enabled:
            return
        image = self.engine.controller_image()
        if image is None:
            return
        for payload in result.records:
            name = payload.record_type.name
            if name == "PartitionRecord":
                msg = payload.message
                key = (msg.topic_id, msg.partition_id)
                if msg.replicas and msg.leader != msg.replicas[0]:
                    self._imbalanced.add(key)
                else:
                    self._imbalanced.discard(key)
            elif name == "PartitionChangeRecord":
                msg = payload.message
                if msg.leader == NO_LEADER_CHANGE and msg.replicas is None:
                    continue  # (neither its leader nor its replicas changed)
                key = (msg.topic_id, msg.partition_id)
                topic = image.topics.get_topic(key[0])
                p = topic.partitions.get(key[1]) if topic is not None else None
                if p is not None and p.replicas and p.leader != p.replicas[0]:
                    self._imbalanced.add(key)
                else:
                    self._imbalanced.discard(key)
            elif name == "RemoveTopicRecord":
                tid = payload.message.topic_id
                self._imbalanced = {k for k in self._imbalanced if k[0] != tid}
        self._maybe_schedule()

    def _maybe_schedule(self) -> None:
        if self._scheduled or self._balancing or not self._imbalanced or self._owner is None:
            return
        self._scheduled = True
        owner = self._owner
        delay = IMMEDIATE_MS if self._immediately else self.config.leader_imbalance_check_interval_ms

        def balance() -> None:
            m = self.engine.leader_member()
            if self._owner != owner or m is None or (m.id, m.epoch) != owner or self.engine.controller_id != m.id:
                return  # (another controller took over: it scheduled its own)
            ordered = sorted(self._imbalanced, key=lambda k: (bytes(k[0]), k[1]))
            self._balancing = True
            try:
                result = self.engine.execute(lambda ctx: balance_partition_leaders(ctx, ordered))
            finally:
                self._balancing = False
            self._scheduled = False
            self._immediately = bool(result is not None and result.ok and result.response)
            self._maybe_schedule()

        self.engine.sched.after(delay, "leader-balance", owner[0], balance)
