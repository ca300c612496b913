"""`kraftsim serve` finds a group's coordinator as a broker does: the first lookup has the broker
ask the controller for `__consumer_offsets` (the node's offsets.topic.* configs, the group
coordinator's three topic configs) and answers COORDINATOR_NOT_AVAILABLE; from then on the
coordinator is the leader of the group's partition, which describes every group as one it does
not know. (The tools' whole outputs are compared with live Kafka in the serve-tools conformance
case.)"""

from __future__ import annotations

import pytest

import kraftsim
from kraftsim.errors import KraftsimError
from kraftsim.javacompat import signed32, string_hash
from kraftsim.scenario import load_scenario
from kraftsim.scenario.runner import run_scenario
from kraftsim.sim import Simulation
from kraftsim.storage import validate_node_configs
from tests.wire.client import rpc

FIND_COORDINATOR, DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE, OFFSET_FETCH, METADATA, DELETE_GROUPS = 10, 15, 69, 9, 3, 42
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, UNSUPPORTED_VERSION, GROUP_ID_NOT_FOUND = 15, 16, 35, 69
ONE_REPLICA = {"offsets.topic.replication.factor": 1}


def _find(address: str, *groups: str, version: int = 4) -> list[dict]:
    _, body = rpc(address, FIND_COORDINATOR, version, {"KeyType": 0, "CoordinatorKeys": list(groups)})
    return body["Coordinators"]


def _offsets_topic(address: str) -> dict:
    _, body = rpc(address, METADATA, 12, {"Topics": [{"Name": "__consumer_offsets"}]})
    return body["Topics"][0]


def test_the_first_lookup_creates_the_offsets_topic_and_the_next_finds_the_leader_of_the_groups_partition():
    with kraftsim.serve(combined=1, release="4.0.2", configs=ONE_REPLICA) as k:
        first = _find(k.bootstrap_servers, "g1", "g2")
        assert [(c["Key"], c["ErrorCode"], c["NodeId"], c["Port"]) for c in first] == \
            [("g1", COORDINATOR_NOT_AVAILABLE, -1, -1), ("g2", COORDINATOR_NOT_AVAILABLE, -1, -1)]
        topic = _offsets_topic(k.bootstrap_servers)
        port = int(k.bootstrap_servers.rsplit(":", 1)[1])
        assert [(c["ErrorCode"], c["NodeId"], c["Port"]) for c in _find(k.bootstrap_servers, "g1")] == [(0, 1, port)]
        # before v4, one key, with Errors.message() (NONE's is its name)
        _, old = rpc(k.bootstrap_servers, FIND_COORDINATOR, 3, {"KeyType": 0, "Key": "g1"})
        configs = dict(k.call(lambda s: s.sim.image(1)).configs.config(2, "__consumer_offsets"))
    assert topic["ErrorCode"] == 0 and topic["IsInternal"] is True and len(topic["Partitions"]) == 50
    assert {len(p["ReplicaNodes"]) for p in topic["Partitions"]} == {1}
    assert configs == {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}
    assert (old["ErrorCode"], old["ErrorMessage"], old["NodeId"]) == (0, "NONE", 1)


def test_a_group_belongs_to_the_partition_of_its_java_hash():
    """abs(hashCode) % partitions: with 3 brokers and 3 partitions, each group's coordinator is
    its partition's leader, and any other broker refuses to describe it."""
    configs = {"offsets.topic.num.partitions": 3}
    with kraftsim.serve(controllers=1, brokers=3, release="4.4.0", configs=configs) as k:
        bootstrap = k.address(2)
        _find(bootstrap, "warm-up")
        leaders = {p["PartitionIndex"]: p["LeaderId"] for p in _offsets_topic(bootstrap)["Partitions"]}
        addresses = {node: k.address(node) for node in (2, 3, 4)}
        assert sorted(leaders.values()) == [2, 3, 4]
        for group in ("g1", "orders", "payments", "x"):
            h = signed32(string_hash(group))
            expected = leaders[abs(h) % 3]
            [found] = _find(bootstrap, group)
            assert found["NodeId"] == expected
            for node, address in addresses.items():
                _, body = rpc(address, DESCRIBE_GROUPS, 5, {"Groups": [group]})
                [described] = body["Groups"]
                if node == expected:
                    assert (described["ErrorCode"], described["GroupState"]) == (0, "Dead")
                else:
                    assert (described["ErrorCode"], described["GroupState"]) == (NOT_COORDINATOR, "")


def test_kafkas_default_replication_factor_cannot_be_placed_on_one_broker():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        for _ in range(3):
            assert _find(k.bootstrap_servers, "g1")[0]["ErrorCode"] == COORDINATOR_NOT_AVAILABLE
        _, body = rpc(k.bootstrap_servers, METADATA, 12, {"Topics": [{"Name": "__consumer_offsets"}],
                                                           "AllowAutoTopicCreation": False})
    assert body["Topics"][0]["ErrorCode"] == 3  # UNKNOWN_TOPIC_OR_PARTITION: never created


