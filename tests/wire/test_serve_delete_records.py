"""`kraftsim serve` answers DeleteRecords as a broker answers it for logs nobody produced to:
offset 0 (or -1, the high watermark) deleted at once with low watermark 0, anything else refused
per partition with Kafka's reason, in the broker's order (live 3.7.2, 4.0.2 and 4.4.0 nodes:
tests/conformance/test_serve_vs_kafka.py)."""

from __future__ import annotations

import pytest

import kraftsim
from kraftsim.controller import error_codes
from tests.wire.client import rpc

ERR = error_codes()
DELETE_RECORDS, CREATE_TOPICS, METADATA = 21, 19, 3


def _create(address: str, name: str, partitions: int, factor: int = 1, **configs: str) -> None:
    _, made = rpc(address, CREATE_TOPICS, 7, {"Topics": [{
        "Name": name, "NumPartitions": partitions, "ReplicationFactor": factor,
        "Configs": [{"Name": k.replace("_", "."), "Value": v} for k, v in configs.items()]}], "timeoutMs": 30000})
    assert made["Topics"][0]["ErrorCode"] == 0


def _delete(address: str, version: int, *entries: tuple[str, list[tuple[int, int]]]) -> list[tuple[str, int, int, int]]:
    """(topic, partition, error, low watermark) in the order answered."""
    answer = rpc(address, DELETE_RECORDS, version, {"Topics": [
        {"Name": n, "Partitions": [{"PartitionIndex": p, "Offset": o} for p, o in parts]} for n, parts in entries],
        "TimeoutMs": 30000})
    assert answer is not None
    return [(t["Name"], p["PartitionIndex"], p["ErrorCode"], p["LowWatermark"])
            for t in answer[1]["Topics"] for p in t["Partitions"]]


def test_an_empty_log_deletes_up_to_its_end_and_refuses_the_rest():
    with kraftsim.serve(combined=1, release="4.4.0", configs={"offsets.topic.replication.factor": 1}) as k:
        bs = k.bootstrap_servers
        _create(bs, "d", 3)
        _create(bs, "kept", 1, cleanup_policy="compact")
        _create(bs, "both", 1, cleanup_policy="compact,delete")
        answered = _delete(bs, 2, ("d", [(0, 0), (1, -1), (2, 5)]), ("kept", [(0, 0)]), ("both", [(0, -1)]),
                           ("nope", [(0, 0)]), ("d", [(7, 0), (0, -2)]))
        assert sorted(answered) == sorted([
            ("d", 0, ERR["OFFSET_OUT_OF_RANGE"], -1),  # (asked twice: the last offset, -2, counts)
            ("d", 1, 0, 0), ("d", 2, ERR["OFFSET_OUT_OF_RANGE"], -1),
            ("kept", 0, ERR["POLICY_VIOLATION"], -1), ("both", 0, 0, 0),
            ("nope", 0, ERR["UNKNOWN_TOPIC_OR_PARTITION"], -1), ("d", 7, ERR["UNKNOWN_TOPIC_OR_PARTITION"], -1)])
        # one entry per topic (d's partitions together), in the broker's hash order, not the request's
        topics = [t for t, *_ in answered]
        runs = [t for i, t in enumerate(topics) if i == 0 or topics[i - 1] != t]
        assert sorted(runs) == ["both", "d", "kept", "nope"] and runs != ["d", "kept", "both", "nope"]
        assert _delete(bs, 0, ("d", [(1, 0)])) == [("d", 1, 0, 0)]
        rpc(bs, 10, 4, {"KeyType": 0, "CoordinatorKeys": ["g"]})  # (the first lookup creates __consumer_offsets)
        k.call(lambda s: s.sim.run(2_000))
        assert k.call(lambda s: s.sim.image(1).topics.get_topic_by_name("__consumer_offsets")) is not None
        assert _delete(bs, 2, ("__consumer_offsets", [(0, 0)])) == \
            [("__consumer_offsets", 0, ERR["INVALID_TOPIC_EXCEPTION"], -1)]


def test_only_the_leader_deletes():
    with kraftsim.serve(controllers=1, brokers=2, release="3.7.2") as k:
        first, second = k.address(2), k.address(3)
        _create(first, "r", 1, factor=2)
        _create(first, "solo", 2)
        leader = k.call(lambda s: s.sim.image(2).topics.get_topic_by_name("r").partitions[0].leader)
        leading, following = (first, second) if leader == 2 else (second, first)
        assert _delete(leading, 1, ("r", [(0, 0)])) == [("r", 0, 0, 0)]
        assert _delete(following, 1, ("r", [(0, 0)])) == [("r", 0, ERR["NOT_LEADER_OR_FOLLOWER"], -1)]
        solo = k.call(lambda s: {i: p.leader for i, p in
                                 s.sim.image(2).topics.get_topic_by_name("solo").partitions.items()})
        elsewhere = next(i for i, b in solo.items() if b != 2)  # (no replica on broker 2 at all)
        assert _delete(first, 1, ("solo", [(elsewhere, 0)])) == [("solo", elsewhere, ERR["NOT_LEADER_OR_FOLLOWER"], -1)]


@pytest.mark.parametrize(("release", "internal"), [("3.8.1", False), ("3.9.2", True), ("4.4.0", True)])
def test_the_share_group_state_topic_is_internal_from_3_9(release: str, internal: bool):
    """Topic.isInternal counts __share_group_state from 3.9: before, a topic of that name is any
    topic, listed as not internal and with records to delete."""
    with kraftsim.serve(combined=1, release=release) as k:
        bs = k.bootstrap_servers
        _create(bs, "__share_group_state", 1)
        _, answer = rpc(bs, METADATA, 9, {"Topics": [{"Name": "__share_group_state"}],
                                           "AllowAutoTopicCreation": False})
        assert [t["IsInternal"] for t in answer["Topics"]] == [internal]
        refused = ERR["INVALID_TOPIC_EXCEPTION"] if internal else 0
        assert _delete(bs, 1, ("__share_group_state", [(0, 0)])) == \
            [("__share_group_state", 0, refused, -1 if internal else 0)]
