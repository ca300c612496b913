"""The controller's check of a group's configs (KIP-848, 4.0 on), per release (the whole table of
verdicts is compared with each release's own GroupConfig.validate in
tests/conformance/test_group_configs_vs_jars.py; these pin the release differences and the
controller's path without a JVM)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from kraftsim.controller.configs import (
    OP_SET, AlterableConfig, AlterConfigsResource, IncrementalAlterConfigsRequest,
    LegacyAlterConfigsRequest, incremental_alter_configs, legacy_alter_configs,
)
from kraftsim.controller.group_configs import group_config_check, has_group_configs
from tests.controller.cluster_support import CATALOG, RuleCluster
from tests.controller.config_changes import assert_each_change_taken_as_checked, change_batches

GROUP = 32


def verdict(release: str, configs: dict[str, str]) -> tuple[str, str | None]:
    v = group_config_check(release, configs)
    assert v.unmodelled is None
    return v.error.name, v.error.message


@pytest.mark.parametrize("release", ["4.0.2", "4.1.2", "4.4.0"])
def test_every_release_refuses_an_unknown_name_and_a_value_it_cannot_parse(release):
    assert verdict(release, {"consumer.session.timeout.ms": "50000"}) == ("NONE", None)
    assert verdict(release, {"consumer.session.timeout": "1"}) == (
        "INVALID_CONFIG", "Unknown group config name: consumer.session.timeout")
    assert verdict(release, {"consumer.heartbeat.interval.ms": "soon"}) == (
        "INVALID_CONFIG", "Invalid value soon for configuration consumer.heartbeat.interval.ms: Not a number of type INT")


def test_a_bound_is_named_to_4_3_and_given_as_a_range_from_4_4():
    assert verdict("4.0.2", {"consumer.session.timeout.ms": "1"}) == (
        "INVALID_CONFIG", "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms")
    assert verdict("4.3.1", {"share.record.lock.duration.ms": "60001"}) == (
        "INVALID_CONFIG", "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms")
    assert verdict("4.4.0", {"consumer.session.timeout.ms": "1"}) == (
        "INVALID_CONFIG", "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.")


def test_streams_configs_came_in_4_1():
    assert verdict("4.0.2", {"streams.session.timeout.ms": "50000"}) == (
        "INVALID_CONFIG", "Unknown group config name: streams.session.timeout.ms")
    assert verdict("4.1.2", {"streams.session.timeout.ms": "50000"}) == ("NONE", None)


@pytest.mark.parametrize("configs", [{"share.auto.offset.reset": "earliest"}, {"a": "1", "b": "2"},
                                     {"errors.deadletterqueue.topic.name": "dlq"}])
def test_what_kraftsim_cannot_judge_as_kafka_does_is_left_unmodelled(configs):
    assert group_config_check("4.4.0", configs).unmodelled is not None


def _alter(c: RuleCluster, group: str, *ops: AlterableConfig):
    return c.run(incremental_alter_configs, IncrementalAlterConfigsRequest((AlterConfigsResource(GROUP, group, ops),)))


def test_a_release_before_4_0_refuses_the_group_type_as_unknown():
    assert not has_group_configs("3.9.2")
    c = RuleCluster("3.9-IV0", catalog=CATALOG.at_release("3.9"))
    answer = _alter(c, "g", AlterableConfig("consumer.session.timeout.ms", OP_SET, "50000")).response.responses[0]
    assert (answer.error_code, answer.error_message) == (42, "Unknown resource type UNKNOWN")  # INVALID_REQUEST


def test_the_controller_judges_what_a_change_leaves_the_group_with():
    c = RuleCluster("4.1-IV1")
    r = _alter(c, "g", AlterableConfig("consumer.session.timeout.ms", OP_SET, "50000"))
    assert [(a.error_code, a.error_message) for a in r.response.responses] == [(0, None)]
    assert c.image.configs.config(GROUP, "g") == {"consumer.session.timeout.ms": "50000"}
    r = _alter(c, "g", AlterableConfig("consumer.heartbeat.interval.ms", OP_SET, "1"))
    assert r.response.responses[0].error_code == 40 and not r.records  # INVALID_CONFIG
    r = c.run(legacy_alter_configs, LegacyAlterConfigsRequest((AlterConfigsResource(GROUP, "g", (
        AlterableConfig("share.session.timeout.ms", OP_SET, "50000"),)),)))
    assert r.response.responses[0].error_code == 0
    assert c.image.configs.config(GROUP, "g") == {"share.session.timeout.ms": "50000"}


_VALUES = {"consumer.session.timeout.ms": ["50000", "1", "x", "60001"],
           "consumer.heartbeat.interval.ms": ["5000", "15001", "soon", "10000"],
           "share.record.lock.duration.ms": ["30000", "999", "14999", "60000"], "bogus": ["1"]}


@settings(max_examples=40, deadline=None)
@given(change_batches(_VALUES))
def test_a_group_holds_exactly_the_changes_its_release_took(batches):
    """Whatever the order of changes, the controller writes a change exactly when the check of
    what it would leave passes, and the group then holds that."""
    c = RuleCluster("4.1-IV1")
    release = c.ctx().catalog.release.name
    assert_each_change_taken_as_checked(c, GROUP, "g", batches, lambda after: group_config_check(release, after))


def test_4_0_to_4_2_describe_every_config_with_its_own_synonym_and_later_releases_are_not_described():
    from kraftsim.controller.group_configs import GROUP_CONFIG, describe_group_configs, describes_group_configs

    described = {c.name: c for c in describe_group_configs("4.1.2", {"consumer.session.timeout.ms": " 050000"},
                                                          documentation=True)}
    assert len(described) == 10 and all(c.documentation for c in described.values())
    held = described["consumer.session.timeout.ms"]
    assert (held.value, held.source, held.synonyms) == ("50000", GROUP_CONFIG, (
        ("consumer.session.timeout.ms", "50000", GROUP_CONFIG),))
    assert (described["share.heartbeat.interval.ms"].value, described["share.heartbeat.interval.ms"].source) == ("5000", 5)
    assert [c.name for c in describe_group_configs("4.0.2", {}, ["share.auto.offset.reset"])] == ["share.auto.offset.reset"]
    assert not describes_group_configs("3.9.2") and not describes_group_configs("4.3.1")


def test_a_group_must_be_named():
    answer = _alter(RuleCluster("4.1-IV1"), "", AlterableConfig("consumer.session.timeout.ms", OP_SET, "50000"))
    assert (answer.response.responses[0].error_code, answer.response.responses[0].error_message) == (
        42, "Default group resources are not allowed.")
