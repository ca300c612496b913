"""`kraftsim serve` carries out client-metrics subscriptions (KIP-714) as the release's nodes do:
IncrementalAlterConfigs judged by the controller's release (kraftsim.controller.client_metrics),
DescribeConfigs as the broker's release describes a subscription (held configs to 4.0, every
config with its default from 4.1), ListClientMetricsResources / ListConfigResources (key 74),
and `--record` writes each change as an `alter-client-metrics` step that replays. A selector
whose regex kraftsim cannot judge as Java does is not carried out (the connection closes)."""

from __future__ import annotations

import pytest

import kraftsim
from kraftsim.controller import error_codes
from kraftsim.javacompat import concurrent_hash_map_bin, hash_pmap_order, string_hash
from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import load_scenario
from kraftsim.sim import Simulation
from tests.wire.client import rpc

ERR = error_codes()
INCREMENTAL_ALTER_CONFIGS, ALTER_CONFIGS, DESCRIBE_CONFIGS, LIST_CONFIG_RESOURCES = 44, 33, 32, 74
CLIENT_METRICS, GROUP = 16, 32


def _alter(address: str, name: str, configs: list[tuple[str, int, str | None]]) -> tuple[int, str | None] | None:
    answer = rpc(address, INCREMENTAL_ALTER_CONFIGS, 1, {"Resources": [{
        "ResourceType": CLIENT_METRICS, "ResourceName": name,
        "Configs": [{"Name": k, "ConfigOperation": op, "Value": v} for k, op, v in configs]}], "ValidateOnly": False})
    if answer is None:
        return None
    (r,) = answer[1]["Responses"]
    return r["ErrorCode"], r["ErrorMessage"]


def _describe(address: str, name: str, **flags: bool) -> dict:
    _, body = rpc(address, DESCRIBE_CONFIGS, 4, {"Resources": [{"ResourceType": CLIENT_METRICS, "ResourceName": name,
                                                                "ConfigurationKeys": None}], **flags})
    return body["Results"][0]


def _listed(address: str, version: int = 0) -> list[str]:
    body = {"ResourceTypes": [CLIENT_METRICS]} if version else {}
    _, answer = rpc(address, LIST_CONFIG_RESOURCES, version, body)
    assert answer["ErrorCode"] == 0
    return [r["ResourceName"] for r in answer["ConfigResources"]]


@pytest.mark.parametrize("release", ["3.3.2", "3.6.2"])
def test_before_3_7_a_broker_does_not_know_the_resource_type(release):
    """Live 3.6.2 (serve-tools): an alter of a subscription is refused per resource, naming the
    type's number, and the others go through; a describe that names one is refused whole, every
    resource with the error's default text. Nothing is written."""
    malformed = ("This most likely occurs because of a request being malformed by the client library or the message "
                 "was sent to an incompatible broker. See the broker logs for more details.")
    with kraftsim.serve(combined=1, release=release) as k:
        bs = k.bootstrap_servers
        assert _alter(bs, "sub", [("interval.ms", 0, "1000")]) == (ERR["INVALID_REQUEST"], "Unknown resource type 16")
        for api in (INCREMENTAL_ALTER_CONFIGS, ALTER_CONFIGS):
            config = {"Name": "log.retention.ms", "Value": "1000",
                      **({"ConfigOperation": 0} if api == INCREMENTAL_ALTER_CONFIGS else {})}
            _, answer = rpc(bs, api, 1, {"Resources": [
                {"ResourceType": CLIENT_METRICS, "ResourceName": "sub", "Configs": [dict(config, Name="metrics")]},
                {"ResourceType": 4, "ResourceName": "", "Configs": [config]}], "ValidateOnly": False})
            assert [(r["ResourceType"], r["ErrorCode"], r["ErrorMessage"]) for r in answer["Responses"]] == [
                (CLIENT_METRICS, ERR["INVALID_REQUEST"], "Unknown resource type 16"), (4, 0, None)], api
        _, answer = rpc(bs, DESCRIBE_CONFIGS, 4, {"Resources": [
            {"ResourceType": 2, "ResourceName": "nope", "ConfigurationKeys": None},
            {"ResourceType": CLIENT_METRICS, "ResourceName": "sub", "ConfigurationKeys": None}]})
        assert [(r["ResourceType"], r["ResourceName"], r["ErrorCode"], r["ErrorMessage"], r["Configs"])
                for r in answer["Results"]] == [(2, "nope", ERR["INVALID_REQUEST"], malformed, []),
                                                (CLIENT_METRICS, "sub", ERR["INVALID_REQUEST"], malformed, [])]
        image = k.call(lambda s: s.sim.image(1))
    assert image.configs.config(CLIENT_METRICS, "sub") == {}


