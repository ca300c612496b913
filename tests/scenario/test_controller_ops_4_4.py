"""The scenario ops for Kafka 4.3/4.4's controller operations (alter-broker-config for
cordoned.log.dirs, create-acl, unregister-controller): their MV gates with Kafka's texts,
and what a cordoned broker means for replica placement."""

from __future__ import annotations

import pytest

from kraftsim.scenario import ScenarioInvalid
from kraftsim.scenario.runner import run_text
from kraftsim.scenario.validate import parse_scenario
from tests.scenario.helpers import scenario_text

AT_4_2 = """
name = "gates"
seed = 1
[cluster]
controllers = 1
brokers = 1
release = "4.4.0"
release_version = "4.2-IV1"
"""


def test_each_operation_is_refused_below_its_metadata_version_with_kafkas_text() -> None:
    body = """
[[step]]
op = "alter-broker-config"
broker = 2
configs = { "cordoned.log.dirs" = "*" }
expect_error = "The cordoned.log.dirs configuration value cannot be set because it requires metadata.version >= 4.3-IV0"

[[step]]
op = "create-acl"
principal = "User:bob"
operation = "write"
resource_name = "t"
host = "192.168.0.0/16"
expect_error = "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher."

[[step]]
op = "unregister-controller"
id = 1
expect_error = "The current MetadataVersion is too old to support controller unregistration."

[[step]]
op = "create-topics"
replication_factor = 1
"""
    outcome = run_text(AT_4_2 + body)
    assert outcome.result.passed, [s for s in outcome.result.steps if not s.ok]
    assert [s.ok for s in outcome.result.steps] == [True] * 4


def test_a_broker_with_every_directory_cordoned_takes_no_replicas() -> None:
    body = """
[[step]]
op = "alter-broker-config"
configs = { "cordoned.log.dirs" = "*" }

[[step]]
op = "run"
ms = 5000

[[step]]
op = "create-topics"
replication_factor = 1
expect_error = "Unable to replicate the partition 1 time(s)"
"""
    outcome = run_text(scenario_text(body, release="4.4.0"))
    assert outcome.result.passed, [s for s in outcome.result.steps if not s.ok]
    assert outcome.result.steps[0].output == ["Completed updating config for default broker."]


def test_a_4_3_cluster_takes_a_cidr_host_as_a_literal_host() -> None:
    body = """
[[step]]
op = "create-acl"
principal = "User:bob"
operation = "write"
resource_name = "t"
host = "10.0.0.0/33"
"""
    outcome = run_text(scenario_text(body, release="4.3.1"))
    assert outcome.result.passed, [s for s in outcome.result.steps if not s.ok]


@pytest.mark.parametrize("step,key", [
    ('op = "alter-broker-config"\nbroker = 2\n', "configs"),
    ('op = "alter-broker-config"\nbroker = 9\nconfigs = { "a" = "b" }\n', "broker"),
    ('op = "unregister-controller"\nid = -1\n', "id"),
    ('op = "create-acl"\nprincipal = "User:a"\noperation = "read"\n', "resource_name"),
])
def test_the_new_ops_are_checked_before_running(step: str, key: str) -> None:
    with pytest.raises(ScenarioInvalid) as exc:
        parse_scenario(scenario_text("[[step]]\n" + step, release="4.4.0"), "<t>")
    assert key in str(exc.value)
