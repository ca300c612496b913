"""Helpers for the scenario tests: scenarios written as TOML text, run in-process."""

from __future__ import annotations

from pathlib import Path

from kraftsim.scenario.runner import RunOutcome, run_scenario
from kraftsim.scenario.validate import parse_scenario

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "scenarios"

#: A small cluster: controller 1, brokers 2 and 3.
SMALL = """
name = "{name}"
seed = {seed}
policy = "{policy}"
[cluster]
controllers = 1
brokers = 2
release = "{release}"
"""


def scenario_text(body: str, *, name: str = "t", seed: int = 0, policy: str = "kafka", release: str = "3.8.1",
                  head: str = SMALL) -> str:
    return head.format(name=name, seed=seed, policy=policy, release=release) + body


def run_text(body: str, **kwargs) -> RunOutcome:  # type: ignore[no-untyped-def]
    run_kwargs = {k: kwargs.pop(k) for k in ("keep",) if k in kwargs}
    return run_scenario(parse_scenario(scenario_text(body, **kwargs), "t.toml"), **run_kwargs)


def unsupported(outcome: RunOutcome) -> str | None:
    """The simulator's "not simulated yet" text, if a step met it."""
    for s in outcome.result.steps:
        if s.error and "not simulated yet" in s.error:
            return s.error
    return None
