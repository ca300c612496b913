"""The `alter-group-config` op (kafka-configs --alter --entity-type groups): a group's configs
judged as the controller's release judges them, its refusals with Kafka's texts, what kraftsim
cannot judge refused as such, and the step checked before running."""

from __future__ import annotations

import pytest

from kraftsim.scenario import ScenarioInvalid
from kraftsim.scenario.runner import run_text
from kraftsim.scenario.validate import parse_scenario
from tests.scenario.helpers import scenario_text

BODY = """
[[step]]
op = "alter-group-config"
group = "orders-app"
configs = { "consumer.session.timeout.ms" = "50000" }

[[step]]
op = "alter-group-config"
group = "orders-app"
configs = { "consumer.session.timeout.ms" = "1" }
expect_error = "{bound}"

[[step]]
op = "alter-group-config"
group = "orders-app"
configs = { "share.auto.offset.reset" = "earliest" }
expect_error = "kraftsim does not model"

[[step]]
op = "alter-group-config"
group = "orders-app"
delete = ["consumer.session.timeout.ms"]
"""


@pytest.mark.parametrize("release,bound", [
    ("4.0.2", "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
    ("4.4.0", "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
])
def test_a_group_config_is_set_refused_and_deleted(release: str, bound: str) -> None:
    outcome = run_text(scenario_text(BODY.replace("{bound}", bound), release=release))
    assert outcome.result.passed, [s for s in outcome.result.steps if not s.ok]
    assert outcome.result.steps[0].output == ["Completed updating config for group orders-app."]


def test_before_4_0_the_group_type_is_unknown() -> None:
    body = BODY.split("[[step]]")[1]
    text = scenario_text('[[step]]' + body + 'expect_error = "Unknown resource type UNKNOWN"\n', release="3.9.2")
    outcome = run_text(text)
    assert outcome.result.passed, [s for s in outcome.result.steps if not s.ok]


def test_the_step_needs_configs_to_set_or_delete() -> None:
    with pytest.raises(ScenarioInvalid) as exc:
        parse_scenario(scenario_text('[[step]]\nop = "alter-group-config"\ngroup = "g"\n', release="4.0.2"), "<t>")
    assert "configs" in str(exc.value)
