"""Topics and partitions: CreateTopics (names, counts, placement, directories, record
versions), DeleteTopics, AlterPartition, ElectLeaders and the PartitionChangeBuilder, with
Kafka's texts and codes and Kafka's own records as the reference."""

from __future__ import annotations

import collections
import random

import pytest

from kraftsim.controller import ElectLeadersRequest, TopicPartitions, elect_leaders
from kraftsim.controller import PartitionChangeBuilder, java_int_set_order, leader_acceptor
from kraftsim.controller import UsableBroker, place_replicas
from kraftsim.controller import (
    AlterPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopic,
    BrokerState,
    alter_partition,
)
from kraftsim.controller import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
    DeleteTopicState,
    DeleteTopicsRequest,
    create_topics,
    delete_topics,
)
from kraftsim.image import MetadataImage
from kraftsim.image.intern import MIGRATING
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import load_catalog
from tests.conftest import ORACLE
from tests.controller.cluster_support import CATALOG, RuleCluster, replay, to_json, types
from tests.image.helpers import data_records, read_entries

needs_oracle = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")


def create(c: RuleCluster, *topics: CreatableTopic, seed: int = 0, validate_only: bool = False):
    return c.run(create_topics, CreateTopicsRequest(tuple(topics), validate_only=validate_only, seed=seed))


def topic_error(result, name: str) -> tuple[int, str | None]:
    t = result.response.result(name)
    return t.error_code, t.error_message


@pytest.fixture
def cluster() -> RuleCluster:
    c = RuleCluster("4.1-IV1")
    c.start_brokers([1, 2, 3])
    return c


# --------------------------------------------------------------------------- CreateTopics: checks


@pytest.mark.parametrize("name, text", [
    ("", "Topic name is invalid: the empty string is not allowed"),
    (".", "Topic name is invalid: '.' is not allowed"),
    ("..", "Topic name is invalid: '..' is not allowed"),
    ("x" * 250, f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed length 249"),
    ("a b", "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' "
            "and '-'"),
    ("é", "Topic name is invalid: 'é' contains one or more characters other than ASCII alphanumerics, '.', '_' and "
          "'-'"),
    # (Java counts a name's length in UTF-16 units: 125 characters outside the BMP are 250)
    ("\U0001F600" * 125, f"Topic name is invalid: the length of '{chr(0x1F600) * 125}' is longer than the max "
                          "allowed length 249"),
])
def test_illegal_topic_names(cluster, name, text):
    r = create(cluster, CreatableTopic(name, 1, 1))
    assert topic_error(r, name) == (17, text) and r.records == ()


def test_legal_names_up_to_249_characters(cluster):
    r = create(cluster, CreatableTopic("a.B_c-9" + "z" * 242, 1, 1))
    assert r.response.topics[0].error_code == 0


def test_existing_and_colliding_names(cluster):
    cluster.create("foo.bar", 1, 1)
    r = create(cluster, CreatableTopic("foo.bar", 1, 1), CreatableTopic("foo_bar", 1, 1), CreatableTopic("ok", 1, 1))
    assert topic_error(r, "foo.bar") == (36, "Topic 'foo.bar' already exists.")
    assert topic_error(r, "foo_bar") == (17, "Topic 'foo_bar' collides with existing topic: foo.bar")
    assert [p.message.name for p in r.records if p.record_type.name == "TopicRecord"] == ["ok"]


def test_a_name_twice_in_one_request(cluster):
    r = create(cluster, CreatableTopic("d", 1, 1), CreatableTopic("d", 1, 1))
    assert [(t.name, t.error_code, t.error_message) for t in r.response.topics] == [("d", 42, "Duplicate topic name.")]
    assert r.records == ()


@pytest.mark.parametrize("partitions, rf, code, text", [
    (1, 0, 38, "Replication factor must be larger than 0, or -1 to use the default value."),
    (1, -2, 38, "Replication factor must be larger than 0, or -1 to use the default value."),
    (0, 1, 37, "Number of partitions was set to an invalid non-positive value."),
    (-5, 1, 37, "Number of partitions was set to an invalid non-positive value."),
    (1, 4, 38, "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached "
               "because only 3 broker(s) are registered."),
])
def test_partition_and_replication_factor_checks(cluster, partitions, rf, code, text):
    assert topic_error(create(cluster, CreatableTopic("t", partitions, rf)), "t") == (code, text)


def test_all_brokers_fenced(cluster):
    for b in (1, 2, 3):
        cluster.heartbeat(b, want_fence=True)
    assert topic_error(create(cluster, CreatableTopic("t", 1, 1)), "t") == (
        38, "Unable to replicate the partition 1 time(s): All brokers are currently fenced.")


def test_null_config_values_are_refused(cluster):
    t = CreatableTopic("t", 1, 1, configs=(CreatableTopicConfig("a", None), CreatableTopicConfig("b", None)))
    assert topic_error(create(cluster, t), "t") == (40, "Null value not supported for topic configs: a,b")


def test_too_many_partitions_in_one_request(cluster):
    r = create(cluster, CreatableTopic("a", 6000, 1), CreatableTopic("b", 4001, 1))
    assert (r.error.name, r.error.message) == ("POLICY_VIOLATION", "Excessively large number of partitions per request.")


def test_defaults_apply_for_minus_one(cluster):
    r = create(cluster, CreatableTopic("t"))
    res = r.response.result("t")
    assert (res.num_partitions, res.replication_factor) == (3, 3)


# --------------------------------------------------------------------------- CreateTopics: records


def test_records_topic_then_configs_then_partitions_atomically(cluster):
    t = CreatableTopic("t", 2, 3, configs=(CreatableTopicConfig("cleanup.policy", "compact"),
                                           CreatableTopicConfig("retention.ms", "100")))
    r = create(cluster, t)
    assert r.atomic and types(r) == [("TopicRecord", 0), ("ConfigRecord", 0), ("ConfigRecord", 0),
                                     ("PartitionRecord", 2), ("PartitionRecord", 2)]
    tid = r.response.result("t").topic_id
    assert r.records[0].message.topic_id == tid and all(p.message.topic_id == tid for p in r.records[3:])
    assert cluster.image.configs.config(2, "t") == {"cleanup.policy": "compact", "retention.ms": "100"}
    p = cluster.partition("t", 0)
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr) == (p.replicas[0], 0, 0, p.replicas)


