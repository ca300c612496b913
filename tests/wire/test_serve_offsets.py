"""`kraftsim serve` answers ListOffsets as a broker of the node's release answers it for logs nobody
produced to: latest and earliest at offset 0 with the partition's leader epoch, nothing found for
any other time, Kafka's refusals per partition (unknown, not a replica, not the leader, fenced
epochs, repeated, a timestamp the version cannot ask for) and Kafka's order (the request's before
4.0, by hash from 4.0)."""

from __future__ import annotations

import pytest

import kraftsim
from kraftsim.controller import error_codes
from tests.wire.client import rpc

ERR = error_codes()
LIST_OFFSETS, CREATE_TOPICS = 2, 19
#: What a partition without any offset found is answered with (timestamp, offset, leader epoch).
NOTHING = (0, -1, -1, -1)


def _create(address: str, name: str, partitions: int, factor: int = 1) -> None:
    _, made = rpc(address, CREATE_TOPICS, 7, {"Topics": [{"Name": name, "NumPartitions": partitions,
                                                         "ReplicationFactor": factor}], "timeoutMs": 30000})
    assert made["Topics"][0]["ErrorCode"] == 0


def _topics(*entries: tuple[str, list[tuple[int, int]]], epoch: int = -1) -> list[dict[str, object]]:
    return [{"Name": name, "Partitions": [{"PartitionIndex": p, "Timestamp": ts, "CurrentLeaderEpoch": epoch}
                                         for p, ts in parts]} for name, parts in entries]


def _ask(address: str, version: int, topics: list[dict[str, object]], replica: int = -1,
         isolation: int = 0) -> list[tuple[str, int, tuple[int, int, int, int]]] | None:
    """(topic, partition, (error, timestamp, offset, leader epoch)) in the order answered; None: closed."""
    answer = rpc(address, LIST_OFFSETS, version, {"ReplicaId": replica, "IsolationLevel": isolation,
                                                  "Topics": topics})
    if answer is None:
        return None
    return [(t["Name"], p["PartitionIndex"], (p["ErrorCode"], p["Timestamp"], p["Offset"], p["LeaderEpoch"]))
            for t in answer[1]["Topics"] for p in t["Partitions"]]


def _one(address: str, version: int, ts: int, **kw: int) -> tuple[int, int, int, int]:
    answered = _ask(address, version, _topics(("t", [(0, ts)])), **kw)
    assert answered is not None and len(answered) == 1
    return answered[0][2]


@pytest.mark.parametrize("release", ["3.7.2", "3.9.2", "4.0.2", "4.4.0"])
def test_an_empty_log_starts_and_ends_at_zero_and_holds_no_time(release):
    with kraftsim.serve(combined=1, release=release) as k:
        bs = k.address(1)
        _create(bs, "t", 2)
        newest = 11 if release == "4.4.0" else 10 if release == "4.0.2" else 9 if release == "3.9.2" else 8
        for version in range(1, newest + 1):
            epoch = 0 if version >= 4 else -1  # (no LeaderEpoch before v4)
            assert _one(bs, version, -1) == (0, -1, 0, epoch)
            assert _one(bs, version, -2) == (0, -1, 0, epoch)
            assert _one(bs, version, 1764416400000) == NOTHING
            assert _one(bs, version, 0) == NOTHING
        assert _one(bs, newest, -3) == NOTHING  # max timestamp: no record has one
        assert _one(bs, newest, -4) == (0, -1, 0, 0)  # earliest local: the same as earliest without tiered storage
        unsupported = (ERR["UNSUPPORTED_VERSION"], -1, -1, -1)
        if release == "3.7.2":  # every timestamp is looked up: nothing found
            assert [_one(bs, 1, ts) for ts in (-3, -4, -5, -6, -7)] == [NOTHING, (0, -1, 0, -1), NOTHING, NOTHING,
                                                                        NOTHING]
        else:  # from 3.9 a special timestamp needs its version (-3: 7, -4: 8, -5: 9, -6: 11 from 4.2)
            assert [_one(bs, v, ts) for v, ts in ((6, -3), (7, -4), (8, -5), (newest, -7))] == [unsupported] * 4
            assert _one(bs, 9, -5) == NOTHING
            assert _one(bs, newest, -6) == (NOTHING if release == "4.4.0" else unsupported)
        # a controller listener does not serve it
        assert rpc(k.address(1, "controller"), LIST_OFFSETS, 1, {"ReplicaId": -1, "Topics": []}) is None


