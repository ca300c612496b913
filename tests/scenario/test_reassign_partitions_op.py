"""The `reassign-partitions` op as kafka-reassign-partitions runs it: a plan naming a partition
twice is refused as the tool refuses it, and `allow_replication_factor_change = false`
(--disallow-replication-factor-change, KIP-860) is taken only where Kafka's tool and active
controller have it (4.1 on); before, it was sent and silently ignored."""

from __future__ import annotations

import pytest

from kraftsim.scenario.runner import run_scenario
from kraftsim.scenario.validate import ScenarioInvalid, parse_scenario
from kraftsim.sim.tools.reassign_partitions import NO_DISALLOW_OPTION, NO_V1_TEXT


def _text(cluster: str, plan: str, disallow: bool = False) -> str:
    return f"""
name = "reassign"
[cluster]
controllers = 1
brokers = 3
{cluster}

[[step]]
op = "create-topics"
names = ["o"]
partitions = 1
replication_factor = 2

[[step]]
op = "reassign-partitions"
partitions = {plan}
{"allow_replication_factor_change = false" if disallow else ""}
"""


def test_a_plan_naming_a_partition_twice_is_refused_as_the_tool_refuses_it() -> None:
    plan = "[{ topic = 'o', partition = 0, replicas = [2, 3] }, { topic = 'o', partition = 0, replicas = [3, 4] }]"
    with pytest.raises(ScenarioInvalid, match=r"step 2: key `partitions\[1\]`: Partition reassignment contains "
                                              r"duplicate topic partitions: o-0"):
        parse_scenario(_text('release = "4.1.2"', plan), "r.toml")


@pytest.mark.parametrize("cluster, error", [
    # 4.1: the controller checks the target's size
    ('release = "4.1.2"', "Error reassigning partition(s):\no-0: The replication factor is changed from 2 to 3"),
    # 3.7's tool has no such option
    ('release = "3.7.0"', NO_DISALLOW_OPTION),
    # a broker rolled to 4.1 first (the operator's tool is 4.1's), the controller still 4.0
    ('release = "4.0.2"\nreleases = { "4" = "4.1.2" }', f"Error reassigning partition(s):\no-0: {NO_V1_TEXT}"),
])
def test_disallowing_a_replication_factor_change_needs_4_1_on_both_sides(cluster: str, error: str) -> None:
    plan = "[{ topic = 'o', partition = 0, replicas = [2, 3, 4] }]"
    steps = run_scenario(parse_scenario(_text(cluster, plan, disallow=True), "r.toml")).result.steps
    assert (steps[1].ok, steps[1].error) == (False, error)
    allowed = run_scenario(parse_scenario(_text(cluster, plan), "r.toml")).result.steps
    assert allowed[1].ok and allowed[1].output == ["Successfully started partition reassignment for o-0"]