def test_validate_only_writes_nothing(cluster):
    r = create(cluster, CreatableTopic("t", 2, 3), validate_only=True)
    assert r.records == () and r.response.result("t").error_code == 0


def test_min_isr_config_clears_elr_when_elr_is_on():
    c = RuleCluster("4.1-IV1", elr=True)
    c.start_brokers([1])
    r = create(c, CreatableTopic("t", 1, 1, configs=(CreatableTopicConfig("min.insync.replicas", "1"),)))
    assert types(r)[:3] == [("TopicRecord", 0), ("ConfigRecord", 0), ("ClearElrRecord", 0)]
    c2 = RuleCluster("4.1-IV1", elr=False)
    c2.start_brokers([1])
    r = create(c2, CreatableTopic("t", 1, 1, configs=(CreatableTopicConfig("min.insync.replicas", "1"),)))
    assert ("ClearElrRecord", 0) not in types(r)


@pytest.mark.parametrize("mv, version, with_dirs", [("3.3-IV3", 0, False), ("3.7-IV1", 0, False),
                                                    ("3.7-IV2", 1, True), ("4.0-IV1", 2, True)])
def test_partition_record_version_and_directories_per_metadata_version(mv, version, with_dirs):
    c = RuleCluster(mv)
    c.start_brokers([1, 2])
    r = create(c, CreatableTopic("t", 1, 2))
    rec = r.records[-1]
    assert rec.version == version
    data = to_json(rec)["data"]
    assert ("directories" in data) == with_dirs
    dirs = c.partition("t", 0).directories
    if with_dirs:  # each broker has one directory: it is assigned directly
        assert dirs == tuple(c.image.cluster.broker(b).directories[0] for b in c.partition("t", 0).replicas)
    else:
        assert dirs == (MIGRATING, MIGRATING)


