"""A scenario file kraftsim writes (a served session's recording, a state machine's reproducer)
replays even when it goes past the default `[limits]`: it carries the limits it needs."""

from __future__ import annotations

import pytest

from kraftsim.scenario.errors import ScenarioInvalid
from kraftsim.scenario.validate import parse_scenario
from kraftsim.testing.steps import ClusterShape, Step, scenario_text

SHAPE = ClusterShape(controllers=1, brokers=1, release="3.9")


def _text(steps: list[Step]) -> str:
    return scenario_text(name="recorded", shape=SHAPE, steps=steps, seed=0, policy="kafka")


def test_a_long_session_carries_the_limits_it_needs() -> None:
    steps = [Step("run", {"ms": 5_000_000})] + [Step("run", {"ms": 10}) for _ in range(1_200)]
    text = _text(steps)
    assert "[limits]\nstep_ms = 5000000\nsteps = 1201\n" in text
    scenario = parse_scenario(text, "recorded.toml")
    assert len(scenario.steps) == 1_201
    # without either line the file is refused, so the table is what makes it replay
    for line, key in (("step_ms = 5000000\n", "step_ms"), ("steps = 1201\n", "steps")):
        with pytest.raises(ScenarioInvalid, match=rf"the limit is \[limits\] {key};"):
            parse_scenario(text.replace(line, ""), "recorded.toml")


def test_a_file_within_the_defaults_has_no_limits_table() -> None:
    text = _text([Step("run", {"ms": 1_000}), Step("create-topics", {"count": 3, "partitions": 2})])
    assert "[limits]" not in text
    parse_scenario(text, "small.toml")


def test_named_topics_are_counted_as_the_validator_counts_them() -> None:
    """A served session records its topics by name: their number (not `count`, absent) is what
    the file's `[limits]` must allow, as the validator now counts `names`."""
    steps = [Step("create-topics", {"names": [f"{p}{i}" for i in range(6)], "partitions": 1_000_000,
                                    "replication_factor": 1}) for p in "ab"]
    text = _text(steps)
    assert "[limits]\npartitions = 12000000\n" in text
    assert len(parse_scenario(text, "recorded.toml").steps) == 2
