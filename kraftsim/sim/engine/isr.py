"""Partition leaders adding followers back to their ISRs (Kafka's Partition.maybeExpandIsr and
AlterPartitionManager), as events: a part the Engine owns.

The simulator carries no data, so a follower is in sync as soon as it fetches from its leader.
A broker that leads a partition whose ISR lacks one of its replicas asks the active controller
to add it back (AlterPartition) at that follower's next fetch after the leader's own metadata
shows the follower eligible (registered, unfenced, not in controlled shutdown: KIP-841): one
`replica_fetch_wait_max_ms` after the leader applied the record that made it so. The follower
must be running, on its current registration, and reachable from the leader. One follower is
added per request and partition (a partition has one change in flight, as in Kafka: a second
follower is added at a later fetch); all of a leader's partitions go in one request, as
AlterPartitionManager batches them. A leader elected uncleanly (RECOVERING, KIP-704) holds the
partition recovered from the start (Kafka's Partition.makeLeader) but asks nothing for it: the
controller learns it with the first follower added back (live 3.9.2 writes no record of its own
for it).

Which partitions to look at comes from what the active controller writes. Its replica index
(kraftsim.controller.replica_index) keeps the partitions whose ISR lacks a replica, by the
replica they lack, and the partitions each write changed (kraftsim.sim.engine.written); the
write's records are read only for the brokers they name. A record that makes a broker eligible, or leaves a partition
lacking an eligible replica, wakes the partition's leader for it once that leader has applied
the record. Every decision is the leader's, on its own image; the controller's rule
(`alter_partition`) judges the request as Kafka's does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kraftsim.controller import (
    AlterPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopic,
    BrokerState,
    alter_partition,
)
from kraftsim.image import NO_LEADER, RECOVERED
from kraftsim.protocol.primitives import Uuid
from kraftsim.sim.engine.events import Message, Network, Scheduler
from kraftsim.sim.engine.member import LEADER, Member

if TYPE_CHECKING:
    from kraftsim.controller import ControllerResult, ReplicaIndex
    from kraftsim.sim.engine.written import Written
    from kraftsim.image import MetadataImage
    from kraftsim.sim.types import SimConfig

#: A partition, as AlterPartition names it. Keys sort as their topic id's bytes, then the
#: partition id (Uuid is bytes, compared as such): the order leaders look at them in.
Key = tuple[Uuid, int]
_BROKER_RECORDS = frozenset({"RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "UnfenceBrokerRecord"})


class IsrContext(Protocol):
    """What the part needs of the Engine."""

    net: Network
    sched: Scheduler
    config: SimConfig
    controller_id: int | None

    @property
    def now(self) -> int: ...
    def member(self, node_id: int) -> Member: ...
    def leader_member(self) -> Member | None: ...
    def reachable(self, a: int, b: int) -> bool: ...
    def execute(self, rule: Any) -> ControllerResult | None: ...


@dataclass
class _Leader:
    """One leader's side: what it was woken for, and what it has asked about."""

    #: partition -> the controller's log end offset once the record that woke it was written
    woken: dict[Key, int] = field(default_factory=dict)
    in_flight: set[Key] = field(default_factory=set)
    armed: bool = False
    #: the process (Member.lifecycle_gen) these belong to: a restarted broker starts afresh
    gen: int = -1
    sent: int = 0


def _eligible(image: MetadataImage, broker_id: int) -> bool:
    reg = image.cluster.broker(broker_id)
    return reg is not None and not reg.fenced and not reg.in_controlled_shutdown