def test_fenced_brokers_are_replicas_only_when_needed_and_never_in_the_isr():
    c = RuleCluster("4.1-IV1")
    c.start_brokers([1, 2, 3])
    c.heartbeat(3, want_fence=True)
    create(c, CreatableTopic("two", 4, 2), CreatableTopic("three", 4, 3))
    for pid in range(4):
        assert 3 not in c.partition("two", pid).replicas
        p = c.partition("three", pid)
        assert p.replicas[-1] == 3 and p.isr == p.replicas[:2] and p.leader != 3


# --------------------------------------------------------------------------- placement


def test_placement_is_deterministic_per_seed(cluster):
    a = create(SimClusterCopy(cluster), CreatableTopic("t", 12, 2), seed=5)
    b = create(SimClusterCopy(cluster), CreatableTopic("t", 12, 2), seed=5)
    assert [to_json(p) for p in a.records] == [to_json(p) for p in b.records]
    layouts = {tuple(tuple(p.message.replicas) for p in create(SimClusterCopy(cluster), CreatableTopic("t", 12, 2),
                                                                 seed=s).records[1:]) for s in range(6)}
    assert len(layouts) > 1


def SimClusterCopy(c: RuleCluster) -> RuleCluster:
    d = RuleCluster.__new__(RuleCluster)
    d.__dict__.update(c.__dict__)
    d.heartbeats = c.heartbeats.copy()
    d.log = list(c.log)
    return d


@pytest.mark.parametrize("brokers, rf", [(3, 3), (5, 2), (6, 3), (7, 1)])
def test_placement_is_balanced(brokers, rf):
    ub = [UsableBroker(i, None, False) for i in range(brokers)]
    for seed in range(5):
        parts = place_replicas(ub, brokers * 4, rf, random.Random(seed))
        leaders = collections.Counter(p[0] for p in parts)
        replicas = collections.Counter(b for p in parts for b in p)
        assert set(leaders.values()) == {4} and set(replicas.values()) == {4 * rf}
        assert all(len(set(p)) == rf for p in parts)


@pytest.mark.parametrize("brokers, racks, rf", [(9, 3, 3), (12, 4, 3), (6, 3, 2), (6, 2, 2), (9, 3, 5)])
def test_placement_spreads_replicas_over_racks_evenly(brokers, racks, rf):
    ub = [UsableBroker(i, f"rack-{i % racks}", False) for i in range(brokers)]
    for seed in range(5):
        parts = place_replicas(ub, brokers * 4, rf, random.Random(seed))
        assert all(len({ub[b].rack for b in p}) == min(rf, racks) and len(set(p)) == rf for p in parts)
        leaders = collections.Counter(p[0] for p in parts)
        replicas = collections.Counter(b for p in parts for b in p)
        assert set(leaders.values()) == {4}
        # with more replicas than racks, a rack's cursor also skips the leader: close, not exact
        assert max(replicas.values()) - min(replicas.values()) <= (1 if rf <= racks else 3)


def test_uneven_racks_share_each_racks_load_evenly():
    """4 brokers in rack a, 3 in b and c: every partition spans the three racks, so rack a's
    brokers carry 1/4 of a rack's load and the others 1/3, and no broker more than its share."""
    ub = [UsableBroker(i, "abc"[i % 3] if i < 9 else "a", False) for i in range(10)]
    for seed in range(5):
        parts = place_replicas(ub, 120, 3, random.Random(seed))
        assert all({ub[b].rack for b in p} == set("abc") for p in parts)
        replicas = collections.Counter(b for p in parts for b in p)
        assert {replicas[b.id] for b in ub if b.rack == "a"} == {30}
        assert {replicas[b.id] for b in ub if b.rack != "a"} == {40}


# --------------------------------------------------------------------------- manual assignments


