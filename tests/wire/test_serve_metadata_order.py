"""The order of the topics in a Metadata answer to named topics, per release: the orders live
nodes answered (tests/conformance/test_serve_vs_kafka.py compares many more whenever Kafka
can run)."""

from __future__ import annotations

import pytest

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.protocol.primitives import Uuid
from kraftsim.versions import release_name_key
from kraftsim.wire.metadata_order import named_topics_order, topic_ids_order
from tests.wire.client import rpc

ERR = error_codes()
SIX = ["a", "t", "zz", "nope", "b", "c"]  # a and t exist


@pytest.mark.parametrize(("release", "asked", "answered"), [
    # up to four names: the known ones, then the others, each in the order asked
    ("4.0.2", ["t", "nope"], ["t", "nope"]),
    ("4.0.2", ["nope", "t"], ["t", "nope"]),
    ("3.7.2", ["nope", "b", "a", "t"], ["a", "t", "nope", "b"]),
    # more: the known ones in the Scala hash trie's order; the others in a java.util.HashSet's
    # from 4.4 (live 4.4.0), in the trie's order of them alone before
    ("4.4.0", SIX, ["t", "a", "zz", "b", "c", "nope"]),
    ("4.0.2", SIX, ["t", "a", "nope", "b", "zz", "c"]),
])
def test_named_topics_are_answered_in_the_releases_order(release: str, asked: list[str], answered: list[str]) -> None:
    with kraftsim.serve(combined=1, release=release) as k:
        made = rpc(k.bootstrap_servers, 19, 5, {"Topics": [{"Name": n, "NumPartitions": 1, "ReplicationFactor": 1}
                                                          for n in ("t", "a")], "timeoutMs": 1000})
        assert made is not None and [t["ErrorCode"] for t in made[1]["Topics"]] == [0, 0]
        answer = rpc(k.bootstrap_servers, 3, 12, {"Topics": [{"Name": n} for n in asked],
                                                  "AllowAutoTopicCreation": False})
        assert answer is not None
        assert [t["Name"] for t in answer[1]["Topics"]] == answered
        every = rpc(k.bootstrap_servers, 3, 12, {"Topics": None})
        assert every is not None and [t["Name"] for t in every[1]["Topics"]] == ["a", "t"]


#: 32 topics, and the order live 3.7.2 and 4.4.0 nodes list them in when asked for every topic.
EVERY = ["orders", "payments", "clicks", "views", "users", "audit", "zz", "b", "c", "nope", "a", "t",
         *(f"topic-{i}" for i in range(20))]
EVERY_LISTED = ["topic-6", "zz", "topic-7", "topic-8", "topic-9", "nope", "payments", "topic-0", "topic-1", "topic-2",
                "topic-3", "topic-10", "topic-4", "topic-11", "topic-5", "topic-12", "audit", "views", "a", "b", "c",
                "users", "topic-13", "topic-14", "topic-15", "topic-16", "topic-17", "t", "topic-18", "topic-19",
                "clicks", "orders"]


@pytest.mark.parametrize("release", ["3.7.2", "4.4.0"])
def test_every_topic_is_listed_in_a_scala_hash_sets_order(release: str) -> None:
    with kraftsim.serve(combined=1, release=release) as k:
        made = rpc(k.bootstrap_servers, 19, 5, {"Topics": [{"Name": n, "NumPartitions": 1, "ReplicationFactor": 1}
                                                          for n in EVERY], "timeoutMs": 1000})
        assert made is not None and {t["ErrorCode"] for t in made[1]["Topics"]} == {0}
        for version, body in ((1, {"Topics": None}), (12, {"Topics": None, "AllowAutoTopicCreation": False})):
            answer = rpc(k.bootstrap_servers, 3, version, body)
            assert answer is not None and [t["Name"] for t in answer[1]["Topics"]] == EVERY_LISTED


def test_no_name_asks_for_every_topic_in_v0_only() -> None:
    """Metadata v0 cannot send a null list: an empty one asks for every topic (live 3.7.2);
    from v1 it asks for none."""
    with kraftsim.serve(combined=1, release="3.7.2") as k:
        rpc(k.bootstrap_servers, 19, 5, {"Topics": [{"Name": n, "NumPartitions": 1, "ReplicationFactor": 1}
                                                    for n in ("t", "a")], "timeoutMs": 1000})
        answers = [rpc(k.bootstrap_servers, 3, version, {"Topics": []}) for version in (0, 1, 3)]
        assert [[t["Name"] for t in a[1]["Topics"]] for a in answers if a is not None] == [["a", "t"], [], []]


