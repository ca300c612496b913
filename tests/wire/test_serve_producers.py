"""`kraftsim serve` answers DescribeProducers as a broker answers it for logs nobody produced
to: no producers on any replica, leader or follower, and Kafka's refusals of the topic (with a
text) and of the partition (without), in the request's order (live 3.7.2, 4.0.2 and 4.4.0 nodes:
tests/conformance/test_serve_vs_kafka.py)."""

from __future__ import annotations

import kraftsim
from kraftsim.controller import error_codes
from tests.wire.client import rpc

ERR = error_codes()
DESCRIBE_PRODUCERS, CREATE_TOPICS = 61, 19


def _describe(address: str, *topics: tuple[str, list[int]]) -> list[tuple[str, int, int, str | None, list]]:
    answer = rpc(address, DESCRIBE_PRODUCERS, 0, {"Topics": [{"Name": n, "PartitionIndexes": i} for n, i in topics]})
    assert answer is not None
    return [(t["Name"], p["PartitionIndex"], p["ErrorCode"], p["ErrorMessage"], p["ActiveProducers"])
            for t in answer[1]["Topics"] for p in t["Partitions"]]


def test_no_producers_on_any_replica_and_kafkas_refusals():
    with kraftsim.serve(controllers=1, brokers=2, release="4.4.0") as k:
        first, second = k.address(2), k.address(3)
        rpc(first, CREATE_TOPICS, 7, {"Topics": [{"Name": "r", "NumPartitions": 1, "ReplicationFactor": 2},
                                                 {"Name": "solo", "NumPartitions": 2, "ReplicationFactor": 1}],
                                      "timeoutMs": 30000})
        for address in (first, second):  # (the follower holds a log too)
            assert _describe(address, ("r", [0])) == [("r", 0, 0, None, [])]
        solo = k.call(lambda s: {i: p.replicas for i, p in
                                 s.sim.image(2).topics.get_topic_by_name("solo").partitions.items()})
        away = next(i for i, replicas in solo.items() if 2 not in replicas)
        assert _describe(first, ("nope", [1, 0]), ("solo", [away, 5]), ("a b", [0]), ("r", [])) == [
            ("nope", 1, ERR["UNKNOWN_TOPIC_OR_PARTITION"], "This server does not host this topic-partition.", []),
            ("nope", 0, ERR["UNKNOWN_TOPIC_OR_PARTITION"], "This server does not host this topic-partition.", []),
            ("solo", away, ERR["NOT_LEADER_OR_FOLLOWER"], None, []),
            ("solo", 5, ERR["UNKNOWN_TOPIC_OR_PARTITION"], None, []),
            ("a b", 0, ERR["INVALID_TOPIC_EXCEPTION"],
             "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' "
             "and '-'", [])]
