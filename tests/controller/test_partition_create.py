"""CreatePartitions (kafka-topics --alter --partitions) and how large one CreateTopics or
CreatePartitions request may be, per release (policy `user_op_limits`, read from the
released jars: none before 3.5, 10,000 records from 3.5, 10,000 partitions per CreateTopics
from 3.9.1, 10,000 additional partitions per CreatePartitions in 4.4)."""

from __future__ import annotations

import pytest

from kraftsim.controller import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    create_partitions,
    create_topics,
)
from kraftsim.controller.api_errors import error_codes
from kraftsim.versions import load_catalog
from tests.controller.cluster_support import RuleCluster

#: A release line and a metadata.version it runs at.
LINES = {"3.4": "3.4-IV0", "3.7": "3.7-IV4", "3.9.0": "3.9-IV0", "3.9.2": "3.9-IV0", "4.3": "4.3-IV0",
         "4.4": "4.4-IV2"}


def cluster(line: str = "4.4", brokers=(1, 2, 3)) -> RuleCluster:
    c = RuleCluster(LINES[line], catalog=load_catalog(line=line))
    c.start_brokers(brokers, dirs=2)
    return c


def make(c: RuleCluster, *topics: tuple[str, int], rf: int = 3):
    r = c.run(create_topics, CreateTopicsRequest(tuple(CreatableTopic(n, p, rf) for n, p in topics), seed=1))
    assert r.ok and all(t.error_code == 0 for t in r.response.topics), r
    return r


def grow(c: RuleCluster, *topics: CreatePartitionsTopic, validate_only: bool = False):
    return c.run(create_partitions, CreatePartitionsRequest(tuple(topics), validate_only, seed=7))


def answers(r) -> dict[str, tuple[str, str | None]]:
    names = {code: name for name, code in error_codes().items()}
    return {t.name: (names[t.error_code], t.error_message) for t in r.response.results}


def partitions(c: RuleCluster, name: str) -> dict[int, tuple[int, ...]]:
    return {i: tuple(p.replicas) for i, p in c.image.topics.get_topic_by_name(name).sorted_partitions()}


# ------------------------------------------------------------------------ the rule


def test_new_partitions_follow_the_old_ones_with_the_topics_replication_factor():
    c = cluster()
    make(c, ("t", 2), rf=2)
    r = grow(c, CreatePartitionsTopic("t", 5))
    assert answers(r) == {"t": ("NONE", None)}
    assert [(p.record_type.name, p.message.partition_id) for p in r.records] == [("PartitionRecord", i)
                                                                                for i in (2, 3, 4)]
    grown = partitions(c, "t")
    assert sorted(grown) == [0, 1, 2, 3, 4] and {len(rs) for rs in grown.values()} == {2}
    new = c.image.topics.get_topic_by_name("t").partitions[3]
    assert new.leader == new.isr[0] and new.leader_epoch == 0 and len(new.directories) == 2


def test_kafkas_refusals_with_its_texts():
    c = cluster()
    make(c, ("t", 3))
    r = grow(c, CreatePartitionsTopic("t", 3), CreatePartitionsTopic("nope", 2))
    assert answers(r) == {"t": ("INVALID_PARTITIONS", "Topic already has 3 partition(s)."),
                          "nope": ("UNKNOWN_TOPIC_OR_PARTITION", None)}
    r = grow(c, CreatePartitionsTopic("t", 1))
    assert answers(r)["t"] == ("INVALID_PARTITIONS", "The topic t currently has 3 partition(s); 1 would not be an "
                                                     "increase.")
    r = grow(c, CreatePartitionsTopic("t", 5, ((1, 2, 3),)))
    assert answers(r)["t"] == ("INVALID_REPLICA_ASSIGNMENT", "Attempted to add 2 additional partition(s), but only 1 "
                                                             "assignment(s) were specified.")
    r = grow(c, CreatePartitionsTopic("t", 4, ((1, 2),)))
    assert answers(r)["t"] == ("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes a partition "
                                                             "with 2 replica(s), but this is not consistent with previous "
                                                             "partitions, which have 3 replica(s).")
    r = grow(c, CreatePartitionsTopic("t", 4, ((1, 2, 9),)))
    assert answers(r)["t"] == ("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes broker 9, but "
                                                             "no such broker is registered.")
    assert c.log == [e for e in c.log if e[1].record_type.name != "PartitionRecord" or e[1].message.partition_id < 3]