@pytest.mark.parametrize("release, local", [("3.4.1", False), ("3.5.2", True)])
def test_the_earliest_local_offset_is_known_from_3_5(release, local):
    """Before 3.5 -4 is a time like any other (live 3.3.2 and 3.4.1: nothing found, so
    kafka-get-offsets --time -4 prints nothing); from 3.5 it is the earliest local offset."""
    with kraftsim.serve(combined=1, release=release) as k:
        bs = k.address(1)
        _create(bs, "t", 1)
        assert _one(bs, 7, -4) == ((0, -1, 0, 0) if local else NOTHING)
        assert _one(bs, 7, -2) == (0, -1, 0, 0)


def test_leader_epochs_fencing_and_who_answers():
    with kraftsim.serve(controllers=1, brokers=3, release="4.4.0") as k:
        _create(k.address(2), "t", 1, factor=3)
        _create(k.address(2), "solo", 1)
        k.call(lambda s: s.operate("run", {"ms": 2_000}))
        first = k.call(lambda s: s.sim.image(s.sim.leader()).topics.get_topic_by_name("t").partitions[0].leader)
        k.crash(first)
        k.call(lambda s: s.operate("run", {"ms": 20_000}))
        p = k.call(lambda s: s.sim.image(s.sim.leader()).topics.get_topic_by_name("t").partitions[0])
        assert p.leader != first and p.leader_epoch >= 1
        leader, epoch = k.address(p.leader), p.leader_epoch
        # the new leader wrote its epoch at offset 0: latest and earliest both carry it
        assert _one(leader, 11, -1) == _one(leader, 11, -2) == (0, -1, 0, epoch)
        assert _one(leader, 4, -2, isolation=1) == (0, -1, 0, epoch)  # read committed: the same on an empty log
        assert _ask(leader, 11, _topics(("t", [(0, -1)]), epoch=epoch)) == [("t", 0, (0, -1, 0, epoch))]
        assert _ask(leader, 11, _topics(("t", [(0, -1)]), epoch=epoch - 1)) == [
            ("t", 0, (ERR["FENCED_LEADER_EPOCH"], -1, -1, -1))]
        assert _ask(leader, 11, _topics(("t", [(0, -1)]), epoch=epoch + 1)) == [
            ("t", 0, (ERR["UNKNOWN_LEADER_EPOCH"], -1, -1, -1))]
        k.start(first)
        k.call(lambda s: s.operate("run", {"ms": 20_000}))
        follower = k.address(first)
        not_leader = (ERR["NOT_LEADER_OR_FOLLOWER"], -1, -1, -1)
        assert _one(follower, 11, -1) == not_leader
        assert _one(follower, 11, -1, replica=p.leader) == not_leader  # a broker's id: only the leader answers
        # epochs are checked before leadership; a debugging tool may read a follower's log end
        assert _ask(follower, 11, _topics(("t", [(0, -1)]), epoch=epoch + 1)) == [
            ("t", 0, (ERR["UNKNOWN_LEADER_EPOCH"], -1, -1, -1))]
        assert _one(follower, 11, -1, replica=-2) == (0, -1, 0, epoch)
        assert _one(follower, 11, -3, replica=-2) == NOTHING
        assert _ask(follower, 11, _topics(("t", [(0, -2)])), replica=-2) is None  # its epoch cache: not carried out
        # a broker that holds no replica of an existing topic, and a topic or partition nobody has
        solo = k.call(lambda s: s.sim.image(s.sim.leader()).topics.get_topic_by_name("solo").partitions[0].leader)
        other = k.address(next(b for b in (2, 3, 4) if b not in (solo, first)))
        answered = _ask(other, 11, _topics(("solo", [(0, -1)]), ("t", [(1, -1)]), ("nope", [(0, -1)])))
        assert answered is not None and sorted(answered) == [
            ("nope", 0, (ERR["UNKNOWN_TOPIC_OR_PARTITION"], -1, -1, -1)), ("solo", 0, not_leader),
            ("t", 1, (ERR["UNKNOWN_TOPIC_OR_PARTITION"], -1, -1, -1))]