def test_names_the_broker_creates_come_after_those_it_cannot_create() -> None:
    known, unknown = named_topics_order("3.9.2", ["n1", "bad name!", "n2", "o"], {"o"}, lambda n: n != "bad name!")
    assert (known, unknown) == (["o"], ["bad name!", "n1", "n2"])
    # more than four: the unknown names in the Scala hash trie's order, the ones it creates in
    # the order of the creation manager's hash map
    names = ["zz", "nope", "b", "c", "orders", "payments"]
    assert named_topics_order("4.3.1", names, set())[1] == ["payments", "nope", "b", "zz", "orders", "c"]
    assert named_topics_order("4.3.1", names, set(), lambda n: True)[1] == \
        ["zz", "b", "c", "nope", "payments", "orders"]


def test_unknown_ids_come_first_in_the_order_asked_up_to_four() -> None:
    one, two, three = (Uuid.from_longs(i, i) for i in (1, 2, 3))
    names = {two: "b", three: "a"}
    assert topic_ids_order([one, two, three], names.get) == (["b", "a"], [one])
    # beyond four ids, the names of the known ones come in the hash trie's order
    many = [Uuid.from_longs(i, 7 * i) for i in range(1, 7)]
    by_id = dict(zip(many, ["f", "e", "d", "c", "b", "a"]))
    found, unknown = topic_ids_order(many, by_id.get)
    assert unknown == [] and sorted(found) == sorted(by_id.values()) and found != list(by_id.values())


#: The partition order live 3.7.2 answered for new topics of 5, 13 and 40 partitions on one node
#: (Metadata v0, v1 and v12 alike): the order of the answer entries' hash codes in a Scala
#: mutable.HashSet. A 4.3 node or later answers them by index.
PARTITIONS_LISTED_3_7 = {
    "parts5": [1, 3, 2, 0, 4],
    "parts13": [1, 11, 10, 5, 0, 8, 3, 9, 6, 2, 7, 12, 4],
    "parts40": [17, 20, 11, 26, 23, 14, 5, 32, 0, 37, 29, 8, 7, 30, 4, 33, 39, 1, 36, 27, 10, 13, 24, 21, 16, 28, 3,
                9, 34, 15, 18, 19, 22, 6, 31, 35, 2, 38, 12, 25],
}


@pytest.mark.parametrize("release", ["3.7.2", "4.2.1", "4.3.1", "4.4.0"])
def test_a_topics_partitions_are_listed_in_the_releases_order(release: str) -> None:
    scala_cache = release_name_key(release) < (4, 3, 0)
    with kraftsim.serve(combined=1, release=release) as k:
        made = rpc(k.bootstrap_servers, 19, 5, {"Topics": [{"Name": n, "NumPartitions": len(order), "ReplicationFactor": 1}
                                                          for n, order in PARTITIONS_LISTED_3_7.items()],
                                                "timeoutMs": 1000})
        assert made is not None and {t["ErrorCode"] for t in made[1]["Topics"]} == {0}
        for version in (0, 1, 12):
            body: dict[str, object] = {"Topics": [{"Name": n} for n in PARTITIONS_LISTED_3_7]}
            if version >= 4:
                body["AllowAutoTopicCreation"] = False
            answer = rpc(k.bootstrap_servers, 3, version, body)
            assert answer is not None
            listed = {t["Name"]: [p["PartitionIndex"] for p in t["Partitions"]] for t in answer[1]["Topics"]}
            assert listed == (PARTITIONS_LISTED_3_7 if scala_cache
                              else {n: sorted(order) for n, order in PARTITIONS_LISTED_3_7.items()})


@pytest.mark.parametrize("release", ["3.7.2", "4.4.0"])
@pytest.mark.parametrize(("controllers", "brokers", "listed"), [(1, 3, [4, 2, 3]), (5, 4, [8, 9, 6, 7])])
def test_brokers_are_listed_in_the_broker_maps_order(release: str, controllers: int, brokers: int,
                                                     listed: list[int]) -> None:
    """As live nodes of both releases listed brokers 2-4 and 6-9 in Metadata and DescribeCluster."""
    with kraftsim.serve(controllers=controllers, brokers=brokers, release=release) as k:
        address = k.address(controllers + 1)
        for version, body in ((1, {"Topics": []}), (12, {"Topics": [], "AllowAutoTopicCreation": False})):
            answer = rpc(address, 3, version, body)
            assert answer is not None and [b["NodeId"] for b in answer[1]["Brokers"]] == listed
            assert answer[1]["ControllerId"] == min(listed)
        described = rpc(address, 60, 0, {"IncludeClusterAuthorizedOperations": False})
        assert described is not None and [b["BrokerId"] for b in described[1]["Brokers"]] == listed