def test_a_name_given_twice_is_refused_and_the_others_go_on():
    c = cluster()
    make(c, ("a", 1), ("b", 1))
    r = grow(c, CreatePartitionsTopic("a", 2), CreatePartitionsTopic("b", 2), CreatePartitionsTopic("a", 3))
    assert answers(r) == {"a": ("INVALID_REQUEST", "Duplicate topic name."), "b": ("NONE", None)}
    assert len(partitions(c, "a")) == 1 and len(partitions(c, "b")) == 2


def test_manual_assignments_and_validate_only():
    c = cluster()
    make(c, ("t", 1))
    assert grow(c, CreatePartitionsTopic("t", 3, ((3, 2, 1), (2, 1, 3))), validate_only=True).records == ()
    assert len(partitions(c, "t")) == 1
    grow(c, CreatePartitionsTopic("t", 3, ((3, 2, 1), (2, 1, 3))))
    assert [partitions(c, "t")[i] for i in (1, 2)] == [(3, 2, 1), (2, 1, 3)]


def test_placement_is_reproducible_per_seed():
    one, two = cluster(), cluster()
    for c in (one, two):
        make(c, ("t", 1))
        grow(c, CreatePartitionsTopic("t", 12))
    assert partitions(one, "t") == partitions(two, "t")


def test_a_broker_with_every_directory_cordoned_in_a_manual_assignment_is_refused_from_4_4_only():
    for line, expected in (("4.3", ("NONE", None)),
                           ("4.4", ("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes broker 3, "
                                                                  "but all its log directories are cordoned."))):
        c = cluster(line)
        make(c, ("t", 1))
        c.heartbeat(3, cordoned_log_dirs=c.image.cluster.broker(3).directories)
        assert c.image.cluster.broker(3).all_directories_cordoned
        assert answers(grow(c, CreatePartitionsTopic("t", 2, ((1, 2, 3),))))["t"] == expected, line
        r = c.run(create_topics, CreateTopicsRequest((CreatableTopic(
            "m", assignments=(CreatableReplicaAssignment(0, (3, 1, 2)),)),), seed=1))
        got = r.response.result("m")
        assert (got.error_code == 0) == (expected[0] == "NONE") and got.error_message == expected[1], line


# ------------------------------------------------------------------------ how large a request may be


@pytest.mark.parametrize("line, refusal", [
    ("3.4", None),
    ("3.7", "Unable to perform excessively large batch operation."),
    ("3.9.0", "Unable to perform excessively large batch operation."),
    ("3.9.2", "Unable to perform excessively large batch operation."),
    ("4.4", "Unable to perform excessively large batch operation."),
])
def test_a_create_topics_of_more_than_10000_records_is_refused_whole_from_3_5(line, refusal):
    """Two topics of 5,000 partitions: 10,000 partitions (within 3.9.1's partition limit), 10,002 records."""
    c = cluster(line)
    r = c.run(create_topics, CreateTopicsRequest((CreatableTopic("a", 5000, 1), CreatableTopic("b", 5000, 1)),
                                                 validate_only=True))
    assert (r.error.message if not r.ok else None) == refusal
    assert r.records == ()


@pytest.mark.parametrize("line, refusal", [
    ("3.4", None),
    ("3.9.0", "Unable to perform excessively large batch operation."),
    ("3.9.2", "Excessively large number of partitions per request."),
])
def test_more_than_10000_partitions_in_one_create_topics_is_named_as_such_from_3_9_1(line, refusal):
    c = cluster(line)
    r = c.run(create_topics, CreateTopicsRequest((CreatableTopic("a", 6000, 1), CreatableTopic("b", 4001, 1)),
                                                 validate_only=True))
    assert (r.error.message if not r.ok else None) == refusal
    assert r.ok or r.error.name == "POLICY_VIOLATION"