@pytest.mark.parametrize("assignments, code, text", [
    (((0, ()),), 39, "The manual partition assignment includes an empty replica list."),
    (((0, (1, 9)),), 39, "The manual partition assignment includes broker 9, but no such broker is registered."),
    (((0, (1, 1)),), 39, "The manual partition assignment includes the broker 1 more than once."),
    (((0, (1, 2)), (1, (1,))), 39, "The manual partition assignment includes a partition with 1 replica(s), but this "
                                   "is not consistent with previous partitions, which have 2 replica(s)."),
    (((0, (1,)), (0, (2,))), 39, "Found multiple manual partition assignments for partition 0"),
    (((1, (1,)),), 39, "partitions should be a consecutive 0-based integer sequence"),
])
def test_manual_assignment_checks(cluster, assignments, code, text):
    t = CreatableTopic("t", assignments=tuple(CreatableReplicaAssignment(p, b) for p, b in assignments))
    assert topic_error(create(cluster, t), "t") == (code, text)


def test_manual_assignment_needs_minus_one_counts_and_a_live_replica(cluster):
    a = (CreatableReplicaAssignment(0, (2, 1)),)
    assert topic_error(create(cluster, CreatableTopic("t", -1, 2, assignments=a)), "t") == (
        42, "A manual partition assignment was specified, but replication factor was not set to -1.")
    assert topic_error(create(cluster, CreatableTopic("t", 1, -1, assignments=a)), "t") == (
        42, "A manual partition assignment was specified, but numPartitions was not set to -1.")
    cluster.heartbeat(2, want_fence=True)
    cluster.heartbeat(1, want_fence=True)
    assert topic_error(create(cluster, CreatableTopic("t", assignments=a)), "t") == (
        39, "All brokers specified in the manual partition assignment for partition 0 are fenced or in controlled "
            "shutdown.")
    ok = create(cluster, CreatableTopic("u", assignments=(CreatableReplicaAssignment(0, (2, 3)),)))
    p = cluster.partition("u", 0)
    assert ok.response.result("u").error_code == 0 and (p.replicas, p.isr, p.leader) == ((2, 3), (3,), 3)


# --------------------------------------------------------------------------- DeleteTopics


def test_delete_topics_by_name_and_id(cluster):
    cluster.create("a", 1, 1, configs=(CreatableTopicConfig("retention.ms", "1"),))
    cluster.create("b", 1, 1)
    bid = cluster.image.topics.get_topic_by_name("b").id
    req = DeleteTopicsRequest((DeleteTopicState("a"), DeleteTopicState(topic_id=bid), DeleteTopicState("zz"),
                               DeleteTopicState(topic_id=Uuid.from_longs(1, 99))))
    r = cluster.run(delete_topics, req)
    assert types(r) == [("RemoveTopicRecord", 0)] * 2 and r.atomic
    assert [(x.name, x.error_code, x.error_message) for x in r.response.responses] == [
        ("a", 0, None), ("b", 0, None), ("zz", 3, "This server does not host this topic-partition."),
        (None, 100, "This server does not host this topic ID.")]
    assert len(cluster.image.topics) == 0 and cluster.image.configs.config(2, "a") == {}


# --------------------------------------------------------------------------- AlterPartition


def alter(c: RuleCluster, topic: str, pid: int, isr, *, leader_epoch=None, partition_epoch=None, broker=None,
          broker_epoch=None, recovery=0):
    p = c.partition(topic, pid)
    broker = p.leader if broker is None else broker
    t = c.image.topics.get_topic_by_name(topic)
    data = AlterPartitionData(pid, p.leader_epoch if leader_epoch is None else leader_epoch,
                              tuple(BrokerState(b) for b in isr),
                              p.partition_epoch if partition_epoch is None else partition_epoch, recovery)
    epoch = c.image.cluster.broker(broker).epoch if broker_epoch is None else broker_epoch
    return c.run(alter_partition, AlterPartitionRequest(broker, epoch, (AlterPartitionTopic(t.id, (data,)),)))


def code_of(r) -> int:
    return r.response.topics[0].partitions[0].error_code


def test_alter_partition_shrinks_and_expands_the_isr(cluster):
    cluster.create("t", 1, 3)
    p = cluster.partition("t", 0)
    follower = p.replicas[2]
    r = alter(cluster, "t", 0, [b for b in p.isr if b != follower])
    assert types(r) == [("PartitionChangeRecord", 2)] and not r.atomic
    assert to_json(r.records[0])["data"]["isr"] == [b for b in p.isr if b != follower]
    q = cluster.partition("t", 0)
    res = r.response.topics[0].partitions[0]
    assert (res.error_code, res.isr, res.leader_epoch, res.partition_epoch) == (0, q.isr, 0, 1)
    r = alter(cluster, "t", 0, p.isr)
    assert cluster.partition("t", 0).isr == p.isr and cluster.partition("t", 0).partition_epoch == 2


