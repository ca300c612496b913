"""AlterPartitionReassignments: each partition's checks and texts per release, the records
that start, complete and cancel a reassignment, and the completion rule of each release line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.controller import (
    AlterPartitionData,
    AlterPartitionReassignmentsRequest,
    AlterPartitionRequest,
    AlterPartitionTopic,
    BrokerState,
    CreatableTopicConfig,
    ReassignablePartition,
    ReassignableTopic,
    alter_partition,
    alter_partition_reassignments,
)
from kraftsim.controller.reassignments import reassignment_replicas, revert
from kraftsim.image import PartitionRegistration
from tests.controller.cluster_support import CATALOG, RuleCluster, to_json, types


def reassign(c: RuleCluster, *targets: tuple[str, int, list[int] | None], allow_rf: bool = True):
    topics: dict[str, list[ReassignablePartition]] = {}
    for name, pid, replicas in targets:
        topics.setdefault(name, []).append(ReassignablePartition(pid, None if replicas is None else tuple(replicas)))
    req = AlterPartitionReassignmentsRequest(tuple(ReassignableTopic(n, tuple(ps)) for n, ps in topics.items()),
                                             allow_rf)
    return c.run(alter_partition_reassignments, req)


def answer(result, i: int = 0) -> tuple[int, str | None]:
    parts = [p for t in result.response.responses for p in t.partitions]
    return parts[i].error_code, parts[i].error_message


def make(release: str = "4.4", brokers=(1, 2, 3, 4, 5, 6), configs=()) -> RuleCluster:
    catalog = CATALOG.at_release(release)
    c = RuleCluster(catalog.latest_production.version, catalog=catalog)
    c.start_brokers(list(brokers))
    c.create("t", 2, 3, configs=configs)
    return c


def assign(c: RuleCluster, replicas: list[int]) -> None:
    """Partition t-0 on exactly `replicas`, all in sync (a reorder-free reassignment done)."""
    r = reassign(c, ("t", 0, replicas))
    assert answer(r) == (0, None)
    p = c.partition("t", 0)
    while p.adding_replicas or p.removing_replicas:
        expand(c, [*p.isr, *[a for a in p.adding_replicas if a not in p.isr]][: len(p.isr) + 1])
        p = c.partition("t", 0)


def expand(c: RuleCluster, isr: list[int]):
    """The partition leader's AlterPartition to `isr`."""
    p = c.partition("t", 0)
    t = c.image.topics.get_topic_by_name("t")
    data = AlterPartitionData(0, p.leader_epoch, tuple(BrokerState(b) for b in isr), p.partition_epoch, 0)
    req = AlterPartitionRequest(p.leader, c.image.cluster.broker(p.leader).epoch, (AlterPartitionTopic(t.id, (data,)),))
    return c.run(alter_partition, req)


# --------------------------------------------------------------------------- checks and texts


@pytest.mark.parametrize("release", ["3.7", "3.9", "4.0", "4.1", "4.4"])
def test_refusals_carry_kafkas_codes_and_texts(release):
    c = make(release)
    r = reassign(c, ("nope", 0, [1, 2, 3]), ("t", 7, [1, 2, 3]), ("t", 0, []), ("t", 0, [1, 9, 2]),
                 ("t", 0, [2, 1, 2]), ("t", 0, [-1, 2, 3]), ("t", 1, None))
    assert [answer(r, i) for i in range(7)] == [
        (3, "Unable to find a topic named nope."),
        (3, "Unable to find partition t:7."),
        (39, "The manual partition assignment includes an empty replica list."),
        (39, "The manual partition assignment includes broker 9, but no such broker is registered."),
        (39, "The manual partition assignment includes the broker 2 more than once."),
        (39, "The manual partition assignment includes broker -1, but no such broker is registered."),
        (85, None),  # (the default text: ApiError.fromThrowable leaves it out)
    ]
    assert r.records == () and r.ok


def test_a_fenced_broker_is_a_valid_target():
    c = make("4.4")
    c.heartbeat(6, want_fence=True)
    assert c.image.cluster.broker(6).fenced
    assert answer(reassign(c, ("t", 0, [4, 5, 6]))) == (0, None)
    assert c.partition("t", 0).adding_replicas == (4, 5, 6)


