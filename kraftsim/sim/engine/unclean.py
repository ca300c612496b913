"""The active controller electing leaders uncleanly by itself (Kafka 3.9+, KAFKA-12670): a part
the Engine owns.

As Kafka's QuorumController: while some partition has no leader, the controller schedules a
look at the leaderless partitions `unclean_leader_election_interval_ms` after a write
(unclean.leader.election.interval.ms, 5 minutes), or 10 ms after a look that stopped at its
1,000 elections. A look elects uncleanly (any live replica, KIP-704's RECOVERING) each such
partition whose topic has unclean.leader.election.enable (the topic's, the controller's or the
cluster's dynamic config); a partition with no live replica stays as it is. This is what makes
a config set after a partition went offline take effect. Releases before 3.9 do not read the
config: their looks write nothing (`elect_unclean_leaders`). Kafka visits the partitions in
its hash table's order; kraftsim in topic id and partition order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from sortedcontainers import SortedSet

from kraftsim.controller import NO_LEADER_CHANGE, elect_unclean_leaders
from kraftsim.image import NO_LEADER
from kraftsim.sim.engine.controller_task import ControllerTask, of_topic
from kraftsim.sim.engine.events import Scheduler
from kraftsim.sim.engine.member import Member

if TYPE_CHECKING:
    from kraftsim.controller import ControllerResult
    from kraftsim.image import MetadataImage
    from kraftsim.protocol.primitives import Uuid
    from kraftsim.sim.types import SimConfig



class UncleanContext(Protocol):
    """What the part needs of the Engine."""

    sched: Scheduler
    config: SimConfig
    controller_id: int | None

    def leader_member(self) -> Member | None: ...
    def execute(self, rule: Any) -> ControllerResult | None: ...


class UncleanElection:
    """See the module docstring."""

    def __init__(self, engine: UncleanContext) -> None:
        self.engine = engine
        self.config = engine.config
        #: the partitions without a leader, in order
        self._leaderless: Any = SortedSet()
        self.task = ControllerTask(engine, "unclean-election", lambda: self.config.unclean_leader_election_interval_ms,
                                   lambda: bool(self._leaderless), self._elect)

    def activated(self, m: Member, image: MetadataImage) -> None:
        """A controller became active: the leaderless partitions of its image, a look one interval on."""
        self.task.activated(m)
        self._leaderless = SortedSet((t.id, pid) for t in image.topics.by_id.values()
                                     for pid, p in t.partitions.items() if p.leader == NO_LEADER)
        self.task.maybe_schedule()

    def written(self, result: ControllerResult) -> None:
        """The records the active controller just wrote."""
        for payload in result.records:
            name = payload.record_type.name
            if name == "PartitionRecord" or name == "PartitionChangeRecord":
                msg = payload.message
                if msg.leader == NO_LEADER_CHANGE:
                    continue
                key = (msg.topic_id, msg.partition_id)
                if msg.leader == NO_LEADER:
                    self._leaderless.add(key)
                else:
                    self._leaderless.discard(key)
            elif name == "RemoveTopicRecord":
                tid = payload.message.topic_id
                for key in of_topic(self._leaderless, tid):
                    self._leaderless.discard(key)
        self.task.maybe_schedule()

    def _elect(self) -> ControllerResult | None:
        """One look: an unclean election of each leaderless partition whose topic allows it."""
        ordered: list[tuple[Uuid, int]] = list(self._leaderless)
        return self.engine.execute(lambda ctx: elect_unclean_leaders(ctx, ordered))
