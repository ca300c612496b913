"""`kraftsim serve` carries out ElectLeaders (kafka-leader-election) as a broker forwards it and
the active controller answers it: per partition Kafka's codes and texts, a request refused whole
answered as Kafka's error response is, and what was elected recorded so that the session
replays."""

from __future__ import annotations

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import load_scenario
from tests.wire.client import rpc

ERR = error_codes()
CREATE_TOPICS, ELECT_LEADERS = 19, 43


def _partition(served, topic: str, pid: int):
    return served.sim.image(served.sim.leader()).topics.get_topic_by_name(topic).partitions[pid]


def _elect(address: str, election_type: int, partitions: dict[str, list[int]] | None, version: int = 2):
    asked = None if partitions is None else [{"Topic": t, "Partitions": ids} for t, ids in partitions.items()]
    _, body = rpc(address, ELECT_LEADERS, version, {"ElectionType": election_type, "TopicPartitions": asked,
                                                    "TimeoutMs": 30000})
    return body.get("ErrorCode"), {(t["Topic"], p["PartitionId"]): (p["ErrorCode"], p["ErrorMessage"])
                                   for t in body["ReplicaElectionResults"] for p in t["PartitionResult"]}


def test_preferred_and_unclean_elections_answer_as_kafkas_controller_and_replay(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(controllers=1, brokers=3, release="3.9.2", record=record) as k:
        bs = k.address(2)
        _, made = rpc(bs, CREATE_TOPICS, 7, {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 2}],
                                             "timeoutMs": 30000})
        assert made["Topics"][0]["ErrorCode"] == 0
        first, second = k.call(lambda s: _partition(s, "t", 0).replicas)
        assert _elect(bs, 0, {"t": [0, 5], "nope": [0]}) == (0, {
            ("t", 0): (ERR["ELECTION_NOT_NEEDED"], "Leader election not needed for topic partition."),
            ("t", 5): (ERR["UNKNOWN_TOPIC_OR_PARTITION"], "No such partition as t-5"),
            ("nope", 0): (ERR["UNKNOWN_TOPIC_OR_PARTITION"], "No such topic as nope")})
        assert _elect(bs, 0, None) == (0, {})  # every partition: only those that needed an election
        # both replicas go, the first one last; the second comes back, outside the ISR: no leader
        for node in (second, first):
            k.crash(node)
            k.call(lambda s: s.operate("run", {"ms": 20_000}))
        k.start(second)
        k.call(lambda s: s.operate("run", {"ms": 20_000}))
        live = k.address(second)
        assert k.call(lambda s: _partition(s, "t", 0).leader) == -1
        assert _elect(live, 0, {"t": [0]}) == (0, {("t", 0): (ERR["PREFERRED_LEADER_NOT_AVAILABLE"],
                                                             "The preferred leader was not available.")})
        assert _elect(live, 1, {"t": [0]}) == (0, {("t", 0): (0, None)})
        assert k.call(lambda s: (_partition(s, "t", 0).leader, _partition(s, "t", 0).isr)) == (second, (second,))
        assert _elect(live, 1, None) == (0, {})
    text = record.read_text()
    assert text.count('op = "elect-leaders"') == 1 and 'election_type = "unclean"' in text
    result = run_scenario(load_scenario(record)).result
    assert result.passed, result
    assert [s.op for s in result.steps if s.op not in ("run", "crash", "start")] == ["create-topics", "elect-leaders"]


def test_a_request_refused_whole_carries_the_error_at_the_top_and_for_every_partition():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        for role in ("broker", "controller"):
            assert _elect(k.address(1, role), 7, {"t": [0, 1]}) == (ERR["INVALID_REQUEST"], {
                ("t", 0): (ERR["INVALID_REQUEST"], "Unknown election type 7"),
                ("t", 1): (ERR["INVALID_REQUEST"], "Unknown election type 7")})
        assert _elect(k.address(1), 0, None, version=0) == (0, {})  # v0 (no top-level error code) is answered too


def test_a_request_naming_more_partitions_than_kraftsim_bounds_is_closed_and_said_once(capsys):
    """Kafka's bound is its frame size (25 million ids); kraftsim's is MAX_ELECTION_PARTITIONS."""
    from kraftsim.controller import MAX_ELECTION_PARTITIONS

    with kraftsim.serve(combined=1, release="4.4.0") as k:
        capsys.readouterr()
        body = {"ElectionType": 0, "TopicPartitions": [{"Topic": "a", "Partitions": [0]},
                                                       {"Topic": "b", "Partitions": list(range(MAX_ELECTION_PARTITIONS))}],
                "TimeoutMs": 30000}
        assert rpc(k.address(1), ELECT_LEADERS, 2, body) is None
        assert _elect(k.address(1), 0, {"a": [0]}) == (0, {("a", 0): (ERR["UNKNOWN_TOPIC_OR_PARTITION"],
                                                                       "No such topic as a")})  # served still
    assert ("ElectLeaders naming more than 1,000,000 partitions is not carried out by kraftsim serve"
            in capsys.readouterr().err)