class IsrExpansion:
    """See the module docstring. `written` follows the active controller's writes; `applied`
    is told when a broker applied committed records."""

    def __init__(self, engine: IsrContext) -> None:
        self.engine = engine
        self.net = engine.net
        self.sched = engine.sched
        self.config = engine.config
        self._leaders: dict[int, _Leader] = {}

    def handlers(self) -> dict[str, Any]:
        return {"alter-partition": self._on_alter_partition, "alter-partition-reply": self._on_reply}

    # -------------------------------------------------------------- following the controller

    def reset(self, image: MetadataImage, index: ReplicaIndex) -> None:
        """Start again from a newly active controller's image (what an earlier one wrote may be
        gone), described by `index`."""
        offset = self._end_offset()
        for r in index.lacking:
            if _eligible(image, r):
                for topic, pid, p in index.iter_lacking(r):
                    self._wake(p.leader, (topic.id, pid), offset)

    def written(self, w: Written) -> None:
        """A write of the active controller (its image holds it)."""
        image, index, touched = w.image, w.index, w.touched
        standing: dict[int, bool] = {}  # (each broker's eligibility in this image, looked up once)

        def eligible(r: int) -> bool:
            known = standing.get(r)
            if known is None:
                known = standing[r] = _eligible(image, r)
            return known

        offset = -1
        lacking = index.lacking
        if touched:  # the written partitions that lack an eligible replica
            woken: dict[Uuid, int] = {}
            for r, lacks in lacking.items():
                if not eligible(r):
                    continue
                small, large = (lacks, touched) if len(lacks) < len(touched) else (touched, lacks)
                for tid, mask in small.items():
                    hit = mask & large.get(tid, 0)
                    if hit:
                        woken[tid] = woken.get(tid, 0) | hit
            if woken:
                offset = self._end_offset()
                for topic, pid, p in index.iter_masks(woken):
                    self._wake(p.leader, (topic.id, pid), offset)
        if not _BROKER_RECORDS.isdisjoint(w.names):  # every partition that lacks a broker made eligible
            for payload in w.records:
                name = payload.record_type.name
                if name in _BROKER_RECORDS:
                    msg = payload.message
                    broker = msg.id if name == "UnfenceBrokerRecord" else msg.broker_id
                    if broker in lacking and eligible(broker):
                        offset = offset if offset >= 0 else self._end_offset()
                        for topic, pid, p in index.iter_lacking(broker):
                            self._wake(p.leader, (topic.id, pid), offset)

    def _wake(self, leader: int, key: Key, offset: int) -> None:
        if leader == NO_LEADER:
            return
        state = self._leaders.get(leader)
        if state is None:
            state = self._leaders[leader] = _Leader()
        if state.woken.get(key, -1) < offset:
            state.woken[key] = offset

    def _end_offset(self) -> int:
        m = self.engine.leader_member()
        return m.log.log_end_offset if m is not None and m.node is not None else 0

    def settling(self) -> bool:
        """Whether a running leader still has partitions to look at or an answer to wait for."""
        for leader, state in self._leaders.items():
            if state.woken or state.in_flight:
                m = self.engine.member(leader)
                if m.running and (not state.in_flight or state.gen == m.lifecycle_gen):
                    return True
        return False

    # -------------------------------------------------------------- the leader's side

    def applied(self, m: Member) -> None:
        """Broker `m` applied committed records: it looks at what it was woken for, once it
        sees the records that woke it, at its followers' next fetch."""
        state = self._leaders.get(m.id)
        if state is None or not state.woken or state.armed:
            return
        if state.gen != m.lifecycle_gen:
            state.in_flight.clear()
            state.gen = m.lifecycle_gen
        if min(state.woken.values()) > m.applied + 1:
            return
        state.armed = True
        gen = m.lifecycle_gen

        def check() -> None:
            state.armed = False
            if m.running and m.lifecycle_gen == gen:
                self._check(m, state)

        self.sched.after(self.config.replica_fetch_wait_max_ms, "isr-expand", m.id, check)

    def _check(self, m: Member, state: _Leader) -> None:
        """Leader `m` asks for each partition it was woken for and sees the records of: one
        more follower in the ISR, the first of its replicas the ISR lacks that may join (and
        recovered, as the leader holds any partition it leads). At a million partitions a
        look covers tens of thousands, so the loop keeps to locals: a topic's partitions come
        together (the keys are sorted) and its image is looked up once; each follower's
        standing is asked once, and an asked ISR is built once per (ISR, follower)."""
        node = m.node
        image = node.image if node is not None else None
        if image is None or m.broker_epoch is None:
            return
        seen = m.applied + 1
        woken, in_flight = state.woken, state.in_flight
        ready = sorted(k for k, at in woken.items() if at <= seen and k not in in_flight)
        items: dict[Uuid, list[AlterPartitionData]] = {}
        followers: dict[int, bool] = {}  # (each follower's standing, asked once per look)
        asked: dict[tuple[tuple[int, ...], int], tuple[BrokerState, ...]] = {}  # (ISR, follower) -> the asked ISR
        get_topic, leader = image.topics.get_topic, m.id
        tid: Uuid | None = None
        partitions: Any = None
        changes: list[AlterPartitionData] | None = None
        for key in ready:
            del woken[key]
            t, pid = key
            if t != tid:
                tid, changes = t, None
                topic = get_topic(t)
                partitions = topic.partitions if topic is not None else None
            p = partitions.get(pid) if partitions is not None else None
            if p is None or p.leader != leader:
                continue
            isr = p.isr
            for r in p.replicas:
                if r in isr:
                    continue
                joins = followers.get(r)
                if joins is None:
                    joins = followers[r] = _eligible(image, r) and self._fetching(m, image, r)
                if joins:
                    new_isr = asked.get((isr, r))
                    if new_isr is None:
                        new_isr = asked[isr, r] = tuple(BrokerState(b) for b in (*isr, r))
                    if changes is None:
                        changes = items[t] = []
                    changes.append(AlterPartitionData(pid, p.leader_epoch, new_isr, p.partition_epoch, RECOVERED))
                    in_flight.add(key)
                    break
        if items:
            self._send(m, state, items)
        elif woken:
            self.applied(m)  # (some wait for records it has not applied, or for an answer)

    def _fetching(self, leader: Member, image: MetadataImage, follower: int) -> bool:
        """Whether `follower` fetches from `leader` now: running, on the registration the
        leader's image holds, and reachable."""
        try:
            f = self.engine.member(follower)
        except KeyError:
            return False
        reg = image.cluster.broker(follower)
        return (f.running and f.node is not None and reg is not None and f.broker_epoch == reg.epoch
                and self.engine.reachable(leader.id, follower))

    def _send(self, m: Member, state: _Leader, items: dict[Uuid, list[AlterPartitionData]]) -> None:
        controller = m.leader
        request = AlterPartitionRequest(m.id, m.broker_epoch or 0,
                                        tuple(AlterPartitionTopic(t, tuple(ps)) for t, ps in items.items()))
        state.sent += 1
        sent, gen = state.sent, m.lifecycle_gen
        keys = [(t, d.partition_index) for t, ps in items.items() for d in ps]
        if controller is not None:
            self.net.send(Message(m.id, controller, "alter-partition", m.epoch, {"request": request, "sent": sent}))

        def timed_out() -> None:  # (no answer: asked again at the next fetch, as Kafka's manager retries)
            if m.running and m.lifecycle_gen == gen and state.sent == sent and state.in_flight:
                state.in_flight.difference_update(keys)
                for key in keys:
                    state.woken.setdefault(key, 0)
                self.applied(m)

        self.sched.after(self.config.request_timeout_ms, "alter-partition-timeout", m.id, timed_out)

    def _on_reply(self, m: Member, msg: Message) -> None:
        state = self._leaders.get(m.id)
        if state is None:
            return
        keys = msg.data.get("keys", ())
        state.in_flight.difference_update(keys)
        if msg.data.get("not_controller"):  # (sent to a controller no longer active: asked again)
            for key in keys:
                state.woken.setdefault(key, 0)
        if state.woken:
            self.applied(m)

    # -------------------------------------------------------------- the active controller's side

    def _on_alter_partition(self, m: Member, msg: Message) -> None:
        request: AlterPartitionRequest = msg.data["request"]
        keys = [(t.topic_id, d.partition_index) for t in request.topics for d in t.partitions]
        active = m.role == LEADER and self.engine.controller_id == m.id
        if active:
            self.engine.execute(lambda ctx: alter_partition(ctx, request))
        # (the controller's refusals of a partition leave it to the records that change it
        # again, which wake its leader; NOT_CONTROLLER has it asked again)
        self.net.send(Message(m.id, msg.src, "alter-partition-reply", m.epoch, {"keys": keys, "not_controller": not active}))
