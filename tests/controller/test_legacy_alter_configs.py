"""The legacy AlterConfigs on the controller (what 3.x's kafka-configs sends for broker configs,
and Admin.alterConfigs): a resource's configs become the ones named. The named ones are written
as IncrementalAlterConfigs' SETs (in the order of Kafka's HashMap of names); each config held but
left out is deleted after them, in the order the controller's TimelineHashMap of the resource's
configs lists them; the same checks refuse the whole resource."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.controller.configs import (
    OP_SET, AlterableConfig, AlterConfigsResource, IncrementalAlterConfigsRequest, LegacyAlterConfigsRequest,
    incremental_alter_configs, legacy_alter_configs,
)
from kraftsim.javacompat import string_hash, string_hash_order, timeline_hash_order
from tests.controller.cluster_support import RuleCluster, to_json, types

TOPIC, BROKER = 2, 4


@pytest.fixture
def cluster() -> RuleCluster:
    c = RuleCluster("4.1-IV1", elr=False)
    c.start_brokers([1, 2])
    c.create("t", 1, 2)
    return c


def replace(c: RuleCluster, *resources: tuple[int, str, dict[str, str | None]], validate_only: bool = False):
    req = LegacyAlterConfigsRequest(tuple(AlterConfigsResource(t, n, tuple(AlterableConfig(k, OP_SET, v)
                                                                            for k, v in configs.items()))
                                          for t, n, configs in resources), validate_only)
    return c.run(legacy_alter_configs, req)


def written(r) -> list[tuple[str, str | None]]:
    return [(d["name"], d["value"]) for d in (to_json(p)["data"] for p in r.records)]


def outcomes(r) -> list[tuple[int, str | None]]:
    return [(x.error_code, x.error_message) for x in r.response.responses]


def test_a_topics_configs_become_the_ones_named_and_the_rest_are_deleted(cluster):
    r = replace(cluster, (TOPIC, "t", {"retention.ms": "100", "segment.ms": "7", "cleanup.policy": "compact"}))
    assert outcomes(r) == [(0, None)] and r.atomic
    assert written(r) == [(k, {"retention.ms": "100", "segment.ms": "7", "cleanup.policy": "compact"}[k])
                          for k in string_hash_order(["retention.ms", "segment.ms", "cleanup.policy"])]
    r = replace(cluster, (TOPIC, "t", {"retention.ms": "100", "segment.bytes": "1048576"}))
    # (an unchanged topic config writes nothing; the ones left out are deleted after the rest)
    held = list(cluster.image.configs.config(TOPIC, "t"))
    assert written(r) == [("segment.bytes", "1048576")] + [
        (k, None) for k in timeline_hash_order(["retention.ms", "segment.ms", "cleanup.policy"], string_hash)
        if k != "retention.ms"]
    assert held == ["retention.ms", "segment.bytes"]
    assert cluster.image.configs.config(TOPIC, "t") == {"retention.ms": "100", "segment.bytes": "1048576"}


def test_the_deletions_follow_the_controllers_map_not_the_order_the_configs_were_set(cluster):
    names = ["log.retention.ms", "log.flush.interval.ms", "log.cleaner.threads", "log.roll.ms", "x", "y"]
    cluster.run(incremental_alter_configs, IncrementalAlterConfigsRequest((AlterConfigsResource(
        BROKER, "", tuple(AlterableConfig(k, OP_SET, "1") for k in names)),)))
    held = list(cluster.image.configs.config(BROKER, ""))
    order = timeline_hash_order(held, string_hash)
    assert order != held and order != sorted(held)  # (the probe means something)
    r = replace(cluster, (BROKER, "", {}))
    assert written(r) == [(k, None) for k in order]
    assert cluster.image.configs.config(BROKER, "") == {}


def test_a_broker_resource_gets_a_record_for_every_config_named(cluster):
    replace(cluster, (BROKER, "1", {"log.cleaner.threads": "2"}))
    r = replace(cluster, (BROKER, "1", {"log.cleaner.threads": "2", "log.retention.ms": None}))
    # KAFKA-14136: brokers reload on every record, even an unchanged value or a null never set
    assert written(r) == [(k, {"log.cleaner.threads": "2", "log.retention.ms": None}[k])
                          for k in string_hash_order(["log.cleaner.threads", "log.retention.ms"])]


def test_the_checks_refuse_a_whole_resource_and_validate_only_writes_nothing(cluster):
    replace(cluster, (TOPIC, "t", {"retention.ms": "100"}))
    r = replace(cluster, (TOPIC, "t", {"retention.ms": "soon"}), (TOPIC, "nope", {"retention.ms": "1"}),
                (BROKER, "9", {"k": "v"}), (BROKER, "", {"k": "v"}))
    assert outcomes(r) == [(40, "Invalid value soon for configuration retention.ms: Not a number of type LONG"),
                           (3, "The topic 'nope' does not exist."), (102, "No node with id 9 found."), (0, None)]
    assert types(r) == [("ConfigRecord", 0)]
    assert cluster.image.configs.config(TOPIC, "t") == {"retention.ms": "100"}
    r = replace(cluster, (TOPIC, "t", {}), validate_only=True)
    assert outcomes(r) == [(0, None)] and r.records == ()
    assert cluster.image.configs.config(TOPIC, "t") == {"retention.ms": "100"}


def test_elr_refuses_leaving_out_the_cluster_min_insync_replicas():
    c = RuleCluster("4.1-IV1", elr=True, min_insync_replicas=1)
    c.start_brokers([1])
    c.create("t", 1, 1)
    assert c.image.configs.config(BROKER, "").get("min.insync.replicas") == "1"
    r = replace(c, (BROKER, "", {"log.retention.ms": "1"}))
    assert outcomes(r) == [(40, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")]
    r = replace(c, (BROKER, "", {"min.insync.replicas": "2"}))
    assert types(r) == [("ConfigRecord", 0), ("ClearElrRecord", 0)]


KEYS = ["log.retention.ms", "log.flush.interval.ms", "log.cleaner.threads", "log.roll.ms", "x.y", "a", "bb", "c.d.e"]


@settings(max_examples=60, deadline=None)
@given(held=st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["1", "2"]), max_size=6),
       named=st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["1", "3", None]), max_size=6))
def test_a_resource_ends_with_exactly_the_configs_named_and_every_record_says_so(held, named):
    c = RuleCluster("4.1-IV1", elr=False)
    c.start_brokers([1])
    if held:
        replace(c, (BROKER, "", held))
    r = replace(c, (BROKER, "", named))
    assert outcomes(r) == [(0, None)]
    assert dict(c.image.configs.config(BROKER, "")) == {k: v for k, v in named.items() if v is not None}
    records = written(r)
    assert len({k for k, _ in records}) == len(records)  # one record per config at most
    assert {k for k, _ in records} == set(named) | set(held)  # a broker's: every name, every one left out