def test_the_order_and_repeats_before_and_from_4_0():
    asked = _topics(("orders", [(0, -1), (1, -1), (2, -2), (3, -3)]), ("payments", [(0, -1), (1, -1)]),
                    ("nope", [(0, -1)]), ("orders", [(1, -2), (4, -1)]), ("empty", []))
    dup = (ERR["INVALID_REQUEST"], -1, -1, -1)
    unknown = (ERR["UNKNOWN_TOPIC_OR_PARTITION"], -1, -1, -1)
    with kraftsim.serve(combined=1, release="3.9.2") as k:
        _create(k.address(1), "orders", 5)
        _create(k.address(1), "payments", 2)
        # the request's order, every entry answered (the repeated partition twice)
        answered = _ask(k.address(1), 9, asked)
        assert answered == [("orders", 0, (0, -1, 0, 0)), ("orders", 1, dup), ("orders", 2, (0, -1, 0, 0)),
                            ("orders", 3, NOTHING), ("payments", 0, (0, -1, 0, 0)), ("payments", 1, (0, -1, 0, 0)),
                            ("nope", 0, unknown), ("orders", 1, dup), ("orders", 4, (0, -1, 0, 0))]
        _, whole = rpc(k.address(1), LIST_OFFSETS, 9, {"ReplicaId": -1, "Topics": asked})
        assert [t["Name"] for t in whole["Topics"]] == ["orders", "payments", "nope", "orders", "empty"]
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        _create(k.address(1), "orders", 5)
        _create(k.address(1), "payments", 2)
        # once per partition, grouped by topic, in the order Kafka 4.4's Scala maps iterate (probed with
        # scala-library 2.13.18 and kafka-clients 4.4.0); a topic asked without partitions is not answered
        _, whole = rpc(k.address(1), LIST_OFFSETS, 11, {"ReplicaId": -1, "Topics": asked})
        assert [(t["Name"], [p["PartitionIndex"] for p in t["Partitions"]]) for t in whole["Topics"]] == [
            ("payments", [0, 1]), ("nope", [0]), ("orders", [0, 1, 2, 3, 4])]
        assert whole["Topics"][2]["Partitions"][1]["ErrorCode"] == ERR["INVALID_REQUEST"]
        assert rpc(k.address(1), LIST_OFFSETS, 11, {"ReplicaId": -1, "Topics": []})[1]["Topics"] == []


@pytest.mark.parametrize("release", ["3.7.2", "4.4.0"])
def test_an_isolation_level_kafka_does_not_know(release):
    with kraftsim.serve(combined=1, release=release) as k:
        _create(k.address(1), "t", 2)
        failed = (ERR["UNKNOWN_SERVER_ERROR"], -1, -1, -1)
        asked = _topics(("t", [(0, -1), (0, -2)]), ("nope", [(0, -1)]))
        answered = _ask(k.address(1), 5, asked, isolation=2)
        if release == "3.7.2":  # read per partition, after the repeat check, by a consumer's request only
            assert answered == [("t", 0, (ERR["INVALID_REQUEST"], -1, -1, -1))] * 2 + [("nope", 0, failed)]
            assert _ask(k.address(1), 5, asked[1:], isolation=2, replica=-2) == [
                ("nope", 0, (ERR["UNKNOWN_TOPIC_OR_PARTITION"], -1, -1, -1))]
        else:  # read before any partition: the whole request fails, every partition as asked
            assert answered == [("t", 0, failed), ("t", 0, failed), ("nope", 0, failed)]


@pytest.mark.parametrize("release", ["3.7.2", "3.9.2"])
def test_version_0_on_3x_and_not_on_4x(release):
    with kraftsim.serve(combined=1, release=release) as k:
        bs = k.address(1)
        _create(bs, "t", 1)

        def v0(ts: int, most: int = 1, topic: str = "t") -> tuple[int, list[int]] | None:
            answer = rpc(bs, LIST_OFFSETS, 0, {"ReplicaId": -1, "Topics": [
                {"Name": topic, "Partitions": [{"PartitionIndex": 0, "Timestamp": ts, "MaxNumOffsets": most}]}]})
            if answer is None:
                return None
            (p,) = answer[1]["Topics"][0]["Partitions"]
            return p["ErrorCode"], p["OldStyleOffsets"]

        assert v0(-1) == v0(-2) == v0(-1, 5) == (0, [0])
        assert v0(-1, 0) == (0, [])
        assert v0(-1, -1) == (ERR["UNKNOWN_SERVER_ERROR"], [])
        # below -2: a time before the log's one segment (3.7, 3.8), refused from 3.9
        assert v0(-3) == ((0, []) if release == "3.7.2" else (ERR["UNSUPPORTED_VERSION"], []))
        assert v0(-3, -1) == ((ERR["UNKNOWN_SERVER_ERROR"], []) if release == "3.7.2"
                              else (ERR["UNSUPPORTED_VERSION"], []))
        assert v0(-1, topic="nope") == (ERR["UNKNOWN_TOPIC_OR_PARTITION"], [])
        assert v0(1764416400000) is None  # answered from a segment file's time: not carried out
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        assert rpc(k.address(1), LIST_OFFSETS, 0, {"ReplicaId": -1, "Topics": []}) is None