@pytest.mark.parametrize("change, code", [
    (dict(leader_epoch=1), 41),  # NOT_CONTROLLER: the leader knows a newer epoch
    (dict(partition_epoch=1), 41),
    (dict(leader_epoch=-1), 74),  # FENCED_LEADER_EPOCH
    (dict(partition_epoch=-1), 95),  # INVALID_UPDATE_VERSION
])
def test_alter_partition_epoch_checks(cluster, change, code):
    cluster.create("t", 1, 3)
    assert code_of(alter(cluster, "t", 0, cluster.partition("t", 0).isr, **change)) == code


def test_alter_partition_validity_checks(cluster):
    cluster.create("t", 1, 3)
    p = cluster.partition("t", 0)
    others = [b for b in p.replicas if b != p.leader]
    assert code_of(alter(cluster, "t", 0, p.isr, broker=others[0])) == 42  # not the leader
    assert code_of(alter(cluster, "t", 0, [p.leader, 9])) == 42  # not a replica
    assert code_of(alter(cluster, "t", 0, others)) == 42  # leaves the leader out
    assert code_of(alter(cluster, "t", 0, [p.leader], recovery=1)) == 42  # RECOVERED cannot go back to RECOVERING
    cluster.heartbeat(others[0], want_fence=True)
    assert code_of(alter(cluster, "t", 0, cluster.partition("t", 0).isr + (others[0],))) == 107  # INELIGIBLE_REPLICA
    r = alter(cluster, "t", 0, p.isr, broker_epoch=-5)
    assert r.error.name == "STALE_BROKER_EPOCH" and r.records == ()


def test_isr_shrink_bumps_the_leader_epoch_only_before_3_6_iv0():
    for mv, bump in (("3.5-IV2", 1), ("3.6-IV0", 0)):
        c = RuleCluster(mv)
        c.start_brokers([1, 2, 3])
        c.create("t", 1, 3)
        p = c.partition("t", 0)
        r = alter(c, "t", 0, p.isr[:2])
        assert c.partition("t", 0).leader_epoch == bump, mv
        assert ("leader" in to_json(r.records[0])["data"]) == bool(bump)


# --------------------------------------------------------------------------- ElectLeaders


def test_preferred_election_brings_leadership_back():
    c = RuleCluster("4.1-IV1", elr=False)
    c.start_brokers([1, 2, 3])
    c.create("t", 1, 3)
    preferred = c.partition("t", 0).replicas[0]
    c.heartbeat(preferred, want_fence=True)
    c.heartbeat(preferred)
    assert c.partition("t", 0).leader != preferred
    req = ElectLeadersRequest(0, (TopicPartitions("t", (0,)),))
    r = c.run(elect_leaders, req)
    # PREFERRED_LEADER_NOT_AVAILABLE: the preferred replica is not back in the ISR yet
    assert r.response.replica_election_results[0].partition_result[0].error_code == 80
    alter(c, "t", 0, c.partition("t", 0).isr + (preferred,))
    r = c.run(elect_leaders, req)
    assert types(r) == [("PartitionChangeRecord", 2)] and c.partition("t", 0).leader == preferred
    again = c.run(elect_leaders, req).response.replica_election_results[0].partition_result[0]
    assert (again.error_code, again.error_message) == (84, "Leader election not needed for topic partition.")
    everything = c.run(elect_leaders, ElectLeadersRequest(0, None))
    assert everything.response.replica_election_results[0].partition_result == ()


