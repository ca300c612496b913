"""A write the active controller schedules for itself, as Kafka's QuorumController schedules
maybeBalancePartitionLeaders and maybeElectUncleanLeaders: after any write, while the task has
work, one interval later, or IMMEDIATE_MS later when its last run stopped at its limit. Its own
write schedules nothing (the run decides the next one itself), and a run meant for a controller
that is no longer active does nothing (the active one scheduled its own when it took over).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from kraftsim.sim.engine.events import Scheduler
from kraftsim.sim.engine.member import Member

if TYPE_CHECKING:
    from kraftsim.controller import ControllerResult
    from kraftsim.protocol.primitives import Uuid

#: Kafka's delay of a run that follows one stopped at its limit.
IMMEDIATE_MS = 10
#: Above every partition id: the end of a topic's range of keys.
_PAST_PARTITIONS = 1 << 31


def of_topic(keys: Any, tid: Uuid) -> list[tuple[Uuid, int]]:
    """The partitions of topic `tid` in `keys`, a SortedSet of (topic id, partition) as the
    tasks keep their partitions (what a task forgets when the topic is removed)."""
    return list(keys.irange((tid, -1), (tid, _PAST_PARTITIONS)))


class TaskContext(Protocol):
    """What a task needs of the Engine."""

    sched: Scheduler
    controller_id: int | None

    def leader_member(self) -> Member | None: ...


class ControllerTask:
    """See the module docstring. `run` carries the task out (through the Engine's `execute`) and
    returns its result, whose response says whether it stopped at its limit."""

    def __init__(self, engine: TaskContext, name: str, interval_ms: Callable[[], int], has_work: Callable[[], bool],
                 run: Callable[[], ControllerResult | None]) -> None:
        self.engine, self.name = engine, name
        self._interval_ms, self._has_work, self._run = interval_ms, has_work, run
        self._scheduled = False
        self._immediately = False
        self._running = False
        #: the controller (node, epoch) the task belongs to
        self._owner: tuple[int, int] | None = None

    def activated(self, m: Member) -> None:
        """Controller `m` became active: nothing scheduled yet, the first run one interval on."""
        self._owner, self._scheduled, self._immediately = (m.id, m.epoch), False, False

    def maybe_schedule(self) -> None:
        """After a write (or a run): schedule the next run if the task has work and none is due."""
        if self._scheduled or self._running or self._owner is None or not self._has_work():
            return
        self._scheduled = True
        owner = self._owner
        delay = IMMEDIATE_MS if self._immediately else self._interval_ms()

        def fire() -> None:
            m = self.engine.leader_member()
            if self._owner != owner or m is None or (m.id, m.epoch) != owner or self.engine.controller_id != m.id:
                return  # (another controller took over: it scheduled its own)
            self._running = True
            try:
                result = self._run()
            finally:
                self._running = False
            self._scheduled = False
            self._immediately = bool(result is not None and result.ok and result.response)
            self.maybe_schedule()

        self.engine.sched.after(delay, self.name, owner[0], fire)
