"""A topic's configs as a node describes them (kraftsim.controller.config_descriptions):
the release data agrees with each release's config definitions, and the rules that build an
answer from it. (The data is compared with live nodes in
tests/conformance/test_config_descriptions_vs_kafka.py; whole answers through serve in
tests/wire/test_serve_topic_configs.py.)"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from kraftsim.controller import (
    created_topic_configs, describe_broker_configs, describe_topic_configs, described_order, topic_config_definitions,
)
from kraftsim.javacompat import string_hash
from kraftsim.versions import default_catalog

RELEASES = [r.name for r in default_catalog().releases]
#: Configs a release defines as internal (not described by a broker): the tiered storage ones
#: before 3.6, internal.segment.bytes from 4.1.
INTERNAL = {"local.retention.ms", "local.retention.bytes", "remote.storage.enable", "internal.segment.bytes"}
TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, DEFAULT = 1, 2, 3, 5


@pytest.mark.parametrize("release", RELEASES)
def test_every_release_describes_the_configs_it_defines_but_its_internal_ones(release):
    defined = {k.name for k in topic_config_definitions(release).keys}
    described = {c.name for c in describe_topic_configs(release, {}, {}, {})}
    created = {name for name, _, _ in created_topic_configs(release, {}, {}, {})}
    assert described <= defined and defined - described <= INTERNAL
    assert described <= created <= defined  # (3.3-3.5 controllers answer their internal ones too)
    assert all(c.source == DEFAULT and c.value is not None for c in describe_topic_configs(release, {}, {}, {}))


def test_an_own_value_is_written_back_as_parsed_and_leads_its_synonyms():
    described = {c.name: c for c in describe_topic_configs("4.0.2", {"segment.bytes": "+02000000"}, {}, {})}
    c = described["segment.bytes"]
    assert (c.value, c.source, c.config_type) == ("2000000", TOPIC_CONFIG, 3)
    assert [tuple(s) for s in c.synonyms] == [("segment.bytes", "2000000", TOPIC_CONFIG),
                                              ("log.segment.bytes", "1073741824", DEFAULT)]
    created = dict((n, (v, s)) for n, v, s in created_topic_configs("4.0.2", {"segment.bytes": "+02000000"}, {}, {}))
    assert created["segment.bytes"] == ("+02000000", TOPIC_CONFIG)  # (the controller answers it as given)


@pytest.mark.parametrize("unit, per_unit", [("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)])
def test_a_synonym_in_minutes_or_hours_counts_for_the_controller_and_not_for_a_broker(unit, per_unit):
    described = {c.name: c for c in describe_topic_configs("4.4.0", {}, {}, {unit: "3"})}
    created = {n: (v, s) for n, v, s in created_topic_configs("4.4.0", {}, {}, {unit: "3"})}
    # the controller reads every synonym the metadata holds, in milliseconds
    assert created["retention.ms"] == (str(3 * per_unit), DYNAMIC_DEFAULT)
    # a broker drops a dynamic config it does not apply dynamically: the default, no synonym named
    assert (described["retention.ms"].value, described["retention.ms"].source) == ("604800000", DEFAULT)
    assert described["retention.ms"].synonyms == ()


def test_a_topic_inherits_the_dynamic_synonym_the_node_applies():
    described = {c.name: c for c in describe_topic_configs("4.4.0", {}, {"log.retention.hours": "1"},
                                                           {"log.retention.ms": "5000"})}
    c = described["retention.ms"]
    assert (c.value, c.source) == ("5000", DYNAMIC_DEFAULT)  # (the node's own hours are dropped)
    # from the synonym's own name on, down to the broker's default in hours
    assert [tuple(s) for s in c.synonyms] == [("log.retention.ms", "5000", DYNAMIC_DEFAULT),
                                              ("log.retention.hours", "168", DEFAULT)]


@pytest.mark.parametrize("release", ["4.0.2", "4.2.2"])
def test_a_config_the_release_does_not_define_is_described_as_a_possible_secret(release):
    # (4.0 no longer defines message.format.version; a topic made on 3.x still holds it, and a
    # node that cannot tell its type hides its value: KafkaConfig.maybeSensitive. From 4.3 a
    # node drops such a ConfigRecord on replay, so it has none to describe.)
    described = {c.name: c for c in describe_topic_configs(release, {"message.format.version": "3.0-IV1"}, {}, {},
                                                           documentation=True)}
    c = described["message.format.version"]
    assert (c.value, c.source, c.config_type, c.sensitive, c.documentation) == (None, TOPIC_CONFIG, 0, True, None)
    assert [tuple(s) for s in c.synonyms] == [("message.format.version", None, TOPIC_CONFIG)]
    assert not any(d.sensitive for n, d in described.items() if n != "message.format.version")


def test_a_release_that_defines_the_config_describes_its_value():
    described = {c.name: c for c in describe_topic_configs("3.9.2", {"message.format.version": "3.0"}, {}, {})}
    c = described["message.format.version"]
    assert (c.value, c.source, c.config_type, c.sensitive) == ("3.0", TOPIC_CONFIG, 2, False)
    assert [tuple(s) for s in c.synonyms] == [("message.format.version", "3.0", TOPIC_CONFIG),
                                              ("log.message.format.version", "3.0-IV1", DEFAULT)]


@given(st.lists(st.text(alphabet="abcdefghij.", min_size=1, max_size=12), min_size=1, max_size=60, unique=True))
def test_the_scala_order_does_not_depend_on_the_order_names_were_put_in(names):
    if len({string_hash(n) for n in names}) < len(names):
        return  # (equal hashes keep the order they were put in)
    assert described_order("scala", names) == described_order("scala", sorted(names))
    assert sorted(described_order("java", names)) == sorted(names)


def test_a_nodes_own_dynamic_config_names_every_synonym_down_to_the_default():
    own = {c.name: c for c in describe_broker_configs("4.0.2", {"log.retention.bytes": "888"},
                                                       {"log.retention.bytes": "777", "log.roll.hours": "2"})}
    assert sorted(own) == ["log.retention.bytes"]  # (log.roll.hours is not applied dynamically)
    c = own["log.retention.bytes"]
    assert (c.value, c.source, c.config_type) == ("888", DYNAMIC_BROKER, 5)
    assert [tuple(s) for s in c.synonyms] == [("log.retention.bytes", "888", DYNAMIC_BROKER),
                                              ("log.retention.bytes", "777", DYNAMIC_DEFAULT),
                                              ("log.retention.bytes", "-1", DEFAULT)]
    # the cluster's default resource names only the cluster's values
    default = describe_broker_configs("4.0.2", None, {"log.retention.bytes": "777"})
    assert [(c.name, c.value, c.source, tuple(tuple(s) for s in c.synonyms)) for c in default] == \
        [("log.retention.bytes", "777", DYNAMIC_DEFAULT, (("log.retention.bytes", "777", DYNAMIC_DEFAULT),))]


def test_a_listeners_secret_is_described_as_sensitive_without_its_value():
    (c,) = describe_broker_configs("4.4.0", {"listener.name.internal.ssl.key.password": "s3cret"}, {})
    assert (c.value, c.config_type, [s.value for s in c.synonyms]) == (None, 9, [None])
    (m,) = describe_broker_configs("4.4.0", {"listener.name.sasl.scram-sha-256.sasl.jaas.config": "x"}, {})
    assert m.config_type == 9  # (a mechanism's own value: the type of sasl.jaas.config)


@pytest.mark.parametrize("release, read_only", [("4.0.2", True), ("4.4.0", False)])
def test_a_replication_quota_is_a_long_described_read_only_until_4_3(release, read_only):
    (c,) = describe_broker_configs(release, {"leader.replication.throttled.rate": "1000"}, {})
    assert (c.value, c.source, c.config_type, c.read_only) == ("1000", DYNAMIC_BROKER, 5, read_only)