def test_unclean_election_picks_a_live_replica_and_marks_recovery():
    c = RuleCluster("4.1-IV1", elr=False)
    c.start_brokers([1, 2])
    c.create("t", 1, 2)
    first = c.partition("t", 0).leader
    second = 3 - first
    c.heartbeat(second, want_fence=True)
    c.heartbeat(first, want_fence=True)
    c.heartbeat(second)  # back, but not in the ISR
    assert c.partition("t", 0).leader == -1
    req = ElectLeadersRequest(1, (TopicPartitions("t", (0,)), TopicPartitions("nope", (0,))))
    r = c.run(elect_leaders, req)
    assert to_json(r.records[0])["data"] == {"partitionId": 0, "topicId": str(c.image.topics.get_topic_by_name("t").id),
                                             "isr": [second], "leader": second, "leaderRecoveryState": 1}
    results = r.response.replica_election_results
    assert (results[1].partition_result[0].error_code, results[1].partition_result[0].error_message) == (
        3, "No such topic as nope")
    assert c.partition("t", 0).leader_recovery_state == 1
    assert elect_leaders(c.ctx(), ElectLeadersRequest(7)).error.message == "Unknown election type 7"


@pytest.mark.parametrize("line, metadata_version, refused", [("3.4", "3.4-IV0", False), ("3.7", "3.7-IV4", True),
                                                           ("4.4", "4.4-IV2", True)])
def test_an_election_writing_more_than_ten_thousand_records_is_refused_whole_from_3_5(line, metadata_version, refused):
    """Kafka's bounded list of records (policy user_op_limits): 10,001 partitions made leaderless,
    then one unclean election of all of them."""
    c = RuleCluster(metadata_version, catalog=load_catalog(line=line), elr=False)
    c.start_brokers([1, 2])
    for name in ("a", "b"):
        c.create(name, 5_001 if name == "a" else 5_000, 2)
    c.heartbeat(2, want_fence=True)
    c.heartbeat(1, want_fence=True)
    c.heartbeat(2)  # back, but no longer in any ISR: every partition stays leaderless
    r = c.run(elect_leaders, ElectLeadersRequest(1, None))
    if refused:
        assert (r.error.name, r.error.message, r.records) == (
            "POLICY_VIOLATION", "Unable to perform excessively large batch operation.", ())
        assert c.partition("a", 0).leader == -1
    else:
        assert len(r.records) == 10_001 and c.partition("a", 0).leader == 2
        assert [len(t.partition_result) for t in r.response.replica_election_results] == [5_001, 5_000]


def test_a_hostile_election_naming_millions_of_partitions_is_refused_at_once():
    """kraftsim's bound (Kafka's is its frame size): answered before any partition is looked at."""
    c = RuleCluster("4.1-IV1")
    c.start_brokers([1, 2, 3])
    c.create("t", 2, 3)
    named = ElectLeadersRequest(0, (TopicPartitions("t", (0,)), TopicPartitions("nope", tuple(range(1_000_000)))))
    r = c.run(elect_leaders, named)
    assert (r.error.name, r.records) == ("UNKNOWN_SERVER_ERROR", ())
    fits = c.run(elect_leaders, ElectLeadersRequest(0, (TopicPartitions("nope", tuple(range(1_000_000))),)))
    assert len(fits.response.replica_election_results[0].partition_result) == 1_000_000


# --------------------------------------------------------------------------- the builder


def builder(c: RuleCluster, topic: str, pid: int, accept=lambda r: True) -> PartitionChangeBuilder:
    t = c.image.topics.get_topic_by_name(topic)
    p = t.partitions[pid]
    return PartitionChangeBuilder(c.ctx(), c.mv, t, pid, p, leader_acceptor(c.image, p, accept))


def test_no_change_means_no_record(cluster):
    cluster.create("t", 1, 3)
    assert builder(cluster, "t", 0).build() is None


def test_replica_removal_bumps_the_leader_epoch_and_keeps_directories_per_replica(cluster):
    cluster.create("t", 1, 3)
    p = cluster.partition("t", 0)
    b = builder(cluster, "t", 0)
    b.target_replicas = list(p.replicas[:2])
    b.target_isr = list(p.isr[:2])
    data = to_json(b.build())["data"]
    assert data["leader"] == p.leader and data["replicas"] == list(p.replicas[:2])
    assert data["directories"] == [str(d) for d in p.directories[:2]]


