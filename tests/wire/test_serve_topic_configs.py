"""`kraftsim serve` describes every config of a topic as the release's node does: its own values
parsed and written back, values inherited from the node's and the cluster's dynamic broker
configs with their synonyms, the release's defaults, in the node's order; CreateTopics (v5 on)
answers the controller's view of the same, by name, with the values as given. (The release data
these rest on is checked against live nodes in tests/conformance; the whole answers against a
live node in the serve-tools conformance case.)"""

from __future__ import annotations

import pytest

import kraftsim
from kraftsim.controller import described_order, topic_config_definitions
from kraftsim.sim import Simulation
from tests.wire.client import rpc

CREATE_TOPICS, ALTER_CONFIGS, DESCRIBE_CONFIGS = 19, 44, 32
TOPIC, BROKER = 2, 4
TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, DEFAULT = 1, 2, 3, 5
ODD = {"retention.ms": "01000", "cleanup.policy": "compact , delete", "preallocate": "TRUE",
       "min.cleanable.dirty.ratio": "0.50", "compression.type": " gzip "}


def _create(address: str, name: str, configs: dict[str, str], version: int = 7, validate_only: bool = False) -> dict:
    _, body = rpc(address, CREATE_TOPICS, version, {
        "Topics": [{"Name": name, "NumPartitions": 1, "ReplicationFactor": 1,
                    "Configs": [{"Name": k, "Value": v} for k, v in configs.items()]}],
        "timeoutMs": 30000, "validateOnly": validate_only})
    assert body["Topics"][0]["ErrorCode"] == 0, body
    return body["Topics"][0]


def _describe(address: str, name: str, keys: list[str] | None = None, **flags: bool) -> list[dict]:
    _, body = rpc(address, DESCRIBE_CONFIGS, 4, {"Resources": [{"ResourceType": TOPIC, "ResourceName": name,
                                                                "ConfigurationKeys": keys}], **flags})
    return body["Results"][0]["Configs"]


def _alter_broker(address: str, broker: str, configs: dict[str, str]) -> None:
    _, body = rpc(address, ALTER_CONFIGS, 1, {"Resources": [{
        "ResourceType": BROKER, "ResourceName": broker,
        "Configs": [{"Name": k, "ConfigOperation": 0, "Value": v} for k, v in configs.items()]}], "ValidateOnly": False})
    assert body["Responses"][0]["ErrorCode"] == 0, body


@pytest.mark.parametrize("release", ["3.7.2", "4.0.2", "4.4.0"])
def test_every_config_is_described_in_the_nodes_order_with_its_own_values_parsed(release):
    with kraftsim.serve(combined=1, release=release) as k:
        created = _create(k.bootstrap_servers, "t", ODD)
        described = _describe(k.bootstrap_servers, "t", IncludeSynonyms=True)
    names = [c["Name"] for c in described]
    defined = [key.name for key in topic_config_definitions(release).keys if key.name in names]
    assert names == described_order("java" if release >= "4.2" else "scala", defined)
    assert set(defined) >= {"retention.ms", "segment.bytes", "cleanup.policy"} and len(names) == len(defined)
    own = {c["Name"]: (c["Value"], c["Synonyms"][0]) for c in described if c["ConfigSource"] == TOPIC_CONFIG}
    assert {n: v for n, (v, _) in own.items()} == {"retention.ms": "1000", "cleanup.policy": "compact,delete",
                                                   "preallocate": "true", "min.cleanable.dirty.ratio": "0.5",
                                                   "compression.type": "gzip"}
    assert all(first == {"Name": n, "Value": v, "Source": TOPIC_CONFIG} for n, (v, first) in own.items())
    # the controller answers the same configs by name, its own values as they were given
    answered = [(c["Name"], c["Value"], c["ConfigSource"]) for c in created["Configs"]]
    assert [n for n, _, _ in answered] == sorted(names)
    assert {n: v for n, v, s in answered if s == TOPIC_CONFIG} == ODD


def test_a_topic_inherits_the_nodes_dynamic_configs_over_the_clusters_and_names_them_as_synonyms():
    with kraftsim.serve(combined=1, release="4.0.2") as k:
        controller = k.address(1, "controller")
        _alter_broker(controller, "", {"log.retention.ms": "5000", "log.segment.bytes": "3000000",
                                       "log.roll.hours": "2"})
        _alter_broker(controller, "1", {"log.segment.bytes": "4000000"})
        k.call(lambda s: s.sim.wait(2_000))
        _create(k.bootstrap_servers, "t", {"segment.bytes": "2000000"})
        described = {c["Name"]: c for c in _describe(k.bootstrap_servers, "t", IncludeSynonyms=True)}
        plain = {c["Name"]: c for c in _describe(k.bootstrap_servers, "t")}
        created = {c["Name"]: c for c in _create(k.bootstrap_servers, "u", {}, validate_only=True)["Configs"]}

    def chain(name: str) -> list[tuple[str, str, int]]:
        return [(s["Name"], s["Value"], s["Source"]) for s in described[name]["Synonyms"]]
    assert (described["retention.ms"]["Value"], described["retention.ms"]["ConfigSource"]) == ("5000", DYNAMIC_DEFAULT)
    # (log.retention.hours' default follows once the chain has reached log.retention.ms)
    assert chain("retention.ms") == [("log.retention.ms", "5000", DYNAMIC_DEFAULT), ("log.retention.hours", "168", DEFAULT)]
    assert chain("segment.bytes") == [("segment.bytes", "2000000", TOPIC_CONFIG),
                                      ("log.segment.bytes", "4000000", DYNAMIC_BROKER),
                                      ("log.segment.bytes", "3000000", DYNAMIC_DEFAULT),
                                      ("log.segment.bytes", "1073741824", DEFAULT)]
    # log.roll.hours is not applied dynamically by a broker: segment.ms keeps its default there
    assert (described["segment.ms"]["Value"], described["segment.ms"]["ConfigSource"], chain("segment.ms")) == \
        ("604800000", DEFAULT, [])
    assert plain["segment.bytes"]["Synonyms"] == [] and plain["segment.bytes"]["ConfigSource"] == TOPIC_CONFIG
    # the controller (node 1) answers from its own dynamic configs and the cluster's as the metadata holds
    # them, log.roll.hours in milliseconds included
    assert [(created[n]["Value"], created[n]["ConfigSource"]) for n in ("retention.ms", "segment.bytes", "segment.ms")] == \
        [("5000", DYNAMIC_DEFAULT), ("4000000", DYNAMIC_BROKER), ("7200000", DYNAMIC_DEFAULT)]


