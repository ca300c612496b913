"""Property: whatever sequence of registrations, heartbeats, fencings, controlled shutdowns,
topic creations, ISR changes, elections, session expiries and unregistrations happens,
replaying the rules' records through MetadataDelta keeps Kafka's partition invariants:
the leader is in the ISR (or -1) and is a live broker, ISR and ELR are disjoint subsets of
the replicas, and partition epochs only grow. AlterPartition's shortcut for a change of the ISR
alone writes what the PartitionChangeBuilder writes, also over a request of many partitions
that share their shapes."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.controller.cluster_control import expire_sessions, unregister_broker
from kraftsim.controller import ElectLeadersRequest, elect_leaders
from kraftsim.controller import is_active
from kraftsim.controller import (
    AlterPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopic,
    BrokerState,
    alter_partition,
)
from kraftsim.image import RECOVERED, RECOVERING
from tests.controller.cluster_support import RuleCluster, to_json

BROKERS = (1, 2, 3, 4)

ops = st.one_of(
    st.tuples(st.just("register"), st.sampled_from(BROKERS), st.integers(0, 3)),
    st.tuples(st.just("beat"), st.sampled_from(BROKERS), st.sampled_from(["plain", "fence", "shutdown", "offline"])),
    st.tuples(st.just("create"), st.integers(1, 4), st.integers(1, 3)),
    st.tuples(st.just("alter"), st.integers(0, 50), st.integers(0, 15)),
    st.tuples(st.just("alter-all"), st.sampled_from(BROKERS), st.integers(0, 31)),
    st.tuples(st.just("elect"), st.sampled_from([0, 1]), st.just(0)),
    st.tuples(st.just("expire"), st.integers(0, 12_000), st.just(0)),
    st.tuples(st.just("unregister"), st.sampled_from(BROKERS), st.just(0)),
)


def partitions(c: RuleCluster):
    for t in c.image.topics.sorted_topics():
        for pid, p in t.sorted_partitions():
            yield t, pid, p


def check_invariants(c: RuleCluster, before: dict) -> dict:
    now = {}
    for t, pid, p in partitions(c):
        key = (bytes(t.id), pid)
        now[key] = (p.partition_epoch, p.leader_epoch)
        assert set(p.isr) <= set(p.replicas) and set(p.elr) <= set(p.replicas)
        assert not set(p.isr) & set(p.elr)
        assert len(p.isr) == len(set(p.isr)) and len(p.directories) == len(p.replicas)
        if p.leader != -1:
            assert p.leader in p.isr
            assert is_active(c.image, p.leader), f"{t.name}-{pid} led by {p.leader}, which is not active"
        if key in before:
            old_pe, old_le = before[key]
            assert p.partition_epoch >= old_pe and p.leader_epoch >= old_le
    return now


def step(c: RuleCluster, op: tuple, serial: list[int]) -> None:
    kind, a, b = op
    if kind == "register":
        c.now_ms += 10_000  # let a live session expire so that a new incarnation may register
        c.register(a, incarnation=100 * a + b, rack=f"r{a % 2}", dirs=1 + a % 2)
    elif kind == "beat":
        if c.image.cluster.broker(a) is None:
            return
        if b == "offline":
            dirs = c.image.cluster.broker(a).directories
            c.heartbeat(a, offline_log_dirs=dirs[:1] if len(dirs) > 1 else ())
        else:
            c.heartbeat(a, want_fence=b == "fence", want_shut_down=b == "shutdown")
    elif kind == "create":
        serial[0] += 1
        c.create(f"t{serial[0]}", partitions=a, rf=b, seed=serial[0])
    elif kind == "alter":
        parts = list(partitions(c))
        if not parts:
            return
        topic, pid, p = parts[a % len(parts)]
        if p.leader == -1:
            return
        others = [r for r in p.replicas if r != p.leader and is_active(c.image, r)]
        isr = [p.leader] + [r for i, r in enumerate(others) if b >> i & 1]
        leader = c.image.cluster.broker(p.leader)
        data = AlterPartitionData(pid, p.leader_epoch, tuple(BrokerState(r) for r in isr), p.partition_epoch)
        request = AlterPartitionRequest(p.leader, leader.epoch, (AlterPartitionTopic(topic.id, (data,)),))
        with patch("kraftsim.controller.replication.simple_change", lambda *args, **kwargs: None):
            by_the_builder = alter_partition(c.ctx(), request)  # (its shortcut off: every change built)
        result = c.run(alter_partition, request)
        assert [to_json(r) for r in result.records] == [to_json(r) for r in by_the_builder.records]
        assert result.response == by_the_builder.response
    elif kind == "alter-all":
        alter_all(c, a, b)
    elif kind == "elect":
        c.run(elect_leaders, ElectLeadersRequest(a, None))
    elif kind == "expire":
        c.now_ms += a
        c.run(expire_sessions, c.heartbeats)
    elif kind == "unregister":
        if c.image.cluster.broker(a) is not None:
            c.run(unregister_broker, a, c.heartbeats)


def alter_all(c: RuleCluster, leader_id: int, mask: int) -> None:
    """Broker `leader_id` asks in one request for every partition it leads: the ISR of the
    leader and the replicas after it that `mask`'s low bits pick (eligible or not; with bit 2,
    the picks shift from one partition to the next of the same replicas), with their registered epochs when `mask` has bit
    3, every other one of the same replicas asking to be RECOVERING with bit 4. Many partitions share a shape, and the shortcut must answer each as the builder does,
    errors included."""
    leader = c.image.cluster.broker(leader_id)
    if leader is None:
        return
    by_topic, seen = {}, {}
    for topic, pid, p in partitions(c):
        if p.leader != leader_id:
            continue
        others = [r for r in p.replicas if r != leader_id]
        seen[p.replicas] = seen.get(p.replicas, -1) + 1
        picks = (mask + seen[p.replicas] if mask & 4 else mask) & 3
        isr = [leader_id] + [r for i, r in enumerate(others) if picks >> i & 1]

        def epoch(r: int) -> int:
            reg = c.image.cluster.broker(r)
            return reg.epoch if mask & 8 and reg is not None else -1

        recovery = RECOVERING if mask & 16 and seen[p.replicas] % 2 else RECOVERED
        data = AlterPartitionData(pid, p.leader_epoch, tuple(BrokerState(r, epoch(r)) for r in isr), p.partition_epoch,
                                  recovery)
        by_topic.setdefault(topic.id, []).append(data)
    if not by_topic:
        return
    request = AlterPartitionRequest(leader_id, leader.epoch,
                                    tuple(AlterPartitionTopic(t, tuple(ds)) for t, ds in by_topic.items()))
    with patch("kraftsim.controller.replication.simple_change", lambda *args, **kwargs: None):
        by_the_builder = alter_partition(c.ctx(), request)
    result = c.run(alter_partition, request)
    assert [to_json(r) for r in result.records] == [to_json(r) for r in by_the_builder.records]
    assert result.response == by_the_builder.response


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mv=st.sampled_from([("3.5-IV2", None, None), ("3.9-IV0", None, None), ("4.1-IV1", True, 2),
                           ("4.1-IV1", False, 1)]),
       sequence=st.lists(ops, min_size=5, max_size=30))
def test_rules_keep_partition_invariants(mv, sequence):
    version, elr, min_isr = mv
    c = RuleCluster(version, elr=elr, min_insync_replicas=min_isr)
    c.start_brokers(BROKERS[:3], racks={1: "a", 2: "b", 3: "a"})
    serial = [0]
    state = check_invariants(c, {})
    for op in sequence:
        step(c, op, serial)
        state = check_invariants(c, state)
        for b, s in c.heartbeats.brokers.items():  # soft state agrees with the image
            reg = c.image.cluster.broker(b)
            assert reg is not None and s.fenced == reg.fenced


def test_one_request_of_many_shapes_is_answered_partition_by_partition():
    """A leader asks in one request for partitions that share replicas but not ISRs, epochs
    or recovery: each is answered and written as the builder answers it alone."""
    c = RuleCluster("3.9-IV0")
    c.start_brokers(BROKERS)
    c.create("t", partitions=60, rf=3, seed=7)  # (more than the 24 orders of 3 of 4 brokers: shared replicas)
    for i, (topic, pid, p) in enumerate(partitions(c)):  # (ISRs of every length)
        isr = [p.leader] + [r for r in p.replicas if r != p.leader][: i // 7 % 3]
        leader = c.image.cluster.broker(p.leader)
        data = AlterPartitionData(pid, p.leader_epoch, tuple(BrokerState(r) for r in isr), p.partition_epoch)
        c.run(alter_partition, AlterPartitionRequest(p.leader, leader.epoch, (AlterPartitionTopic(topic.id, (data,)),)))
    for leader_id in BROKERS:
        for mask in range(32):
            alter_all(c, leader_id, mask)