def test_elr_fields_are_not_written_below_version_2():
    c = RuleCluster("3.9-IV0")
    c.start_brokers([1, 2])
    c.create("t", 1, 2)
    b = builder(c, "t", 0)
    b.elr = True  # even if asked for, a v1 record cannot carry them
    b.min_isr = 2
    b.target_isr = [c.partition("t", 0).leader]
    rec = b.build()
    assert rec.version == 1 and rec.message.eligible_leader_replicas is None and rec.message.last_known_elr is None


def test_java_hash_set_order():
    assert java_int_set_order([3, 1], [2]) == [1, 2, 3]
    assert java_int_set_order([16, 15, 1]) == [16, 1, 15]  # bucket 0, 1, 15 of 16
    assert java_int_set_order([65538, 2, 3]) == [2, 65538, 3]  # 65538 spreads to bucket 3, not 2
    big = list(range(20))  # the table grows to 32 buckets
    assert java_int_set_order(big[::-1]) == big


# --------------------------------------------------------------------------- the real thing

ORACLE_CREATIONS = [
    # set, release, offset of the TopicRecord, brokers' own seen-from-image data, topic name
    ("kafka-3.4_cooler-SAI", "3.4", 178),
    ("kafka-3.7.0_ldipoc", "3.7", 416),
    ("kafka-4.1_dkoh12", "4.1", 81),
    ("kafka-4.1_dkoh12", "4.1", 162),
]


@needs_oracle
@pytest.mark.parametrize("folder, release, offset", ORACLE_CREATIONS)
def test_topic_creation_reproduces_kafkas_records(folder, release, offset):
    """The same request on Kafka's image gives Kafka's records, topic id aside."""
    entries = read_entries(ORACLE / folder / "__cluster_metadata-0" / "00000000000000000000.log")
    catalog = CATALOG.at_release(release)
    records = data_records(entries)
    image = replay(MetadataImage(), [e for e in records if e.offset < offset], catalog, offset)
    topic = next(e for e in entries if e.offset == offset).message
    written = []
    for e in records:
        if e.offset < offset or e.record_type.name == "NoOpRecord":
            continue
        tid = getattr(e.message, "topic_id", None)
        name = getattr(e.message, "resource_name", None)
        if tid != topic.topic_id and name != topic.name:
            break
        written.append(e)
    parts = [e.message for e in written if e.record_type.name == "PartitionRecord"]
    configs = tuple(CreatableTopicConfig(e.message.name, e.message.value)
                    for e in written if e.record_type.name == "ConfigRecord")
    from kraftsim.controller.context import ControllerConfig, ControllerContext
    ctx = ControllerContext(node_id=1, supported=catalog.supported_features(), image=image, catalog=catalog,
                            config=ControllerConfig(cluster_id="c"), next_write_offset=offset)
    r = create_topics(ctx, CreateTopicsRequest((CreatableTopic(topic.name, len(parts), len(parts[0].replicas),
                                                               configs=configs),)))
    mask = lambda d: {k: v for k, v in d.items() if k != "topicId"}  # noqa: E731 - Kafka's id is random
    assert [(p.record_type.name, p.version, mask(to_json(p)["data"])) for p in r.records] == [
        (e.record_type.name, e.version, mask(e.to_json()["data"])) for e in written]


def test_elr_follows_the_lines_gate():
    from kraftsim.controller.partition_change import elr_enabled
    on_4x = RuleCluster("4.0-IV1", catalog=CATALOG.at_release("4.0"), elr=False)
    assert not elr_enabled(on_4x.ctx(), on_4x.mv)  # 4.x: the feature decides
    on_4x = RuleCluster("4.0-IV1", catalog=CATALOG.at_release("4.0"), elr=True)
    assert elr_enabled(on_4x.ctx(), on_4x.mv)
    assert CATALOG.at_release("3.9").policy("elr_fields_gate") == "metadata.version"
    on_3x = RuleCluster("3.9-IV0", catalog=CATALOG.at_release("3.9"))
    assert not elr_enabled(on_3x.ctx(), on_3x.mv)  # 3.x: the metadata.version decides, and 3.9-IV0 predates ELR