@pytest.mark.parametrize("release", ["3.7.2", "4.0.2", "4.4.0"])
def test_a_subscription_is_set_judged_described_listed_and_deleted(release):
    with kraftsim.serve(combined=1, release=release) as k:
        bs = k.bootstrap_servers
        assert _listed(bs) == []
        assert _alter(bs, "sub", [("metrics", 0, "org.apache.kafka.producer."), ("interval.ms", 0, "1000"),
                                  ("match", 0, "client_software_name=kafka-java")]) == (0, None)
        assert _alter(bs, "sub", [("interval.ms", 0, "50")]) == (
            ERR["INVALID_REQUEST"], "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 "
                                    "(1 hour)")
        assert _alter(bs, "sub", [("color", 0, "red")]) == (ERR["INVALID_REQUEST"],
                                                           "Unknown client metrics configuration: color")
        k.call(lambda s: s.sim.wait(2_000))
        described = _describe(bs, "sub", IncludeDocumentation=True)
        unknown = _describe(bs, "nobody")
        assert _listed(bs) == ["sub"]
        if release >= "4.1":
            assert _listed(bs, 1) == ["sub"]
        assert _alter(bs, "sub", [("metrics", 1, None), ("interval.ms", 1, None), ("match", 1, None)]) == (0, None)
        k.call(lambda s: s.sim.wait(2_000))
        assert _listed(bs) == []
    assert described["ErrorCode"] == 0
    values = {c["Name"]: (c["Value"], c["ConfigSource"]) for c in described["Configs"]}
    held = {"metrics": ("org.apache.kafka.producer.", 7), "interval.ms": ("1000", 7),
            "match": ("client_software_name=kafka-java", 7)}
    assert values == held
    if release >= "4.1":
        assert all(c["Documentation"] for c in described["Configs"])
        assert {c["Name"]: c["ConfigSource"] for c in unknown["Configs"]} == {n: 5 for n in held}  # defaults
    else:
        assert all(c["Documentation"] == "" and c["ConfigType"] == 0 for c in described["Configs"])
        assert unknown["Configs"] == [] and unknown["ErrorCode"] == 0


def test_an_empty_name_is_refused_and_a_regex_kraftsim_cannot_judge_is_not_carried_out():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        bs = k.bootstrap_servers
        refused = _describe(bs, "")
        assert (refused["ErrorCode"], refused["ErrorMessage"]) == (
            ERR["INVALID_REQUEST"], "Client metrics subscription name must not be empty")
        assert _alter(bs, "", [("metrics", 0, "a")]) == (ERR["INVALID_REQUEST"], "Subscription name can't be empty")
        assert _alter(bs, "s", [("match", 0, "client_id=[a-z]+")]) is None
        assert k.call(lambda s: s.sim.image(1).configs.config(CLIENT_METRICS, "s")) == {}


