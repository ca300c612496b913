"""DescribeConfigs of a served broker's own id: every config, as `kafka-configs --describe --all
--entity-type brokers --entity-name N` prints it (kraftsim.controller.broker_config_listing,
kraftsim.wire.node_properties). Checked against live nodes by tests/conformance/test_serve_vs_kafka.py;
these fail fast, with no JVM, when the listing breaks."""

from __future__ import annotations

from typing import Any

import pytest

import kraftsim
from kraftsim.conformance.broker_config_facts import READ
from kraftsim.controller.broker_config_definitions import broker_config_definitions, broker_config_docs
from kraftsim.versions import release_name_key
from tests.wire.client import rpc

DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, BROKER = 32, 44, 4
#: DescribeConfigsResponse's ConfigSource and ConfigType values.
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 2, 3, 4, 5
LONG, LIST, PASSWORD = 5, 7, 9


def _describe(address: str, name: str = "1", documentation: bool = False) -> list[dict[str, Any]] | None:
    answer = rpc(address, DESCRIBE_CONFIGS, 4, {
        "Resources": [{"ResourceType": BROKER, "ResourceName": name, "ConfigurationKeys": None}],
        "IncludeSynonyms": True, "IncludeDocumentation": documentation})
    return None if answer is None else answer[1]["Results"][0]["Configs"]


