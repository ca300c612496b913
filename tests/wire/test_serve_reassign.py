"""`kraftsim serve` carries out AlterPartitionReassignments (kafka-reassign-partitions) through a
broker (forwarded) and a controller listener: per partition Kafka's codes and texts, the
reassignment shown by ListPartitionReassignments while it is under way and gone once the
simulated cluster completed it, a cancel, a request refused whole, and the accepted partitions
recorded as a `reassign-partitions` step that replays."""

from __future__ import annotations

from typing import Any

import pytest

import kraftsim
from kraftsim.conformance.wire_client import WireClient
from kraftsim.controller import error_codes
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import load_scenario

ERR = error_codes()


def _call(address: str, api: str, version: int, body: dict[str, Any]) -> dict[str, Any]:
    host, port = address.rsplit(":", 1)
    with WireClient(host, int(port)) as client:
        return client.request(api, version, body)


def _alter(address: str, plan: list[tuple[str, int, list[int] | None]], version: int = 0,
           **extra: Any) -> tuple[int, dict[tuple[str, int], tuple[int, str | None]]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for name, pid, replicas in plan:
        topics.setdefault(name, []).append({"PartitionIndex": pid, "Replicas": replicas})
    body = _call(address, "AlterPartitionReassignments", version,
                 {"TimeoutMs": 30000, "Topics": [{"Name": n, "Partitions": ps} for n, ps in topics.items()], **extra})
    return body["ErrorCode"], {(t["Name"], p["PartitionIndex"]): (p["ErrorCode"], p["ErrorMessage"])
                               for t in body["Responses"] for p in t["Partitions"]}


def _ongoing(address: str) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    body = _call(address, "ListPartitionReassignments", 0, {"TimeoutMs": 30000, "Topics": None})
    assert body["ErrorCode"] == 0
    return {(t["Name"], p["PartitionIndex"]): (p["Replicas"], p["AddingReplicas"], p["RemovingReplicas"])
            for t in body["Topics"] for p in t["Partitions"]}


def _partition(served, pid: int):
    return served.sim.image(served.sim.leader()).topics.get_topic_by_name("t").partitions[pid]


@pytest.mark.parametrize("release", ["3.9.2", "4.4.0"])
def test_reassign_list_complete_cancel_and_replay(tmp_path, release):
    record = tmp_path / "session.toml"
    with kraftsim.serve(controllers=1, brokers=4, release=release, record=record) as k:
        bs = k.address(2)
        made = _call(bs, "CreateTopics", 7, {"Topics": [{"Name": "t", "NumPartitions": 2, "ReplicationFactor": 3}],
                                             "timeoutMs": 30000})
        assert made["Topics"][0]["ErrorCode"] == 0
        before = k.call(lambda s: _partition(s, 0).replicas)
        spare = next(b for b in (2, 3, 4, 5) if b not in before)
        bs = k.address(before[1])  # (a broker that stays up)
        target = [spare, *before[1:]]
        k.stop(spare)  # it cannot catch up: the reassignment stays in progress while it is down
        assert _alter(bs, [("t", 0, target), ("t", 1, [2, 9]), ("t", 7, [2]), ("u", 0, [2]), ("t", 1, None)]) == (0, {
            ("t", 0): (0, None),
            ("t", 1): (ERR["NO_REASSIGNMENT_IN_PROGRESS"], None),  # (Kafka leaves the default text out)
            ("t", 7): (ERR["UNKNOWN_TOPIC_OR_PARTITION"], "Unable to find partition t:7."),
            ("u", 0): (ERR["UNKNOWN_TOPIC_OR_PARTITION"], "Unable to find a topic named u.")})
        assert _ongoing(bs) == {("t", 0): ([*target, before[0]], [spare], [before[0]])}
        k.start(spare)
        k.call(lambda s: s.operate("run", {"ms": 30_000}))  # (it registers, is unfenced, catches up)
        assert _ongoing(bs) == {}
        p = k.call(lambda s: _partition(s, 0))
        assert (list(p.replicas), sorted(p.isr)) == (target, sorted(target))
        # a second one, cancelled through the controller listener while its new replica is down
        back = [before[0], *target[1:]]
        k.stop(before[0])
        assert _alter(k.address(1, "controller"), [("t", 0, back)]) == (0, {("t", 0): (0, None)})
        assert _alter(k.address(1, "controller"), [("t", 0, None)]) == (0, {("t", 0): (0, None)})
        assert _ongoing(bs) == {}
        # Kafka's revert takes the adding replica out of the union (back + removed): not target's order
        assert k.call(lambda s: list(_partition(s, 0).replicas)) == [*back[1:], spare]
        k.start(before[0])
    text = record.read_text()
    assert text.count('op = "reassign-partitions"') == 3
    result = run_scenario(load_scenario(record)).result
    assert result.passed, result
    assert [s.op for s in result.steps if s.op == "reassign-partitions"] == ["reassign-partitions"] * 3


def test_replication_factor_change_refused_at_v1_when_disallowed():
    with kraftsim.serve(combined=1, brokers=2, release="4.4.0") as k:
        bs = k.address(1)
        _call(bs, "CreateTopics", 7, {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1}],
                                      "timeoutMs": 30000})
        assert _alter(bs, [("t", 0, [1, 2])], version=1, AllowReplicationFactorChange=False) == (0, {
            ("t", 0): (ERR["INVALID_REPLICATION_FACTOR"], "The replication factor is changed from 1 to 2")})
        assert _alter(bs, [("t", 0, [1, 2])], version=1) == (0, {("t", 0): (0, None)})