def test_list_config_resources_v1_lists_every_type_in_kafkas_order():
    """KafkaApis.handleListConfigResources (4.4.0's jar; live 4.1.2 and 4.4.0 nodes in
    tests/conformance/test_serve_vs_kafka.py): groups with configs, subscriptions, every
    registered broker as a logger and as a broker, then topics, whatever order the request names
    the types in; a type it does not list fails the request."""
    with kraftsim.serve(controllers=1, brokers=2, release="4.4.0") as k:
        bs = k.bootstrap_servers.split(",")[0]
        for name in ("orders", "b", "t1"):
            rpc(bs, 19, 7, {"Topics": [{"Name": name, "NumPartitions": 1, "ReplicationFactor": 1}]})
        _alter(bs, "sub", [("metrics", 0, "org.apache.kafka.producer.")])
        for group in ("billing", "app"):  # (bins 15 and 0: listed app first)
            answer = rpc(bs, INCREMENTAL_ALTER_CONFIGS, 1, {"Resources": [{
                "ResourceType": GROUP, "ResourceName": group,
                "Configs": [{"Name": "consumer.session.timeout.ms", "ConfigOperation": 0, "Value": "50000"}]}],
                "ValidateOnly": False})
            assert answer is not None and answer[1]["Responses"][0]["ErrorCode"] == 0

        def listed(*types: int) -> tuple[int, list[tuple[int, str]]]:
            answer = rpc(bs, LIST_CONFIG_RESOURCES, 1, {"ResourceTypes": list(types)})
            assert answer is not None
            body = answer[1]
            return body["ErrorCode"], [(r["ResourceType"], r["ResourceName"]) for r in body["ConfigResources"]]

        topics = hash_pmap_order(["b", "orders", "t1"], string_hash)
        assert listed() == (0, [(GROUP, "app"), (GROUP, "billing")] + [(CLIENT_METRICS, "sub")]
                            + [(8, "2"), (8, "3"), (4, "2"), (4, "3")] + [(2, t) for t in topics])
        assert listed(2, 4, 32) == (0, [(GROUP, "app"), (GROUP, "billing")]
                                    + [(4, "2"), (4, "3")] + [(2, t) for t in topics])
        assert listed(CLIENT_METRICS, 1) == (ERR["UNSUPPORTED_VERSION"], [])
        # groups whose order depends on when the broker learnt them (two in one bin): not carried out
        same_bin = next([a, b] for a in ("g0", "g1", "g2") for b in (f"h{i}" for i in range(40))
                        if concurrent_hash_map_bin(a) == concurrent_hash_map_bin(b))
        for group in same_bin:
            rpc(bs, INCREMENTAL_ALTER_CONFIGS, 1, {"Resources": [{
                "ResourceType": GROUP, "ResourceName": group,
                "Configs": [{"Name": "consumer.session.timeout.ms", "ConfigOperation": 0, "Value": "50000"}]}],
                "ValidateOnly": False})
        assert rpc(bs, LIST_CONFIG_RESOURCES, 1, {"ResourceTypes": [GROUP]}) is None
        assert listed(2)[0] == 0  # (the other types are listed still)


def test_a_served_session_of_subscriptions_replays_as_its_recording(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(combined=1, release="4.0.2", record=record) as k:
        bs = k.bootstrap_servers
        _alter(bs, "a", [("metrics", 0, "x."), ("interval.ms", 0, "500")])
        _alter(bs, "b", [("match", 0, "client_id=1")])
        _alter(bs, "a", [("interval.ms", 1, None)])
        _alter(bs, "b", [("interval.ms", 0, "5")])  # refused: not recorded
        held = k.call(lambda s: {n: dict(s.sim.image(1).configs.config(CLIENT_METRICS, n)) for n in ("a", "b")})
    text = record.read_text()
    assert text.count('op = "alter-client-metrics"') == 3
    result = run_scenario(load_scenario(record), keep=tmp_path / "replayed").result
    assert result.passed, result
    assert held == {"a": {"metrics": "x."}, "b": {"match": "client_id=1"}}
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        image = sim.image(1)
        assert {n: dict(image.configs.config(CLIENT_METRICS, n)) for n in ("a", "b")} == held


def test_the_legacy_alter_configs_replaces_a_subscriptions_set_and_is_recorded_so(tmp_path):
    record = tmp_path / "session.toml"
    with kraftsim.serve(combined=1, release="3.9.2", record=record) as k:
        bs = k.bootstrap_servers
        assert _alter(bs, "s", [("metrics", 0, "x."), ("interval.ms", 0, "500")]) == (0, None)

        def replace(configs: dict[str, str]) -> tuple[int, str | None]:
            _, body = rpc(bs, ALTER_CONFIGS, 1, {"Resources": [{
                "ResourceType": CLIENT_METRICS, "ResourceName": "s",
                "Configs": [{"Name": n, "Value": v} for n, v in configs.items()]}], "ValidateOnly": False})
            (r,) = body["Responses"]
            return r["ErrorCode"], r["ErrorMessage"]
        assert replace({"interval.ms": "5"})[0] == ERR["INVALID_REQUEST"]
        assert replace({"match": "client_id=a"}) == (0, None)
        held = k.call(lambda s: dict(s.sim.image(1).configs.config(CLIENT_METRICS, "s")))
    assert held == {"match": "client_id=a"}
    result = run_scenario(load_scenario(record), keep=tmp_path / "replayed").result
    assert result.passed, result
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        assert dict(sim.image(1).configs.config(CLIENT_METRICS, "s")) == held