def _by_name(entries: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    assert entries is not None
    return {e["Name"]: e for e in entries}


def _synonyms(entry: dict[str, Any]) -> list[tuple[int, str, str | None]]:
    return [(s["Source"], s["Name"], s["Value"]) for s in entry["Synonyms"]]


def _set(address: str, resource: str, configs: dict[str, str]) -> None:
    answer = rpc(address, INCREMENTAL_ALTER_CONFIGS, 1, {"Resources": [{
        "ResourceType": BROKER, "ResourceName": resource,
        "Configs": [{"Name": k, "ConfigOperation": 0, "Value": v} for k, v in configs.items()]}], "ValidateOnly": False})
    assert answer is not None and [r["ErrorCode"] for r in answer[1]["Responses"]] == [0]


@pytest.mark.parametrize("release", READ)
def test_a_broker_lists_every_config_its_release_defines_internal_ones_only_before_3_5(release):
    """Live 3.3.2 and 3.4.1 (serve-tools) list the internal configs too (remote.log.*,
    metadata.log.segment.min.bytes); 3.5.2 on do not."""
    with kraftsim.serve(combined=1, release=release) as k:
        listed = _by_name(_describe(k.address(1)))
    with_internal = release_name_key(release) < (3, 5, 0)
    defined = [c.name for c in broker_config_definitions(release).kafka_configs if with_internal or not c.internal]
    assert sorted(listed) == sorted(defined)
    internal = {c.name for c in broker_config_definitions(release).kafka_configs if c.internal}
    assert internal and bool(internal & set(listed)) == with_internal


@pytest.mark.parametrize("release", ["3.7.2", "4.4.0"])
def test_static_default_and_secret_entries_are_kafkas(release):
    with kraftsim.serve(combined=1, release=release, configs={"offsets.topic.replication.factor": 1}) as k:
        broker, controller = k.address(1), k.address(1, "controller")
        entries = _describe(broker)
        listed = _by_name(entries)
    assert entries is not None and [e["Name"] for e in entries[:3]] == [  # (the node's map's order, as live nodes list it)
        "log.cleaner.min.compaction.lag.ms", "offsets.topic.num.partitions", "sasl.oauthbearer.jwks.endpoint.refresh.ms"]
    listeners = f"PLAINTEXT://{broker},CONTROLLER://{controller}"
    assert (listed["listeners"]["Value"], listed["listeners"]["ConfigSource"], listed["listeners"]["ReadOnly"]) == (
        listeners, STATIC, False)
    assert _synonyms(listed["listeners"]) == [(STATIC, "listeners", listeners), (DEFAULT, "listeners", "PLAINTEXT://:9092")]
    assert listed["process.roles"]["Value"] == "broker,controller" and listed["process.roles"]["ConfigType"] == LIST
    # KafkaConfig copies node.id into broker.id; both read-only, from server.properties
    for name in ("node.id", "broker.id"):
        assert (listed[name]["Value"], listed[name]["ConfigSource"], listed[name]["ReadOnly"]) == ("1", STATIC, True)
    assert _synonyms(listed["offsets.topic.replication.factor"]) == [
        (STATIC, "offsets.topic.replication.factor", "1"), (DEFAULT, "offsets.topic.replication.factor", "3")]
    assert listed["controller.quorum.voters"]["Value"] == f"1@{controller}"
    secret = listed["ssl.key.password"]
    assert (secret["Value"], secret["IsSensitive"], secret["ConfigType"], secret["ConfigSource"]) == (
        None, True, PASSWORD, DEFAULT)
    # a null default: no value, and no synonym (those before its own name are dropped: log.retention.hours')
    assert (listed["log.retention.ms"]["Value"], _synonyms(listed["log.retention.ms"])) == (None, [])
    assert listed["log.retention.ms"]["ConfigType"] == LONG and not listed["log.retention.ms"]["ReadOnly"]


def test_a_dynamic_value_overrides_the_static_and_default_ones_in_synonym_order():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        controller = k.address(1, "controller")
        _set(controller, "", {"log.retention.ms": "5000", "log.retention.bytes": "777"})
        _set(controller, "1", {"log.retention.ms": "7000", "leader.replication.throttled.rate": "1000"})
        listed = _by_name(_describe(k.address(1)))
        default_resource = _by_name(_describe(k.address(1), ""))
    retention = listed["log.retention.ms"]
    assert (retention["Value"], retention["ConfigSource"]) == ("7000", DYNAMIC_BROKER)
    assert _synonyms(retention) == [(DYNAMIC_BROKER, "log.retention.ms", "7000"),
                                    (DYNAMIC_DEFAULT, "log.retention.ms", "5000"),
                                    (DEFAULT, "log.retention.hours", "168")]
    assert _synonyms(listed["log.retention.bytes"]) == [(DYNAMIC_DEFAULT, "log.retention.bytes", "777"),
                                                         (DEFAULT, "log.retention.bytes", "-1")]
    throttle = listed["leader.replication.throttled.rate"]  # (a name KafkaConfig does not define, typed by the quotas)
    assert (throttle["Value"], throttle["ConfigSource"], throttle["ConfigType"]) == ("1000", DYNAMIC_BROKER, LONG)
    # the cluster default resource still lists its dynamic configs only (4.4's controller set min.insync.replicas)
    assert sorted(default_resource) == ["log.retention.bytes", "log.retention.ms", "min.insync.replicas"]
    assert _synonyms(default_resource["log.retention.ms"]) == [(DYNAMIC_DEFAULT, "log.retention.ms", "5000")]


def test_documentation_is_the_releases_for_defined_configs_only():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        _set(k.address(1, "controller"), "1", {"leader.replication.throttled.rate": "1000"})
        _set(k.address(1, "controller"), "", {"log.retention.bytes": "777"})
        listed = _by_name(_describe(k.address(1), documentation=True))
        default_resource = _by_name(_describe(k.address(1), "", documentation=True))
        undocumented = _by_name(_describe(k.address(1)))
    docs = broker_config_docs("4.4.0")
    assert listed["log.retention.bytes"]["Documentation"] == docs["log.retention.bytes"]
    assert default_resource["log.retention.bytes"]["Documentation"] == docs["log.retention.bytes"]
    assert listed["node.id"]["Documentation"].startswith("The node ID associated with the roles this process is playing")
    assert listed["leader.replication.throttled.rate"]["Documentation"] is None  # (KafkaConfig does not define it)
    assert undocumented["node.id"]["Documentation"] is None


def test_an_internal_config_is_listed_only_when_the_node_runs_with_it():
    """(KafkaConfig's originals are listed beside its non-internal values: an internal config set
    in server.properties is listed as given, with its static and default values.)"""
    with kraftsim.serve(combined=1, release="4.4.0", configs={"unstable.feature.versions.enable": True}) as k:
        listed = _by_name(_describe(k.address(1)))
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        assert "unstable.feature.versions.enable" not in _by_name(_describe(k.address(1)))
    entry = listed["unstable.feature.versions.enable"]
    assert (entry["Value"], entry["ConfigSource"], entry["ReadOnly"], entry["IsSensitive"]) == ("true", STATIC, True, False)
    assert _synonyms(entry) == [(STATIC, "unstable.feature.versions.enable", "true"),
                                (DEFAULT, "unstable.feature.versions.enable", "false")]
    assert "unstable.api.versions.enable" not in listed


@pytest.mark.parametrize("release", ["3.7.2", "4.4.0"])
def test_a_name_kafka_does_not_define_is_described_without_its_value(release):
    """(KafkaConfig.maybeSensitive: a type the broker cannot tell may be a secret; as live 3.7.2 and 4.4.0 nodes answer.)"""
    with kraftsim.serve(combined=1, release=release) as k:
        _set(k.address(1, "controller"), "", {"custom.x": "1"})
        _set(k.address(1, "controller"), "1", {"custom.y": "2"})
        listed = _by_name(_describe(k.address(1)))
        default_resource = _by_name(_describe(k.address(1), ""))
    for entry, source in ((listed["custom.x"], DYNAMIC_DEFAULT), (listed["custom.y"], DYNAMIC_BROKER),
                          (default_resource["custom.x"], DYNAMIC_DEFAULT)):
        assert (entry["Value"], entry["IsSensitive"], entry["ReadOnly"], entry["ConfigType"], entry["ConfigSource"]) == (
            None, True, True, 0, source)
        assert _synonyms(entry) == [(source, entry["Name"], None)]