def test_a_request_refused_whole_carries_the_error_at_the_top_and_for_every_partition():
    with kraftsim.serve(controllers=2, brokers=1, release="4.4.0") as k:
        leader = k.call(lambda s: s.sim.leader())
        other = next(n for n in (1, 2) if n != leader)
        code, parts = _alter(k.address(other, "controller"), [("t", 0, [3]), ("t", 1, None)])
        text = f"The active controller appears to be node {leader}."
        assert code == ERR["NOT_CONTROLLER"]
        assert parts == {("t", 0): (ERR["NOT_CONTROLLER"], text), ("t", 1): (ERR["NOT_CONTROLLER"], text)}


@pytest.mark.parametrize("release, version", [("3.9.2", 0), ("4.4.0", 5)])
def test_describe_log_dirs_names_the_brokers_own_directory_and_replicas(tmp_path, release, version):
    """What the 4.2+ kafka-reassign-partitions asks before --execute (its rollback plan's log_dirs)."""
    with kraftsim.serve(combined=1, brokers=1, release=release, directory=tmp_path / "c") as k:
        made = _call(k.address(1), "CreateTopics", 5, {"Topics": [{"Name": "t", "NumPartitions": -1, "ReplicationFactor": -1,
                                                            "Assignments": [
                                                                {"PartitionIndex": 0, "BrokerIds": [1]},
                                                                {"PartitionIndex": 1, "BrokerIds": [2]},
                                                                {"PartitionIndex": 2, "BrokerIds": [1]}]}],
                                                "timeoutMs": 30000})
        assert made["Topics"][0]["ErrorCode"] == 0, made
        for node in (1, 2):
            asked = _call(k.address(node), "DescribeLogDirs", version, {"Topics": [{"Topic": "t", "Partitions": [0, 1]},
                                                                                   {"Topic": "u", "Partitions": [0]}]})
            (result,) = asked["Results"]
            assert result["ErrorCode"] == 0 and result["LogDir"] == str(tmp_path / "c" / f"node-{node}")
            assert result["Topics"] == [{"Name": "t", "Partitions": [
                {"PartitionIndex": node - 1, "PartitionSize": 0, "OffsetLag": 0, "IsFutureKey": False}]}]
            every = _call(k.address(node), "DescribeLogDirs", version, {"Topics": None})["Results"][0]["Topics"]
            assert [p["PartitionIndex"] for p in every[0]["Partitions"]] == ([0, 2] if node == 1 else [1])