@pytest.mark.parametrize("release, checked", [("4.0", False), ("4.1", True), ("4.4", True)])
def test_replication_factor_change_refused_from_4_1_when_not_allowed(release, checked):
    c = make(release)
    r = reassign(c, ("t", 0, [1, 2, 3, 4]), allow_rf=False)
    assert answer(r) == ((38, "The replication factor is changed from 3 to 4") if checked else (0, None))
    assert answer(reassign(c, ("t", 1, [4, 5, 6]), allow_rf=False)) == (0, None)  # same size: taken


# --------------------------------------------------------------------------- records


def test_start_writes_the_union_with_adding_and_removing():
    c = make("4.4")
    p = c.partition("t", 0)
    target = [4, p.replicas[0], 5]
    r = reassign(c, ("t", 0, target))
    assert answer(r) == (0, None) and types(r) == [("PartitionChangeRecord", 2)] and r.atomic
    removing = sorted(set(p.replicas) - set(target))
    data = to_json(r.records[0])["data"]
    assert data["replicas"] == target + removing
    assert data["addingReplicas"] == [4, 5] and data["removingReplicas"] == removing
    assert "isr" not in data and "leader" not in data  # (no replica left yet: no leader epoch bump)
    q = c.partition("t", 0)
    assert q.replicas == tuple(target + removing) and q.isr == p.isr and q.partition_epoch == p.partition_epoch + 1


def test_same_replicas_is_a_no_op_and_a_reorder_completes_at_once():
    c = make("4.4")
    p = c.partition("t", 0)
    r = reassign(c, ("t", 0, list(p.replicas)))
    assert answer(r) == (0, None) and r.records == ()
    reordered = [p.replicas[1], p.replicas[0], p.replicas[2]]
    r = reassign(c, ("t", 0, reordered))
    data = to_json(r.records[0])["data"]
    assert data["replicas"] == reordered and "addingReplicas" not in data and "removingReplicas" not in data
    assert c.partition("t", 0).replicas == tuple(reordered) and not c.partition("t", 0).adding_replicas


def test_completion_once_the_leader_adds_the_new_replicas_and_a_new_leader():
    c = make("4.4")
    assign(c, [1, 2, 3])
    reassign(c, ("t", 0, [4, 5, 6]))
    assert c.partition("t", 0).replicas == (4, 5, 6, 1, 2, 3)
    expand(c, [1, 2, 3, 4])
    expand(c, [1, 2, 3, 4, 5])
    assert c.partition("t", 0).adding_replicas == (4, 5, 6)
    r = expand(c, [1, 2, 3, 4, 5, 6])
    data = to_json(r.records[0])["data"]
    assert data["replicas"] == [4, 5, 6] and data["isr"] == [4, 5, 6] and data["leader"] == 4
    assert data["addingReplicas"] == [] and data["removingReplicas"] == []
    p = c.partition("t", 0)
    assert (p.replicas, p.isr, p.leader, p.adding_replicas, p.removing_replicas) == ((4, 5, 6), (4, 5, 6), 4, (), ())
    assert answer(reassign(c, ("t", 0, None))) == (85, None)


def test_cancel_reverts_to_the_original_replicas():
    c = make("4.4")
    assign(c, [1, 2, 3])
    reassign(c, ("t", 0, [3, 4, 5]))
    expand(c, [1, 2, 3, 4])
    r = reassign(c, ("t", 0, None))
    assert answer(r) == (0, None)
    data = to_json(r.records[0])["data"]
    # Kafka's revert drops the adding replicas from the union: the target's order, not the original's
    assert data["replicas"] == [3, 1, 2] and data["isr"] == [1, 2, 3]
    assert data["addingReplicas"] == [] and data["removingReplicas"] == []
    p = c.partition("t", 0)
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas) == ((3, 1, 2), (1, 2, 3), (), ())


@pytest.mark.parametrize("unclean", [False, True])
def test_cancel_that_needs_an_unclean_election(unclean):
    """The ISR holds adding replicas only: reverting needs an unclean election, refused unless
    the topic allows one (3.9+ reads unclean.leader.election.enable)."""
    configs = (CreatableTopicConfig("unclean.leader.election.enable", "true"),) if unclean else ()
    c = make("3.9", configs=configs)
    assign(c, [1, 2, 3])
    reassign(c, ("t", 0, [4, 5, 6]))
    expand(c, [1, 2, 3, 4])
    leader = c.partition("t", 0).leader
    expand(c, [leader, 4])
    c.heartbeat(leader, want_fence=True)
    assert c.partition("t", 0).isr == (4,)
    r = reassign(c, ("t", 0, None))
    if not unclean:
        assert answer(r) == (39, "Unable to revert partition assignment for t:0 because it would require an "
                                 "unclean leader election.") and r.records == ()
    else:
        assert answer(r) == (0, None)
        p = c.partition("t", 0)
        assert p.replicas == (1, 2, 3) and not p.adding_replicas and p.leader in (1, 2, 3) and p.leader != leader


