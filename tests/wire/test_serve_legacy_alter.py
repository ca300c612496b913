"""`kraftsim serve` carries out the legacy AlterConfigs (API key 33: what 3.x's kafka-configs
sends for broker configs, and Admin.alterConfigs) as Kafka's broker and controller listeners
answer it: a resource's configs become the ones named; a broker first checks the request
(nulls, repeated keys and resources), a controller listener takes a null as a deletion; broker
configs other than replication throttle rates are carried out through a controller listener
only. Each change is recorded with the configs it left out as deleted, so the recording
replays to the same configs."""

from __future__ import annotations

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import load_scenario
from kraftsim.sim import Simulation
from tests.wire.client import rpc

ERR = error_codes()
CREATE_TOPICS, LEGACY_ALTER_CONFIGS = 19, 33
TOPIC, BROKER = 2, 4


def _configs(served, rtype: int, name: str):
    return served.sim.image(served.sim.leader()).configs.config(rtype, name)


def _topic(address: str, name: str) -> None:
    _, body = rpc(address, CREATE_TOPICS, 7, {"Topics": [{"Name": name, "NumPartitions": 1, "ReplicationFactor": 1}],
                                              "timeoutMs": 30000})
    assert body["Topics"][0]["ErrorCode"] == 0


def _replace(address: str, *resources: tuple[str, dict[str, str | None]], resource_type: int = TOPIC,
             version: int = 2, validate_only: bool = False):
    body = {"Resources": [{"ResourceType": resource_type, "ResourceName": name,
                           "Configs": [{"Name": k, "Value": v} for k, v in configs.items()]}
                          for name, configs in resources], "ValidateOnly": validate_only}
    answer = rpc(address, LEGACY_ALTER_CONFIGS, version, body)
    assert answer is not None
    return [(r["ResourceName"], r["ErrorCode"], r["ErrorMessage"]) for r in answer[1]["Responses"]]


def test_a_topics_configs_are_replaced_and_the_broker_checks_the_request_first():
    with kraftsim.serve(combined=1, release="3.9.2") as k:
        bs = k.address(1)
        _topic(bs, "t")
        assert _replace(bs, ("t", {"retention.ms": "1000", "cleanup.policy": "compact"})) == [("t", 0, None)]
        assert _replace(bs, ("t", {"retention.ms": "2000"}), version=0) == [("t", 0, None)]
        assert k.call(lambda s: _configs(s, TOPIC, "t")) == {"retention.ms": "2000"}
        assert _replace(bs, ("t", {"retention.ms": "soon"})) == [
            ("t", ERR["INVALID_CONFIG"], "Invalid value soon for configuration retention.ms: Not a number of type LONG")]
        # the broker's own checks (ConfigAdminManager.preprocess): no operations, so every null is refused
        assert _replace(bs, ("t", {"retention.ms": None, "segment.ms": None})) == [
            ("t", ERR["INVALID_REQUEST"], "Null value not supported for : retention.ms, segment.ms")]
        assert _replace(bs, ("t", {"retention.ms": "5"}), ("t", {})) == [
            ("t", ERR["INVALID_REQUEST"], "Each resource must appear at most once.")] * 2
        assert _replace(bs, ("t", {}), validate_only=True) == [("t", 0, None)]
        assert k.call(lambda s: _configs(s, TOPIC, "t")) == {"retention.ms": "2000"}
        # a controller listener takes a null as the config's deletion, and answers a repeated name once
        ctl = k.address(1, "controller")
        assert _replace(ctl, ("t", {"retention.ms": "5"}), ("t", {})) == [
            ("t", ERR["INVALID_REQUEST"], "Duplicate resource.")]
        assert _replace(ctl, ("t", {"retention.ms": None, "segment.ms": "9"})) == [("t", 0, None)]
        assert k.call(lambda s: _configs(s, TOPIC, "t")) == {"segment.ms": "9"}


def test_broker_configs_are_replaced_through_a_controller_and_checked_by_a_broker_first(capsys):
    with kraftsim.serve(controllers=1, brokers=1, release="3.7.2") as k:
        ctl = k.address(1, "controller")
        assert _replace(ctl, ("", {"log.retention.ms": "60000", "log.flush.interval.ms": "1000"}),
                        resource_type=BROKER) == [("", 0, None)]
        assert _replace(ctl, ("", {"log.retention.ms": "60000"}), resource_type=BROKER) == [("", 0, None)]
        assert k.call(lambda s: _configs(s, BROKER, "")) == {"log.retention.ms": "60000"}
        assert _replace(ctl, ("9", {"log.cleaner.threads": "2"}), resource_type=BROKER) == [
            ("9", ERR["BROKER_ID_NOT_REGISTERED"], "No node with id 9 found.")]
        # through a broker: its checks first (the request's configs alone), then the controller
        b2 = k.address(2)
        assert _replace(b2, ("2", {"log.cleaner.threads": "2"}), resource_type=BROKER) == [("2", 0, None)]
        assert _replace(b2, ("2", {"log.cleaner.threads": "2", "log.dirs": "/x"}), resource_type=BROKER) == [
            ("2", ERR["INVALID_REQUEST"], "Cannot update these configs dynamically: Set(log.dirs)")]
        assert k.call(lambda s: _configs(s, BROKER, "2")) == {"log.cleaner.threads": "2"}
        capsys.readouterr()
        body = {"Resources": [{"ResourceType": BROKER, "ResourceName": "2",
                               "Configs": [{"Name": "max.connections", "Value": "5000"}]}], "ValidateOnly": False}
        assert rpc(b2, LEGACY_ALTER_CONFIGS, 2, body) is None  # (the connection quotas' reconfiguration is not modelled)
        assert k.call(lambda s: _configs(s, BROKER, "2")) == {"log.cleaner.threads": "2"}
        err = capsys.readouterr().err
    assert "AlterConfigs of BROKER configs through a broker listener: a change of max.connections" in err
    assert "is not carried out" in err


def test_a_served_session_of_legacy_alters_replays_as_its_recording(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(combined=1, release="3.9.2", record=record) as k:
        _topic(k.address(1), "t")
        _replace(k.address(1), ("t", {"retention.ms": "9", "cleanup.policy": "compact"}))
        _replace(k.address(1), ("t", {"cleanup.policy": "compact"}))
        ctl = k.address(1, "controller")
        _replace(ctl, ("", {"log.retention.ms": "60000", "log.roll.ms": "5"}), resource_type=BROKER)
        _replace(ctl, ("", {"log.roll.ms": "6"}), resource_type=BROKER)
        served_configs = k.call(lambda s: (_configs(s, TOPIC, "t"), _configs(s, BROKER, "")))
    assert served_configs == ({"cleanup.policy": "compact"}, {"log.roll.ms": "6"})
    text = record.read_text()
    assert text.count('delete = ["retention.ms"]') == 1 and text.count('delete = ["log.retention.ms"]') == 1, text
    result = run_scenario(load_scenario(record), keep=tmp_path / "replayed").result
    assert result.passed, result
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        image = sim.image(1)
        assert (image.configs.config(TOPIC, "t"), image.configs.config(BROKER, "")) == served_configs
