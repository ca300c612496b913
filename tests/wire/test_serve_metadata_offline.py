"""Metadata of partitions with a replica on a crashed, fenced broker, as live Kafka answered it:
a trio (controller 1, brokers 2 and 3) with topics t (replicas [2, 3] and [3, 2]) and u ([3] and
[2]), broker 3 killed and fenced, asked through broker 2 (measured on live 3.7.2 and 4.4.0 nodes
with the same topics). v0 lists only the replicas on alive brokers and answers
REPLICA_NOT_AVAILABLE when that leaves one out; up to 4.2 a topic's partitions come in the
order of their answer entries' hash codes, from 4.3 by index."""

from __future__ import annotations

import time

import pytest

import kraftsim
from tests.wire.client import rpc

TOPICS = {"t": ((2, 3), (3, 2)), "u": ((3,), (2,))}

#: (topic, partition, error, leader, replicas, ISR, offline replicas) per Metadata version, live.
LIVE = {
    "3.7.2": {
        0: [("t", 1, 9, 2, [2], [2], []), ("t", 0, 9, 2, [2], [2], []), ("u", 1, 0, 2, [2], [2], []),
            ("u", 0, 5, -1, [], [], [])],
        1: [("t", 1, 0, 2, [3, 2], [2], []), ("t", 0, 0, 2, [2, 3], [2], []), ("u", 1, 0, 2, [2], [2], []),
            ("u", 0, 5, -1, [3], [3], [])],
        12: [("t", 1, 0, 2, [3, 2], [2], [3]), ("t", 0, 0, 2, [2, 3], [2], [3]), ("u", 1, 0, 2, [2], [2], []),
             ("u", 0, 5, -1, [3], [3], [3])],
    },
    "4.4.0": {  # (with ELR, the last replica leaves the ISR of u-0)
        0: [("t", 0, 9, 2, [2], [2], []), ("t", 1, 9, 2, [2], [2], []), ("u", 0, 5, -1, [], [], []),
            ("u", 1, 0, 2, [2], [2], [])],
        1: [("t", 0, 0, 2, [2, 3], [2], []), ("t", 1, 0, 2, [3, 2], [2], []), ("u", 0, 5, -1, [3], [], []),
            ("u", 1, 0, 2, [2], [2], [])],
        12: [("t", 0, 0, 2, [2, 3], [2], [3]), ("t", 1, 0, 2, [3, 2], [2], [3]), ("u", 0, 5, -1, [3], [], [3]),
             ("u", 1, 0, 2, [2], [2], [])],
    },
}


def _answer(address: str, version: int) -> list[tuple[object, ...]]:
    body: dict[str, object] = {"Topics": [{"Name": n} for n in TOPICS]}
    if version >= 4:
        body["AllowAutoTopicCreation"] = False
    answer = rpc(address, 3, version, body)
    assert answer is not None
    return [(t["Name"], p["PartitionIndex"], p["ErrorCode"], p["LeaderId"], p["ReplicaNodes"], p["IsrNodes"],
             p.get("OfflineReplicas", [])) for t in answer[1]["Topics"] for p in t["Partitions"]]


@pytest.mark.parametrize("release", sorted(LIVE))
def test_metadata_of_partitions_with_a_fenced_replica_is_answered_as_live_kafka(release: str) -> None:
    with kraftsim.serve(controllers=1, brokers=2, release=release, speed=20.0) as k:
        made = rpc(k.address(2), 19, 5, {"Topics": [
            {"Name": name, "NumPartitions": -1, "ReplicationFactor": -1,
             "Assignments": [{"PartitionIndex": i, "BrokerIds": list(r)} for i, r in enumerate(replicas)]}
            for name, replicas in TOPICS.items()], "timeoutMs": 1000})
        assert made is not None and [t["ErrorCode"] for t in made[1]["Topics"]] == [0, 0]
        k.crash(3)
        deadline = time.monotonic() + 120  # until broker 2 has applied the fencing (~9 s simulated)
        while _answer(k.address(2), 1) != LIVE[release][1]:
            assert time.monotonic() < deadline, _answer(k.address(2), 1)
            time.sleep(0.05)
        for version in (0, 1, 12):
            assert _answer(k.address(2), version) == LIVE[release][version]
