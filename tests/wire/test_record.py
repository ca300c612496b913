"""`--record`: a served session written as a scenario file replays to the same end state."""

from __future__ import annotations

import tomllib
from pathlib import Path

from kraftsim.scenario import load_scenario
from kraftsim.scenario.runner import run_scenario
from kraftsim.sim import Simulation
from kraftsim.wire.api import serve
from tests.wire.client import rpc

MV_3_8 = {"FeatureUpdates": [{"Feature": "metadata.version", "MaxVersionLevel": 20, "UpgradeType": 1}]}


def _topics(sim: Simulation) -> dict[str, int]:
    node = next(n.id for n in sim.nodes() if n.state == "running" and "controller" in n.roles)
    image = sim.image(node)
    assert image is not None
    return {t.name: len(t.partitions) for t in image.topics.sorted_topics()}


def test_a_recorded_session_replays_to_the_same_features_topics_and_nodes(tmp_path):
    record = tmp_path / "session.toml"
    with serve(controllers=3, brokers=2, release="3.8.1", release_version="3.7-IV4", directory=tmp_path / "served",
               record=record, speed=5) as k:
        broker = k.address(4)
        assert rpc(broker, 19, 7, {"Topics": [{"Name": "a", "NumPartitions": 2, "ReplicationFactor": 2},
                                               {"Name": "b", "NumPartitions": 1, "ReplicationFactor": 1}]}) is not None
        assert rpc(broker, 57, 1, MV_3_8)[1]["ErrorCode"] == 0
        k.crash(5)
        assert rpc(broker, 20, 6, {"Topics": [{"Name": "b"}]})[1]["Responses"][0]["ErrorCode"] == 0
        k.start(5)
        k.stop(2)
        served = k.call(lambda s: (s.sim.finalized(), _topics(s.sim),
                                   [(n.id, n.release, n.state) for n in s.sim.nodes()]))
    raw = tomllib.loads(record.read_text())
    assert [s["op"] for s in raw["step"] if s["op"] != "run"] == \
        ["create-topics", "create-topics", "features-upgrade", "crash", "delete-topics", "start", "stop"]
    outcome = run_scenario(load_scenario(record), keep=tmp_path / "replayed")
    assert outcome.result.passed, [s.error for s in outcome.result.steps if not s.ok]
    final = outcome.result.final
    assert final.finalized == served[0]
    assert [(n.id, n.release, n.state) for n in final.nodes] == served[2]
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        assert _topics(sim) == served[1] == {"a": 2}


def test_unregister_broker_is_answered_and_recorded(tmp_path):
    record = tmp_path / "session.toml"
    with serve(controllers=1, brokers=2, release="4.4.0", record=record) as k:
        k.stop(3)
        assert rpc(k.address(2), 64, 0, {"BrokerId": 3})[1]["ErrorCode"] == 0
        unknown = rpc(k.address(2), 64, 0, {"BrokerId": 9})[1]
        assert unknown["ErrorCode"] == 102 and unknown["ErrorMessage"] == "Broker ID 9 is not currently registered"
        registered = k.call(lambda s: sorted(s.sim.image(1).cluster.brokers))
    assert registered == [2]
    raw = tomllib.loads(record.read_text())
    assert {"op": "unregister-broker", "id": 3} in raw["step"]
    outcome = run_scenario(load_scenario(record), keep=tmp_path / "replayed")
    assert outcome.result.passed
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        assert sorted(sim.image(1).cluster.brokers) == [2]


def test_a_directory_mid_roll_records_the_rolls_that_make_it(tmp_path):
    d = tmp_path / "c"
    with Simulation.create(d, controllers=3, brokers=1, release="3.9.1") as sim:
        sim.roll("4.0.1", [3])
    record = tmp_path / "rec.toml"
    with serve(d, record=record):
        pass
    outcome = run_scenario(load_scenario(record), keep=tmp_path / "replayed")
    assert outcome.result.passed
    assert [(n.id, n.release) for n in outcome.result.final.nodes] == \
        [(1, "3.9.1"), (2, "3.9.1"), (3, "4.0.1"), (4, "3.9.1")]