def test_revert_of_an_isr_of_adding_replicas_only():
    part = PartitionRegistration(replicas=(4, 5, 6, 1, 2, 3), directories=(), isr=(4,), adding_replicas=(4, 5, 6),
                                 removing_replicas=(1, 2, 3))
    assert revert(part) == ([1, 2, 3], [1], True)


def test_two_targets_in_one_request_are_one_atomic_batch():
    c = make("4.4")
    r = reassign(c, ("t", 0, [4, 5, 6]), ("t", 1, [6, 5, 4]))
    assert [answer(r, i) for i in range(2)] == [(0, None), (0, None)]
    assert len(r.records) == 2 and r.atomic


# --------------------------------------------------------------------------- completion rules per release


def _out_of_sync_follower(c: RuleCluster, replicas: list[int]) -> tuple[int, int]:
    """(leader, a follower taken out of the ISR by the leader) of t-0, placed on `replicas`."""
    assign(c, replicas)
    leader = c.partition("t", 0).leader
    follower = next(r for r in replicas if r != leader)
    expand(c, [r for r in replicas if r != follower])
    assert follower not in c.partition("t", 0).isr
    return leader, follower


@pytest.mark.parametrize("release, completes", [("3.7", True), ("3.8", False), ("4.2", False), ("4.3", True),
                                                ("4.4", True)])
def test_completion_rule_when_a_kept_replica_is_out_of_sync(release, completes):
    """One replica swapped for 6 while another kept one is out of the ISR: 3.7 and 4.3+ (as many
    added as removed) complete once 6 joins, 3.8-4.2 wait for every target replica."""
    c = make(release)
    leader, follower = _out_of_sync_follower(c, [1, 2, 3])
    gone = next(r for r in (1, 2, 3) if r not in (leader, follower))
    target = [leader, follower, 6]
    reassign(c, ("t", 0, target))
    expand(c, [*c.partition("t", 0).isr, 6])
    p = c.partition("t", 0)
    assert (p.replicas == tuple(target)) == completes, (release, p)
    assert (gone in p.replicas) != completes


@pytest.mark.parametrize("release, completes", [("3.7", True), ("3.8", False), ("4.2", False), ("4.3", False),
                                                ("4.4", False)])
def test_completion_rule_when_shrinking(release, completes):
    """Four replicas to three, one of the kept ones out of the ISR: 4.3+ waits for every target
    replica when more replicas leave than join, as 3.8-4.2 always do; 3.7 completes."""
    c = make(release)
    leader, follower = _out_of_sync_follower(c, [1, 2, 3, 4])
    target = [leader, follower, 6]
    reassign(c, ("t", 0, target))
    p = c.partition("t", 0)
    assert len(p.removing_replicas) == 2 and p.adding_replicas == (6,)
    expand(c, [*p.isr, 6])
    assert (c.partition("t", 0).replicas == tuple(target)) == completes, release


@given(st.lists(st.integers(0, 20), min_size=1, max_size=6, unique=True),
       st.lists(st.integers(0, 20), min_size=1, max_size=6, unique=True))
@settings(max_examples=200, deadline=None)
def test_reassignment_replicas_properties(current, target):
    removing, adding, replicas = reassignment_replicas(current, target)
    assert replicas[:len(target)] == target and set(replicas) == set(current) | set(target)
    assert removing == sorted(set(current) - set(target)) and adding == sorted(set(target) - set(current))
    part = PartitionRegistration(replicas=tuple(replicas), directories=(), isr=tuple(current),
                                 adding_replicas=tuple(adding),
                                 removing_replicas=tuple(removing))
    back, isr, unclean = revert(part)
    assert back == [r for r in replicas if r not in adding] and sorted(back) == sorted(current)
    assert not unclean and isr == [r for r in current if r not in adding]
