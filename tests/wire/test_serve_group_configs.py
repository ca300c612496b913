"""`kraftsim serve` carries out a group's configs (KIP-848, 4.0 on) as the release's nodes do:
IncrementalAlterConfigs and AlterConfigs judged by the controller's release
(kraftsim.controller.group_configs), DescribeConfigs as a 4.0 to 4.2 broker describes a group,
and `--record` writes each change as an `alter-group-config` step that replays. What kraftsim
cannot judge or describe as Kafka does is not carried out (the connection closes)."""

from __future__ import annotations

import pytest

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import load_scenario
from kraftsim.sim import Simulation
from tests.wire.client import rpc

ERR = error_codes()
INCREMENTAL_ALTER_CONFIGS, ALTER_CONFIGS, DESCRIBE_CONFIGS = 44, 33, 32
GROUP = 32


def _alter(address: str, group: str, configs: list[tuple[str, int, str | None]], *,
           legacy: bool = False) -> tuple[int, str | None] | None:
    configs_body = [{"Name": k, "Value": v} if legacy else {"Name": k, "ConfigOperation": op, "Value": v}
                    for k, op, v in configs]
    answer = rpc(address, ALTER_CONFIGS if legacy else INCREMENTAL_ALTER_CONFIGS, 1, {"Resources": [{
        "ResourceType": GROUP, "ResourceName": group, "Configs": configs_body}], "ValidateOnly": False})
    if answer is None:
        return None
    (r,) = answer[1]["Responses"]
    return r["ErrorCode"], r["ErrorMessage"]


def _describe(address: str, group: str, **flags: bool) -> dict | None:
    answer = rpc(address, DESCRIBE_CONFIGS, 4, {"Resources": [{"ResourceType": GROUP, "ResourceName": group,
                                                                "ConfigurationKeys": None}], **flags})
    return None if answer is None else answer[1]["Results"][0]


@pytest.mark.parametrize("release,bound", [
    ("4.0.2", "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
    ("4.4.0", "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
])
def test_a_group_config_is_set_judged_and_deleted(release, bound):
    with kraftsim.serve(combined=1, release=release) as k:
        bs = k.bootstrap_servers
        assert _alter(bs, "app", [("consumer.session.timeout.ms", 0, "50000")]) == (0, None)
        assert _alter(bs, "app", [("consumer.session.timeout.ms", 0, "1")]) == (ERR["INVALID_CONFIG"], bound)
        assert _alter(bs, "app", [("color", 0, "red")]) == (ERR["INVALID_CONFIG"], "Unknown group config name: color")
        assert _alter(bs, "app", [("share.auto.offset.reset", 0, "earliest")]) is None  # (not carried out)
        k.call(lambda s: s.sim.wait(2_000))
        held = k.call(lambda s: dict(s.sim.image(1).configs.config(GROUP, "app")))
        described = _describe(bs, "app", IncludeSynonyms=True)
    assert held == {"consumer.session.timeout.ms": "50000"}
    if release == "4.0.2":
        assert described is not None and described["ErrorCode"] == 0
        values = {c["Name"]: (c["Value"], c["ConfigSource"]) for c in described["Configs"]}
        assert values["consumer.session.timeout.ms"] == ("50000", 8)  # GROUP_CONFIG
        assert values["consumer.heartbeat.interval.ms"] == ("5000", 5)  # DEFAULT_CONFIG
        assert len(values) == 6
    else:
        assert described is None  # (4.3 on describe broker synonyms too: not carried out)


def test_before_4_0_the_type_is_unknown_and_an_empty_group_name_is_refused():
    with kraftsim.serve(combined=1, release="3.9.2") as k:
        assert _alter(k.bootstrap_servers, "app", [("consumer.session.timeout.ms", 0, "50000")]) == (
            ERR["INVALID_REQUEST"], "Unknown resource type UNKNOWN")
    with kraftsim.serve(combined=1, release="4.0.2") as k:
        refused = _describe(k.bootstrap_servers, "")
        assert refused is not None
        assert (refused["ErrorCode"], refused["ErrorMessage"]) == (ERR["INVALID_REQUEST"], "Group name must not be empty")


def test_a_served_session_of_group_configs_replays_as_its_recording(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(combined=1, release="4.0.2", record=record) as k:
        bs = k.bootstrap_servers
        _alter(bs, "a", [("consumer.session.timeout.ms", 0, "50000"), ("share.session.timeout.ms", 0, "55000")])
        _alter(bs, "b", [("consumer.heartbeat.interval.ms", 0, "6000")], legacy=True)
        _alter(bs, "a", [("share.session.timeout.ms", 1, None)])
        _alter(bs, "b", [("consumer.heartbeat.interval.ms", 0, "1")])  # refused: not recorded
        held = k.call(lambda s: {n: dict(s.sim.image(1).configs.config(GROUP, n)) for n in ("a", "b")})
    assert record.read_text().count('op = "alter-group-config"') == 3
    result = run_scenario(load_scenario(record), keep=tmp_path / "replayed").result
    assert result.passed, result
    assert held == {"a": {"consumer.session.timeout.ms": "50000"}, "b": {"consumer.heartbeat.interval.ms": "6000"}}
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        image = sim.image(1)
        assert {n: dict(image.configs.config(GROUP, n)) for n in ("a", "b")} == held