@pytest.mark.parametrize("release, describe_error", [("3.9.2", UNSUPPORTED_VERSION), ("4.0.2", GROUP_ID_NOT_FOUND)])
def test_an_unknown_group_is_dead_without_offsets(release, describe_error):
    with kraftsim.serve(combined=1, release=release, configs=ONE_REPLICA) as k:
        bs = k.bootstrap_servers
        _find(bs, "g1")
        _, described = rpc(bs, DESCRIBE_GROUPS, 5, {"Groups": ["g1"]})
        _, new_api = rpc(bs, CONSUMER_GROUP_DESCRIBE, 0, {"GroupIds": ["g1"]})
        _, all_offsets = rpc(bs, OFFSET_FETCH, 8, {"Groups": [{"GroupId": "g1", "Topics": None}]})
        _, named = rpc(bs, OFFSET_FETCH, 7, {"GroupId": "g1", "Topics": [{"Name": "t", "PartitionIndexes": [0, 1]}]})
        _, deleted = rpc(bs, DELETE_GROUPS, 2, {"GroupsNames": ["g1"]})
        v6 = rpc(bs, DESCRIBE_GROUPS, 6, {"Groups": ["g1"]}) if release >= "4" else None
    assert [(r["GroupId"], r["ErrorCode"]) for r in deleted["Results"]] == [("g1", GROUP_ID_NOT_FOUND)]
    if v6 is not None:  # KIP-1043 (measured on live 4.0.2): not found, with the new coordinator's text
        [group] = v6[1]["Groups"]
        assert (group["ErrorCode"], group["ErrorMessage"], group["GroupState"]) == \
            (GROUP_ID_NOT_FOUND, "Group g1 not found.", "Dead")
        assert [g["ErrorMessage"] for g in new_api["Groups"]] == ["Group g1 not found."]
    [group] = described["Groups"]
    assert (group["ErrorCode"], group["GroupState"], group["Members"], group["AuthorizedOperations"]) == \
        (0, "Dead", [], -2**31)
    assert [g["ErrorCode"] for g in new_api["Groups"]] == [describe_error]
    assert all_offsets["Groups"] == [{"GroupId": "g1", "Topics": [], "ErrorCode": 0}]
    assert named["ErrorCode"] == 0
    assert [(p["PartitionIndex"], p["CommittedOffset"], p["ErrorCode"]) for p in named["Topics"][0]["Partitions"]] == \
        [(0, -1, 0), (1, -1, 0)]


def _offsets_layout(sim: Simulation) -> tuple[dict[str, str], list[tuple[int, tuple[int, ...]]]]:
    image = sim.image(1)
    assert image is not None
    topic = image.topics.get_topic_by_name("__consumer_offsets")
    assert topic is not None
    return dict(image.configs.config(2, "__consumer_offsets")), [(i, tuple(p.replicas)) for i, p in topic.sorted_partitions()]


def test_the_offsets_topic_is_recorded_with_its_configs_and_replays_the_same(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(controllers=1, brokers=3, release="4.0.2", record=record) as k:
        _find(k.address(2), "g1")
        served = k.call(lambda s: _offsets_layout(s.sim))
    text = record.read_text()
    assert 'names = ["__consumer_offsets"]' in text and "segment.bytes" in text
    outcome = run_scenario(load_scenario(record), keep=tmp_path / "replayed")
    assert outcome.result.passed, [s.error for s in outcome.result.steps if not s.ok]
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        replayed = _offsets_layout(sim)
    assert replayed == served
    assert served[0] == {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}
    assert {len(r) for _, r in served[1]} == {3} and len(served[1]) == 50


@pytest.mark.parametrize("configs, text", [
    ({"offsets.topic.replication.factor": 0}, "Invalid value 0 for configuration offsets.topic.replication.factor: "
                                              "Value must be at least 1"),
    ({"offsets.topic.replication.factor": "40000"}, "Invalid value 40000 for configuration "
                                                    "offsets.topic.replication.factor: Not a number of type SHORT"),
    ({"offsets.topic.num.partitions": "many"}, "Invalid value many for configuration offsets.topic.num.partitions: "
                                               "Not a number of type INT"),
    ({"offsets.topic.num.partitions": True}, "expected a number"),
    ({"offsets.retention.minutes": 5}, "is not one kraftsim simulates"),
])
def test_group_coordinator_configs_are_checked_as_kafka_checks_them(configs, text):
    with pytest.raises(KraftsimError, match=text.replace(".", r"\.")):
        validate_node_configs(configs)


#: Several groups in one request, as live nodes answered them (2026-12-03): the old coordinator
#: (3.7.2) describes in the order asked and deletes in its Scala HashMap's order; the new one
#: (4.0.2) reads one partition of __consumer_offsets at a time, in its HashMap's order, and
#: answers a deleted name once. OffsetFetch answers each group in the order asked on both.
GROUPS = ["g1", "g2", "orders", "payments", "a", "zz", "g1"]
LIVE_ORDERS = {
    "3.7.2": (GROUPS, ["zz", "a", "payments", "orders", "g1", "g2"]),
    "4.0.2": (["a", "orders", "payments", "g2", "g1", "g1", "zz"], ["a", "orders", "payments", "g2", "g1", "zz"]),
}


@pytest.mark.parametrize("release", sorted(LIVE_ORDERS))
def test_several_groups_are_answered_in_the_order_of_the_releases_coordinator(release):
    described_order, deleted_order = LIVE_ORDERS[release]
    with kraftsim.serve(combined=1, release=release, configs=ONE_REPLICA) as k:
        bs = k.bootstrap_servers
        _find(bs, "g1")
        _, described = rpc(bs, DESCRIBE_GROUPS, 5, {"Groups": GROUPS})
        _, deleted = rpc(bs, DELETE_GROUPS, 2, {"GroupsNames": GROUPS})
        _, offsets = rpc(bs, OFFSET_FETCH, 8, {"Groups": [{"GroupId": g, "Topics": None} for g in GROUPS]})
    assert [g["GroupId"] for g in described["Groups"]] == described_order
    assert [g["GroupId"] for g in deleted["Results"]] == deleted_order
    assert [g["GroupId"] for g in offsets["Groups"]] == GROUPS
