"""`kraftsim serve` carries out CreatePartitions (kafka-topics --alter --partitions) and
IncrementalAlterConfigs on topics (kafka-configs --alter), as a broker and a controller
listener of the release answer them; a config change of another resource closes the
connection and is said once on stderr (the broker-side checks of broker configs are not
modelled)."""

from __future__ import annotations

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import load_scenario
from tests.wire.client import rpc

ERR = error_codes()
CREATE_TOPICS, CREATE_PARTITIONS, ALTER_CONFIGS = 19, 37, 44


def _image(served):
    """The active controller's image."""
    return served.sim.image(served.sim.leader())


def _topic(address: str, name: str, partitions: int) -> None:
    _, body = rpc(address, CREATE_TOPICS, 7, {"Topics": [{"Name": name, "NumPartitions": partitions,
                                                         "ReplicationFactor": 1}], "timeoutMs": 30000})
    assert body["Topics"][0]["ErrorCode"] == 0


def _alter(address: str, *resources: tuple[str, list[tuple[str, int, str | None]]], validate_only: bool = False):
    body = {"Resources": [{"ResourceType": 2, "ResourceName": name,
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


def test_a_config_change_of_a_broker_is_not_carried_out_and_said_once(capsys):
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        capsys.readouterr()
        broker = {"Resources": [{"ResourceType": 4, "ResourceName": "1",
                                 "Configs": [{"Name": "log.cleaner.threads", "ConfigOperation": 0, "Value": "2"}]}],
                  "ValidateOnly": False}
        for _ in range(2):
            assert rpc(k.address(1), ALTER_CONFIGS, 1, broker) is None
        err = capsys.readouterr().err
    assert err.splitlines() == ["kraftsim serve: IncrementalAlterConfigs of BROKER configs (only topics' are) is not "
                                "carried out by kraftsim serve: the connection that asked was closed, and the client "
                                "will retry until its timeout"]


def test_a_served_session_of_alters_replays_as_its_recording(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(combined=1, release="3.9.2", record=record) as k:
        _topic(k.address(1), "t", 1)
        rpc(k.address(1), CREATE_PARTITIONS, 3, {"Topics": [{"Name": "t", "Count": 3, "Assignments": None}],
                                                       "TimeoutMs": 30000, "ValidateOnly": False})
        _alter(k.address(1), ("t", [("cleanup.policy", 0, "compact")]))
        _alter(k.address(1), ("t", [("cleanup.policy", 2, "delete"), ("retention.ms", 0, "9")]))
        assert _alter(k.address(1), ("t", [])) == [("t", 0, None)]  # nothing to change: not recorded
    text = record.read_text()
    assert 'op = "create-partitions"' in text and 'op = "alter-topic-config"' in text
    assert '"cleanup.policy" = "compact,delete"' in text  # the append, as the value it left
    result = run_scenario(load_scenario(record)).result
    assert result.passed, result
    assert [s.op for s in result.steps if s.op != "run"] == ["create-topics", "create-partitions",
                                                               "alter-topic-config", "alter-topic-config"]