def test_the_broker_describes_the_dynamic_configs_it_applies_and_hides_secrets():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        controller = k.address(1, "controller")
        _alter_broker(controller, "", {"log.retention.ms": "5000", "log.roll.hours": "2"})
        _alter_broker(controller, "1", {"listener.name.plaintext.ssl.key.password": "secret",
                                        "leader.replication.throttled.rate": "1000"})
        k.call(lambda s: s.sim.wait(2_000))
        _, body = rpc(k.bootstrap_servers, DESCRIBE_CONFIGS, 4, {"Resources": [
            {"ResourceType": BROKER, "ResourceName": "", "ConfigurationKeys": None},
            {"ResourceType": BROKER, "ResourceName": "1", "ConfigurationKeys": None}], "IncludeSynonyms": True})
    default, own = ({c["Name"]: c for c in r["Configs"]} for r in body["Results"])
    assert sorted(default) == ["log.retention.ms", "min.insync.replicas"]  # (log.roll.hours dropped)
    assert default["log.retention.ms"]["ConfigType"] == 5
    secret = own["listener.name.plaintext.ssl.key.password"]
    assert (secret["Value"], secret["IsSensitive"], secret["Synonyms"][0]["Value"]) == (None, True, None)
    assert own["leader.replication.throttled.rate"]["Value"] == "1000"  # (a name the broker's configs do not define)


def test_keys_documentation_and_older_versions():
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        created_v4 = _create(k.bootstrap_servers, "t", {}, version=4)
        everything = _describe(k.bootstrap_servers, "t", [])
        one = _describe(k.bootstrap_servers, "t", ["segment.bytes", "nope"], IncludeDocumentation=True)
    assert "Configs" not in created_v4 or created_v4["Configs"] == []  # (from v5 on)
    assert len(everything) == 37  # an empty list of keys asks for all of them
    assert [c["Name"] for c in one] == ["segment.bytes"]
    assert one[0]["Documentation"].startswith("This configuration controls the segment file size for the log.")
    assert all(c["Documentation"] is None for c in everything)


def test_a_config_the_rolled_release_no_longer_defines_is_described_as_sensitive(tmp_path):
    # a topic made on 3.9 with message.format.version keeps its ConfigRecord through the roll
    # to 4.0, which no longer defines the name: 4.0's broker cannot tell its type and hides it
    # (as a live 3.9.2 node restarted as 4.0.2, then 4.4.0, on its directory answers)
    d = tmp_path / "c"
    with Simulation.create(d, combined=1, release="3.9.2") as sim:
        sim.create_topics(1, 1, names=["t"], configs={"message.format.version": "3.0"})
    with kraftsim.serve(d) as k:
        k.call(lambda s: s.sim.wait(2_000))  # (the reopened broker catches up with the metadata first)
        before = {c["Name"]: c for c in _describe(k.bootstrap_servers, "t", IncludeSynonyms=True)}
    with Simulation.open(d) as sim:
        sim.roll("4.0.2")
    with kraftsim.serve(d) as k:
        k.call(lambda s: s.sim.wait(2_000))
        after = {c["Name"]: c for c in _describe(k.bootstrap_servers, "t", IncludeSynonyms=True,
                                                 IncludeDocumentation=True)}
    held = before["message.format.version"]
    assert (held["Value"], held["IsSensitive"], held["ConfigType"]) == ("3.0", False, 2)
    c = after["message.format.version"]
    assert (c["Value"], c["IsSensitive"], c["ConfigSource"], c["ConfigType"], c["Documentation"]) == \
        (None, True, TOPIC_CONFIG, 0, None)
    assert c["Synonyms"] == [{"Name": "message.format.version", "Value": None, "Source": TOPIC_CONFIG}]
    assert [n for n, e in after.items() if e["IsSensitive"]] == ["message.format.version"]
    with Simulation.open(d) as sim:
        sim.roll("4.4.0")
    with kraftsim.serve(d) as k:
        k.call(lambda s: s.sim.wait(2_000))
        later = {c["Name"] for c in _describe(k.bootstrap_servers, "t")}
    assert "message.format.version" not in later  # (4.3 on drops the record on replay)
