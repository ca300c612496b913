"""The `alter-client-metrics` op (kafka-client-metrics --alter|--delete): a subscription's configs
judged as the controller's release judges them, its refusals with Kafka's texts, and the step
checked before running."""

from __future__ import annotations

import pytest

from kraftsim.scenario import ScenarioInvalid
from kraftsim.scenario.runner import run_text
from kraftsim.scenario.validate import parse_scenario
from tests.scenario.helpers import scenario_text

BODY = """
[[step]]
op = "alter-client-metrics"
name = "sub"
configs = { metrics = "org.apache.kafka.producer.", "interval.ms" = "1000", match = "client_id=app-.*" }

[[step]]
op = "alter-client-metrics"
name = "sub"
configs = { "interval.ms" = "soon" }
expect_error = "{soon}"

[[step]]
op = "alter-client-metrics"
name = "sub"
configs = { match = "client_ip=1" }
expect_error = "Illegal client matching pattern: client_ip=1"

[[step]]
op = "alter-client-metrics"
name = "sub"
delete = ["metrics", "interval.ms", "match"]
"""


@pytest.mark.parametrize("release,soon", [
    ("3.7.2", "The server experienced an unexpected error when processing the request."),  # (3.7-3.9:
    # UNKNOWN_SERVER_ERROR without a text: the client shows the error's own)
    ("4.4.0", "Invalid value soon for configuration interval.ms: Not a number of type INT"),
])
def test_a_subscription_is_set_refused_and_deleted(release: str, soon: str) -> None:
    outcome = run_text(scenario_text(BODY.replace("{soon}", soon), release=release))
    assert outcome.result.passed, [s for s in outcome.result.steps if not s.ok]
    steps = outcome.result.steps
    assert steps[0].output == ["Altered client metrics config for sub."]
    assert steps[3].output == ["Deleted client metrics config for sub."]


def test_the_step_needs_configs_to_set_or_delete() -> None:
    with pytest.raises(ScenarioInvalid) as exc:
        parse_scenario(scenario_text('[[step]]\nop = "alter-client-metrics"\nname = "s"\n', release="3.7.2"), "<t>")
    assert "configs" in str(exc.value)
