"""A state machine's counterexample file: the `[recorded_failure]` table written into it, and
the file read back as the steps a machine replays (ClusterStateMachine.replay).

The file is checked as any scenario is (kraftsim.scenario.load_scenario) before a machine
runs it; its steps are then taken as the machine wrote them (op and keys), so that they
go through the machine's own `do` and its invariants again, not through the runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kraftsim import tomlinput
from kraftsim.errors import KraftsimError
from kraftsim.scenario import TABLE, RecordedFailure, check_name, load_scenario
from kraftsim.testing.steps import Step, toml_value

#: Keys of a step the machine writes that are not the op's own.
_OUTCOME_KEYS = ("op", "expect_error", "note", "expect")


def machine_name(cls: type) -> str:
    """"module:Class", as `[recorded_failure] machine` names a machine class."""
    return f"{cls.__module__}:{cls.__qualname__}"


def same_machine(recorded: str, cls: type) -> bool:
    """Whether `recorded` names `cls`. The module may be named with or without its package
    (pytest imports a test file as `test_x` or `tests.test_x` depending on its rootdir)."""
    module, _, name = recorded.partition(":")
    own = cls.__module__
    return name == cls.__qualname__ and (module == own or module.endswith("." + own) or own.endswith("." + module))


def table_text(recorded: RecordedFailure) -> str:
    """The `[recorded_failure]` table as TOML, appended to the machine's scenario file."""
    keys = {"invariant": recorded.invariant, "rule": recorded.rule, "message": recorded.message,
            "machine": recorded.machine, "seed": recorded.seed, "cut_short": recorded.cut_short or None}
    return "\n".join([f"[{TABLE}]"] + [f"{k} = {toml_value(v)}" for k, v in keys.items() if v is not None]) + "\n"


@dataclass
class Recording:
    """What a machine needs to replay a file: the cluster it starts from and the steps."""

    path: Path
    release: str
    shape: dict[str, int | list[int]]  # controllers (a count or ids), brokers, combined, dynamic_quorum (a bool)
    policy: str
    seed: int
    steps: list[Step]
    recorded: RecordedFailure | None

    def describe(self) -> str:
        if self.recorded is None:
            return f"{self.path} (no recorded failure)"
        return f"{self.path}: {check_name(self.recorded)} of {self.recorded.machine}"


def read_recording(path: str | Path) -> Recording:
    """Read and check a scenario file a state machine wrote; KraftsimError (ScenarioInvalid)
    when it is not a valid scenario or holds a step no machine writes."""
    path = Path(path)
    scenario = load_scenario(path)
    raw = tomlinput.loads(path.read_text(encoding="utf-8"))
    steps = []
    for i, table in enumerate(raw.get("step", []), start=1):
        args = {k: v for k, v in table.items() if k not in _OUTCOME_KEYS}
        try:
            steps.append(Step(table["op"], args))
        except ValueError as e:
            raise KraftsimError(f"{path}: step {i}: not a step a state machine writes: {e}") from None
    c = scenario.cluster
    if c.from_ is not None or c.releases or c.release is None:
        raise KraftsimError(f"{path}: [cluster] is not one a state machine writes (one release, no `from`)")
    shape = {"controllers": c.controllers or 0, "brokers": c.brokers, "combined": c.combined,
             "dynamic_quorum": c.dynamic_quorum}
    return Recording(path=path, release=c.release, shape=shape, policy=scenario.policy, seed=scenario.seed,
                     steps=steps, recorded=scenario.recorded_failure)