def test_a_create_partitions_overflowing_10000_records_keeps_what_fitted_from_3_5():
    """Kafka's bounded list of records: the topic that overflows it, and every later one, is
    UNKNOWN_SERVER_ERROR, and the records made before the overflow are still written."""
    c = cluster("3.7")
    make(c, ("a", 1), ("b", 1), ("c", 1), rf=1)
    r = grow(c, CreatePartitionsTopic("a", 9000), CreatePartitionsTopic("b", 2000), CreatePartitionsTopic("c", 2))
    assert answers(r) == {"a": ("NONE", None), "b": ("UNKNOWN_SERVER_ERROR", None),
                          "c": ("UNKNOWN_SERVER_ERROR", None)}
    assert [t.name for t in r.response.results] == ["a", "b", "c"]  # (the order of a Java HashSet of the names)
    assert len(r.records) == 10_000
    assert (len(partitions(c, "a")), len(partitions(c, "b")), len(partitions(c, "c"))) == (9000, 1 + 1001, 1)


def test_before_3_5_a_create_partitions_is_unbounded():
    c = cluster("3.4")
    make(c, ("a", 1), ("b", 1), rf=1)
    r = grow(c, CreatePartitionsTopic("a", 9000), CreatePartitionsTopic("b", 2000))
    assert answers(r) == {"a": ("NONE", None), "b": ("NONE", None)} and len(r.records) == 10_998


def test_4_4_refuses_more_than_10000_additional_partitions_before_making_any():
    c = cluster("4.4")
    make(c, ("a", 1), ("b", 1), rf=1)
    r = grow(c, CreatePartitionsTopic("a", 9000), CreatePartitionsTopic("b", 2000))
    assert (r.error.name, r.error.message) == ("POLICY_VIOLATION",
                                               "Excessively large number of additional partitions per request.")
    assert r.records == ()
    ok = grow(c, CreatePartitionsTopic("a", 9000), CreatePartitionsTopic("b", 1002))  # 8,999 + 1,001 = 10,000
    assert ok.ok and len(ok.records) == 10_000


@pytest.mark.parametrize("line", ["3.4", "3.7", "4.3", "4.4"])
def test_a_hostile_count_is_answered_without_making_it(line):
    """2,000,000,000 partitions asked for: every release answers at once (bounded work)."""
    c = cluster(line)
    make(c, ("t", 1), rf=1)
    grown = grow(c, CreatePartitionsTopic("t", 2_000_000_000))
    made = c.run(create_topics, CreateTopicsRequest((CreatableTopic("huge", 2_000_000_000, 1),), validate_only=True))
    if line == "3.4":  # (no limit of Kafka's own: kraftsim's cap)
        assert answers(grown)["t"][0] == "UNKNOWN_SERVER_ERROR" and grown.records == ()
        assert made.response.result("huge").error_code == error_codes()["UNKNOWN_SERVER_ERROR"]
    elif line == "4.4":
        assert grown.error.name == "POLICY_VIOLATION" and made.error.name == "POLICY_VIOLATION"
    else:
        assert answers(grown)["t"][0] == "UNKNOWN_SERVER_ERROR" and len(grown.records) == 10_000
        assert made.error.name == "POLICY_VIOLATION"


def test_a_topic_that_cannot_be_placed_is_its_own_error_before_the_record_limit():
    """Kafka places a topic before its records fill the list: a replication factor the brokers
    cannot meet is that topic's error even when its partitions would overflow the list."""
    c = cluster("3.7")
    r = c.run(create_topics, CreateTopicsRequest((CreatableTopic("wide", 20_000, 9), CreatableTopic("ok", 2, 1)),
                                                 validate_only=True))
    assert r.ok
    assert r.response.result("wide").error_message == ("Unable to replicate the partition 9 time(s): The target "
                                                       "replication factor of 9 cannot be reached because only 3 "
                                                       "broker(s) are registered.")
    assert r.response.result("ok").error_code == 0