def test_a_scenario_target_with_config_acl_and_controller_steps_is_recorded_and_replays(tmp_path):
    """A scenario target's alter-broker-config, create-acl and unregister-controller steps
    (refused ones with their text) open the recording, which replays to the same configs and ACLs."""
    shipped = Path(__file__).resolve().parents[2] / "scenarios" / "kafka-4.4-controller-operations.toml"
    record = tmp_path / "session.toml"
    with serve(shipped, directory=tmp_path / "served", record=record) as k:
        k.call(lambda s: s.sim.wait(30_000))  # the reopened controller has replayed its log
        served = k.call(lambda s: _configs_and_acls(s.sim))
    raw = tomllib.loads(record.read_text())
    ops = [s["op"] for s in raw["step"]]
    assert {"alter-broker-config", "create-acl", "unregister-controller"} <= set(ops)
    assert {"op": "unregister-controller", "id": 7,
            "expect_error": "Controller ID 7 is not currently registered."} in raw["step"]
    outcome = run_scenario(load_scenario(record), keep=tmp_path / "replayed")
    assert outcome.result.passed, [s.error for s in outcome.result.steps if not s.ok]
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        assert _configs_and_acls(sim) == served
    assert served[1] == 1  # the CIDR ACL


def _configs_and_acls(sim: Simulation) -> tuple[dict[str, str], int]:
    image = sim.image(1)
    assert image is not None
    return dict(image.configs.config(4, "3")), len(image.acls.acls)


def _layouts(sim: Simulation) -> dict[str, tuple[list[tuple[int, ...]], dict[str, str]]]:
    image = sim.image(1)
    assert image is not None
    return {t.name: ([tuple(p.replicas) for _, p in t.sorted_partitions()], dict(image.configs.config(2, t.name)))
            for t in image.topics.sorted_topics()}


def test_created_topics_replay_with_their_own_configs_and_replica_assignments(tmp_path):
    """kafka-topics --create --config ... and --replica-assignment ...: the recorded steps keep
    both (before, the replay placed the replicas at random and the topic had no configs)."""
    record = tmp_path / "session.toml"
    with serve(controllers=1, brokers=3, release="4.0.2", directory=tmp_path / "served", record=record) as k:
        answer = rpc(k.address(2), 19, 7, {"Topics": [
            {"Name": "orders", "NumPartitions": 3, "ReplicationFactor": 2,
             "Configs": [{"Name": "retention.ms", "Value": "1000"}, {"Name": "cleanup.policy", "Value": "compact"}]},
            {"Name": "x2", "NumPartitions": -1, "ReplicationFactor": -1,
             "Assignments": [{"PartitionIndex": 0, "BrokerIds": [4, 2]}, {"PartitionIndex": 1, "BrokerIds": [3, 4]}]},
            {"Name": "plain", "NumPartitions": 2, "ReplicationFactor": 3},
            {"Name": "one", "NumPartitions": 1, "ReplicationFactor": 1},
            {"Name": "two", "NumPartitions": 1, "ReplicationFactor": 1}], "timeoutMs": 30000})
        assert answer is not None and [t["ErrorCode"] for t in answer[1]["Topics"]] == [0, 0, 0, 0, 0]
        served = k.call(lambda s: _layouts(s.sim))
    assert served["x2"][0] == [(4, 2), (3, 4)] and served["orders"][1] == {"retention.ms": "1000",
                                                                            "cleanup.policy": "compact"}
    steps = [s for s in tomllib.loads(record.read_text())["step"] if s["op"] == "create-topics"]
    assert {"names": ["x2"], "partitions": 2, "replication_factor": 2, "assignments": [[4, 2], [3, 4]],
            "op": "create-topics"} in steps
    outcome = run_scenario(load_scenario(record), keep=tmp_path / "replayed")
    assert outcome.result.passed, [s.error for s in outcome.result.steps if not s.ok]
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        assert _layouts(sim) == served
