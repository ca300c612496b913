"""`kraftsim serve` carries out CreatePartitions (kafka-topics --alter --partitions) and
IncrementalAlterConfigs on topics (kafka-configs --alter), as a broker and a controller
listener of the release answer them, and on brokers through a controller listener (where
Kafka's controller checks only the broker's id); a broker config change through a broker
closes the connection and is said once on stderr (the broker-side checks of broker configs
are not modelled)."""

from __future__ import annotations

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import load_scenario
from kraftsim.sim import Simulation
from tests.wire.client import rpc

ERR = error_codes()
#: ConfigSource of a broker's dynamic configs: its own (2) and the cluster default's (3).
DYNAMIC_SOURCES = (2, 3)
CREATE_TOPICS, CREATE_PARTITIONS, ALTER_CONFIGS, DESCRIBE_CONFIGS = 19, 37, 44, 32
TOPIC, BROKER = 2, 4


def _image(served):
    """The active controller's image."""
    return served.sim.image(served.sim.leader())


def _topic(address: str, name: str, partitions: int) -> None:
    _, body = rpc(address, CREATE_TOPICS, 7, {"Topics": [{"Name": name, "NumPartitions": partitions,
                                                         "ReplicationFactor": 1}], "timeoutMs": 30000})
    assert body["Topics"][0]["ErrorCode"] == 0


def _alter(address: str, *resources: tuple[str, list[tuple[str, int, str | None]]], validate_only: bool = False,
           resource_type: int = TOPIC):
    body = {"Resources": [{"ResourceType": resource_type, "ResourceName": name,
                           "Configs": [{"Name": k, "ConfigOperation": op, "Value": v} for k, op, v in configs]}
                          for name, configs in resources], "ValidateOnly": validate_only}
    answer = rpc(address, ALTER_CONFIGS, 1, body)
    assert answer is not None
    return [(r["ResourceName"], r["ErrorCode"], r["ErrorMessage"]) for r in answer[1]["Responses"]]


def test_create_partitions_grows_a_topic_and_refuses_what_kafka_refuses():
    with kraftsim.serve(combined=1, brokers=2, release="4.4.0") as k:
        _topic(k.address(1), "t", 2)
        grow = {"Topics": [{"Name": "t", "Count": 4, "Assignments": None},
                           {"Name": "nope", "Count": 2, "Assignments": None}], "TimeoutMs": 30000, "ValidateOnly": False}
        _, body = rpc(k.address(1), CREATE_PARTITIONS, 3, grow)
        assert [(r["Name"], r["ErrorCode"], r["ErrorMessage"]) for r in body["Results"]] == [
            ("t", 0, None), ("nope", ERR["UNKNOWN_TOPIC_OR_PARTITION"], None)]
        _, body = rpc(k.address(1), CREATE_PARTITIONS, 3, {**grow, "Topics": grow["Topics"][:1]})
        assert body["Results"] == [{"Name": "t", "ErrorCode": ERR["INVALID_PARTITIONS"],
                                    "ErrorMessage": "Topic already has 4 partition(s)."}]
        assert k.call(lambda s: len(_image(s).topics.get_topic_by_name("t").partitions)) == 4


def test_topic_configs_are_altered_and_judged_and_the_broker_checks_the_request_first():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        bs = k.address(1)
        _topic(bs, "t", 1)
        assert _alter(bs, ("t", [("retention.ms", 0, "1000"), ("cleanup.policy", 0, "compact")])) == [("t", 0, None)]
        assert _alter(bs, ("t", [("cleanup.policy", 2, "delete")])) == [("t", 0, None)]  # APPEND to a list
        configs = k.call(lambda s: _image(s).configs.config(2, "t"))
        assert (configs["retention.ms"], configs["cleanup.policy"]) == ("1000", "compact,delete")
        assert _alter(bs, ("t", [("retention.ms", 0, "soon")])) == [
            ("t", ERR["INVALID_CONFIG"], "Invalid value soon for configuration retention.ms: Not a number of type LONG")]
        # the broker's own checks, before anything is forwarded (ConfigAdminManager.preprocess)
        assert _alter(bs, ("t", [("retention.ms", 0, "1"), ("retention.ms", 1, None)])) == [
            ("t", ERR["INVALID_REQUEST"], "Error due to duplicate config keys")]
        assert _alter(bs, ("t", [("retention.ms", 0, None), ("segment.ms", 2, None)])) == [
            ("t", ERR["INVALID_REQUEST"], "Null value not supported for : retention.ms, segment.ms")]
        assert _alter(bs, ("t", [("retention.ms", 0, "5")]), ("t", [("segment.ms", 0, "5")])) == [
            ("t", ERR["INVALID_REQUEST"], "Each resource must appear at most once.")] * 2
        # through the controller listener: a name given again is answered once, "Duplicate resource."
        ctl = k.address(1, "controller")
        assert _alter(ctl, ("t", [("retention.ms", 0, "5")]), ("t", [("segment.ms", 0, "5")])) == [
            ("t", ERR["INVALID_REQUEST"], "Duplicate resource.")]
        assert _alter(bs, ("t", [("retention.ms", 0, "7")]), validate_only=True) == [("t", 0, None)]
        assert k.call(lambda s: _image(s).configs.config(2, "t")["retention.ms"]) == "1000"


