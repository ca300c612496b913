"""AuthorizedOperations (KIP-430) as a served node answers them: every operation the resource
type supports when the request asks (as Kafka answers without an authorizer, or a super user),
Integer.MIN_VALUE when it does not (live 3.3.2 to 4.4.0: tests/conformance/test_serve_vs_kafka.py)."""

from __future__ import annotations

import pytest

import kraftsim
from tests.wire.client import rpc

METADATA, DESCRIBE_CLUSTER, DESCRIBE_GROUPS, FIND_COORDINATOR, CREATE_TOPICS, DESCRIBE_TOPIC_PARTITIONS = \
    3, 60, 15, 10, 19, 75
NOT_ASKED = -2**31
#: READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS (codes 3-8, 10, 11).
TOPIC_OPERATIONS = 0b110111111000
#: CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE (5, 7-12).
CLUSTER_OPERATIONS = 0b1111110100000


def _metadata(address: str, version: int, topics: list[str] | None, **flags: bool) -> dict:
    answer = rpc(address, METADATA, version, {"Topics": None if topics is None else [{"Name": n} for n in topics],
                                              "AllowAutoTopicCreation": False, **flags})
    assert answer is not None
    return answer[1]


def test_topics_and_the_cluster_when_asked() -> None:
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        bs = k.bootstrap_servers
        rpc(bs, CREATE_TOPICS, 7, {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1}],
                                   "timeoutMs": 30000})
        asked = _metadata(bs, 8, ["t", "nope"], IncludeTopicAuthorizedOperations=True,
                          IncludeClusterAuthorizedOperations=True)
        assert asked["ClusterAuthorizedOperations"] == CLUSTER_OPERATIONS
        assert [t["TopicAuthorizedOperations"] for t in asked["Topics"]] == [TOPIC_OPERATIONS] * 2  # (unknown too)
        plain = _metadata(bs, 8, ["t"])
        assert (plain["ClusterAuthorizedOperations"], plain["Topics"][0]["TopicAuthorizedOperations"]) == \
            (NOT_ASKED, NOT_ASKED)
        # every topic's Metadata is answered from a cache: what was asked is part of its key
        assert _metadata(bs, 12, None)["Topics"][0]["TopicAuthorizedOperations"] == NOT_ASKED
        assert _metadata(bs, 12, None, IncludeTopicAuthorizedOperations=True)["Topics"][0][
            "TopicAuthorizedOperations"] == TOPIC_OPERATIONS
        assert _metadata(bs, 12, None)["Topics"][0]["TopicAuthorizedOperations"] == NOT_ASKED
        for flag, expected in ((True, CLUSTER_OPERATIONS), (False, NOT_ASKED)):
            answer = rpc(bs, DESCRIBE_CLUSTER, 0, {"IncludeClusterAuthorizedOperations": flag})
            assert answer is not None and answer[1]["ClusterAuthorizedOperations"] == expected
        answer = rpc(bs, DESCRIBE_TOPIC_PARTITIONS, 0, {"Topics": [{"Name": "t"}, {"Name": "nope"}],
                                                        "ResponsePartitionLimit": 10, "Cursor": None})
        assert answer is not None  # (always answered, also for a topic it does not know)
        assert [(t["Name"], t["TopicAuthorizedOperations"]) for t in answer[1]["Topics"]] == \
            [("nope", TOPIC_OPERATIONS), ("t", TOPIC_OPERATIONS)]


@pytest.mark.parametrize(("release", "operations"), [("3.7.2", 0b101001000), ("4.0.2", 0b110101001000)])
def test_a_described_group_from_4_0_also_has_its_configs(release: str, operations: int) -> None:
    """READ DELETE DESCRIBE, and from 4.0 (KIP-848's group configs) DESCRIBE_CONFIGS ALTER_CONFIGS."""
    with kraftsim.serve(combined=1, release=release, configs={"offsets.topic.replication.factor": 1}) as k:
        bs = k.bootstrap_servers
        rpc(bs, FIND_COORDINATOR, 4, {"KeyType": 0, "CoordinatorKeys": ["g"]})  # (creates __consumer_offsets)
        k.call(lambda s: s.sim.run(2_000))
        for flag, expected in ((True, operations), (False, NOT_ASKED)):
            answer = rpc(bs, DESCRIBE_GROUPS, 5, {"Groups": ["g"], "IncludeAuthorizedOperations": flag})
            assert answer is not None
            assert [(g["GroupState"], g["AuthorizedOperations"]) for g in answer[1]["Groups"]] == [("Dead", expected)]
