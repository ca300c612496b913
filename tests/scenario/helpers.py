"""Helpers for the scenario tests: scenarios written as TOML text, run in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kraftsim.scenario import Scenario
from kraftsim.scenario.results import result_json
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


def check_shipped(path: Path, load: Callable[[Path], Scenario], *, twice: bool) -> None:
    """A shipped scenario: named after its file, with its Question/Source/Answer block, passing
    (and, when `twice`, giving the same result line on a second run)."""
    scenario = load(path)
    assert scenario.name == path.stem
    h = scenario.header
    assert h.question and h.source and h.answer, "the comment block needs Question, Source and Answer"
    first = run_scenario(scenario).result
    assert first.passed, [s for s in first.steps if not s.ok] + [e for e in first.expect if not e.ok] + \
        [i for i in first.invariants if not i.ok]
    if twice:
        assert result_json(run_scenario(load(path)).result) == result_json(first)