def test_a_config_change_of_a_broker_through_a_broker_is_not_carried_out_and_said_once(capsys):
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        capsys.readouterr()
        broker = {"Resources": [{"ResourceType": BROKER, "ResourceName": "1",
                                 "Configs": [{"Name": "max.connections", "ConfigOperation": 0, "Value": "2000"}]}],
                  "ValidateOnly": False}
        for _ in range(2):
            assert rpc(k.address(1), ALTER_CONFIGS, 1, broker) is None
        assert k.call(lambda s: _image(s).configs.config(BROKER, "1")) == {}
        err = capsys.readouterr().err
    assert err.splitlines() == ["kraftsim serve: IncrementalAlterConfigs of BROKER configs through a broker listener: "
                                "a change of max.connections (its reconfiguration is not modelled) (through a "
                                "controller listener, --bootstrap-controller, they are carried out) is not "
                                "carried out by kraftsim serve: the connection that asked was closed, and the client "
                                "will retry until its timeout"]


def _described(address: str, broker: str) -> dict[str, tuple[str, int]]:
    """The dynamic configs a broker describes (what `kafka-configs --describe` without `--all` shows)."""
    _, body = rpc(address, DESCRIBE_CONFIGS, 4, {"Resources": [{"ResourceType": BROKER, "ResourceName": broker,
                                                                "ConfigurationKeys": None}],
                                                 "IncludeSynonyms": False, "IncludeDocumentation": False})
    return {c["Name"]: (c["Value"], c["ConfigSource"]) for c in body["Results"][0]["Configs"]
            if c["ConfigSource"] in DYNAMIC_SOURCES}


def test_broker_configs_through_a_controller_are_checked_as_kafkas_controller_checks_them():
    with kraftsim.serve(controllers=1, brokers=2, release="4.4.0") as k:
        ctl = k.address(1, "controller")
        brokers = dict(resource_type=BROKER)
        assert _alter(ctl, ("2", [("log.cleaner.threads", 0, "2")]), **brokers) == [("2", 0, None)]
        assert _alter(ctl, ("", [("log.retention.ms", 0, "60000")]), **brokers) == [("", 0, None)]
        # the controller checks the broker's id, not the value (the broker would: not modelled)
        assert _alter(ctl, ("3", [("log.cleaner.threads", 0, "many")]), **brokers) == [("3", 0, None)]
        assert _alter(ctl, ("x", [("log.cleaner.threads", 0, "2")]), **brokers) == [
            ("x", ERR["INVALID_REQUEST"], "Unable to parse broker name as a base 10 number.")]
        assert _alter(ctl, ("9", [("log.cleaner.threads", 0, "2")]), **brokers) == [
            ("9", ERR["BROKER_ID_NOT_REGISTERED"], "No node with id 9 found.")]
        assert _alter(ctl, (" 2", [("log.cleaner.threads", 0, "2")]), **brokers) == [  # Integer.valueOf's rules
            (" 2", ERR["INVALID_REQUEST"], "Unable to parse broker name as a base 10 number.")]
        # Kafka takes "+2" for broker 2 and writes it so; a recording could not say it: not carried out
        assert rpc(ctl, ALTER_CONFIGS, 1, {"Resources": [{"ResourceType": BROKER, "ResourceName": "+2", "Configs": [
            {"Name": "log.cleaner.threads", "ConfigOperation": 0, "Value": "2"}]}], "ValidateOnly": False}) is None
        assert _alter(ctl, ("2", [("log.cleaner.threads", 0, "4")]), validate_only=True, **brokers) == [("2", 0, None)]
        # what the brokers' images hold, as DescribeConfigs answers it (own over the cluster default;
        # min.insync.replicas is the cluster default 4.4's controller set on enabling ELR)
        defaults = {"log.retention.ms": ("60000", 3), "min.insync.replicas": ("1", 3)}
        assert _described(k.address(2), "2") == {"log.cleaner.threads": ("2", 2), **defaults}
        assert _described(k.address(2), "") == defaults
        assert _alter(ctl, ("2", [("log.cleaner.threads", 1, None)]), **brokers) == [("2", 0, None)]
        assert k.call(lambda s: _image(s).configs.config(BROKER, "2")) == {}


def test_a_served_session_of_alters_replays_as_its_recording(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(combined=1, release="3.9.2", record=record) as k:
        _topic(k.address(1), "t", 1)
        rpc(k.address(1), CREATE_PARTITIONS, 3, {"Topics": [{"Name": "t", "Count": 3, "Assignments": None}],
                                                       "TimeoutMs": 30000, "ValidateOnly": False})
        _alter(k.address(1), ("t", [("cleanup.policy", 0, "compact")]))
        _alter(k.address(1), ("t", [("cleanup.policy", 2, "delete"), ("retention.ms", 0, "9")]))
        assert _alter(k.address(1), ("t", [])) == [("t", 0, None)]  # nothing to change: not recorded
        ctl = k.address(1, "controller")
        _alter(ctl, ("", [("log.retention.ms", 0, "60000")]), resource_type=BROKER)
        _alter(ctl, ("1", [("log.cleaner.threads", 0, "3")]), resource_type=BROKER)
        _alter(ctl, ("1", [("log.cleaner.threads", 1, None)]), resource_type=BROKER)
        served_configs = k.call(lambda s: (_image(s).configs.config(BROKER, ""), _image(s).configs.config(BROKER, "1")))
    text = record.read_text()
    assert 'op = "create-partitions"' in text and 'op = "alter-topic-config"' in text
    assert '"cleanup.policy" = "compact,delete"' in text  # the append, as the value it left
    result = run_scenario(load_scenario(record), keep=tmp_path / "replayed").result
    assert result.passed, result
    assert [s.op for s in result.steps if s.op != "run"] == ["create-topics", "create-partitions",
                                                               "alter-topic-config", "alter-topic-config",
                                                               "alter-broker-config", "alter-broker-config",
                                                               "alter-broker-config"]
    assert served_configs == ({"log.retention.ms": "60000"}, {})
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        image = sim.image(1)
        assert (image.configs.config(BROKER, ""), image.configs.config(BROKER, "1")) == served_configs
